/**
 * HLO op categories from a program's serialized xla.HloProto, for captures whose ops do not carry an
 * `hlo_category` stat (GPU: kernels name their HLO op, and the /host:metadata plane holds each program's HLO).
 * xprof categorizes such ops with XLA's HloInstruction::ToCategory(); this applies the same rules to the
 * instruction's opcode and fusion kind.
 *
 * Field numbers from xla/service/hlo.proto: HloProto.hlo_module (1); HloModuleProto.name (1),
 * computations (3), id (5); HloComputationProto.instructions (2); HloInstructionProto.name (1), opcode (2),
 * fusion_kind (11).
 */
import protobuf from 'protobufjs/minimal.js';
import { varint64, varintDecimalAt } from './xplane';

type Reader = protobuf.Reader;

/** XLA's elementwise opcodes (HloInstruction::IsElementwise for a non-fusion instruction). */
const ELEMENTWISE = new Set([
  'abs', 'add', 'and', 'atan2', 'bitcast-convert', 'cbrt', 'ceil', 'clamp', 'clz', 'compare', 'complex', 'convert',
  'cos', 'divide', 'erf', 'exp', 'exponential', 'exponential-minus-one', 'floor', 'imag', 'is-finite', 'log',
  'log-plus-one', 'logistic', 'map', 'maximum', 'minimum', 'multiply', 'negate', 'not', 'or', 'popcnt', 'power',
  'real', 'reduce-precision', 'remainder', 'round-nearest-afz', 'round-nearest-even', 'rsqrt', 'select',
  'shift-left', 'shift-right-arithmetic', 'shift-right-logical', 'sign', 'sine', 'cosine', 'sqrt',
  'stochastic-convert', 'subtract', 'tan', 'tanh', 'xor',
]);

const FUSION_KIND: Record<string, string> = {
  kLoop: 'loop fusion', kInput: 'input fusion', kOutput: 'output fusion', kCustom: 'custom fusion',
};

/** The category XLA gives an instruction of this opcode (and fusion kind, for a fusion). */
export function hloCategory(opcode: string, fusionKind: string): string {
  if (opcode === 'transpose' || opcode === 'copy' || opcode === 'reshape' || opcode === 'dynamic-reshape') return 'data formatting';
  if (ELEMENTWISE.has(opcode)) return 'non-fusion elementwise';
  if (opcode === 'fusion') return FUSION_KIND[fusionKind] ?? 'fusion';
  return opcode;
}

/** One program's HLO: its id (exact decimal digits, '' if absent), name, and category by instruction name. */
export interface HloProgram {
  id: string;
  name: string;
  categories: Map<string, string>;
}

function sub(r: Reader, f: (r: Reader, end: number) => void): void {
  const end = r.uint32() + r.pos;
  if (end > r.len) throw new RangeError('index out of range');
  f(r, end);
  r.pos = end;
}

/** Decodes what the op table needs of a serialized HloProto; anything else is skipped. Throws on corrupt input. */
export function decodeHloProgram(bytes: Uint8Array): HloProgram {
  // Through a Buffer view (no copy), so protobufjs gives the BufferReader the streaming decoder uses: the
  // varint helpers they share then see one kind of reader and buffer, and stay optimized for it.
  const r = protobuf.Reader.create(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  const out: HloProgram = { id: '', name: '', categories: new Map() };
  const instruction = (r: Reader, end: number): void => {
    let name = '';
    let opcode = '';
    let kind = '';
    while (r.pos < end) {
      const tag = r.uint32();
      const field = tag >>> 3;
      if (field === 1 && (tag & 7) === 2) name = r.string();
      else if (field === 2 && (tag & 7) === 2) opcode = r.string();
      else if (field === 11 && (tag & 7) === 2) kind = r.string();
      else r.skipType(tag & 7);
    }
    if (name) out.categories.set(name, hloCategory(opcode, kind));
  };
  const computation = (r: Reader, end: number): void => {
    while (r.pos < end) {
      const tag = r.uint32();
      if (tag >>> 3 === 2 && (tag & 7) === 2) sub(r, instruction);
      else r.skipType(tag & 7);
    }
  };
  const module = (r: Reader, end: number): void => {
    while (r.pos < end) {
      const tag = r.uint32();
      const field = tag >>> 3;
      if (field === 1 && (tag & 7) === 2) out.name = r.string();
      else if (field === 3 && (tag & 7) === 2) sub(r, computation);
      else if (field === 5 && (tag & 7) === 0) {
        const at = r.pos;
        const v = varint64(r);
        out.id = Number.isSafeInteger(v) && v >= 0 ? String(v) : varintDecimalAt(r.buf, at);
      } else r.skipType(tag & 7);
    }
  };
  while (r.pos < r.len) {
    const tag = r.uint32();
    if (tag >>> 3 === 1 && (tag & 7) === 2) sub(r, module);
    else r.skipType(tag & 7);
  }
  return out;
}
