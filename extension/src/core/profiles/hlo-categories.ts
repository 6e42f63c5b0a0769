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
import { Utf8Interner } from './intern';
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

/**
 * Decodes what the op table needs of serialized HloProtos; anything else is skipped. One per analysis (an
 * OpStats), for every program it meets: instruction names and opcodes are interned from their bytes, so a name
 * or opcode seen before creates no string, and an opcode's category is worked out once. Per instruction, fresh
 * strings and a copy of each program's map into an object had been half of the analysis of a GPU capture whose
 * programs hold many instructions (BENCHMARKS.md, `profiles-real`).
 */
export class HloDecoder {
  private readonly table = new Utf8Interner();
  /** Category of a non-fusion instruction, by the key of its opcode. */
  private readonly categoryOfOpcode = new Map<number, string>();
  private r: Reader = protobuf.Reader.create(Buffer.alloc(0));
  private out: HloProgram = { id: '', name: '', categories: new Map() };

  /** Throws on corrupt input. */
  decode(bytes: Uint8Array): HloProgram {
    // Through a Buffer view (no copy), so protobufjs gives the BufferReader the streaming decoder uses: the
    // varint helpers they share then see one kind of reader and buffer, and stay optimized for it.
    const r = (this.r = protobuf.Reader.create(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)));
    const out = (this.out = { id: '', name: '', categories: new Map() });
    while (r.pos < r.len) {
      const tag = r.uint32();
      if (tag >>> 3 === 1 && (tag & 7) === 2) this.module(this.end());
      else r.skipType(tag & 7);
    }
    return out;
  }

  /** The end of the length-delimited field at r.pos (r.pos moves past its length). */
  private end(): number {
    const r = this.r;
    const end = r.uint32() + r.pos;
    if (end > r.len) throw new RangeError('index out of range');
    return end;
  }

  private module(end: number): void {
    const r = this.r;
    while (r.pos < end) {
      const tag = r.uint32();
      const field = tag >>> 3;
      if (field === 1 && (tag & 7) === 2) this.out.name = r.string();
      else if (field === 3 && (tag & 7) === 2) this.computation(this.end());
      else if (field === 5 && (tag & 7) === 0) {
        const at = r.pos;
        const v = varint64(r);
        this.out.id = Number.isSafeInteger(v) && v >= 0 ? String(v) : varintDecimalAt(r.buf, at);
      } else r.skipType(tag & 7);
    }
    r.pos = end;
  }

  private computation(end: number): void {
    const r = this.r;
    while (r.pos < end) {
      const tag = r.uint32();
      if (tag >>> 3 === 2 && (tag & 7) === 2) this.instruction(this.end());
      else r.skipType(tag & 7);
    }
    r.pos = end;
  }

  private instruction(end: number): void {
    const r = this.r;
    const buf = r.buf;
    let name = -1;
    let opcode = -1;
    let kind = -1;
    // An instruction has a dozen fields or more, nearly all skipped: one-byte tags and lengths and varints are
    // read here, inline (a call per field was most of the time), anything longer through the Reader.
    let pos = r.pos;
    while (pos < end) {
      let tag = buf[pos++];
      if (tag >= 0x80) { r.pos = pos - 1; tag = r.uint32(); pos = r.pos; }
      const wire = tag & 7;
      if (wire === 2) {
        let len = buf[pos++];
        if (len >= 0x80) { r.pos = pos - 1; len = r.uint32(); pos = r.pos; }
        const start = pos;
        pos += len;
        if (pos > end) break;
        const field = tag >>> 3;
        if (field === 1) name = this.table.intern(buf, start, pos);
        else if (field === 2) opcode = this.table.intern(buf, start, pos);
        else if (field === 11) kind = this.table.intern(buf, start, pos);
      } else if (wire === 0) {
        while (pos < end && buf[pos] >= 0x80) pos++;
        pos++;
      } else {
        r.pos = pos;
        r.skipType(wire);
        pos = r.pos;
      }
    }
    if (pos > end) throw new RangeError('index out of range');
    r.pos = end;
    const strings = this.table.strings;
    if (name < 0 || !strings[name]) return;
    let category: string;
    if (opcode >= 0 && kind < 0) {
      const known = this.categoryOfOpcode.get(opcode);
      category = known ?? hloCategory(strings[opcode], '');
      if (known === undefined) this.categoryOfOpcode.set(opcode, category);
    } else category = hloCategory(opcode >= 0 ? strings[opcode] : '', kind >= 0 ? strings[kind] : '');
    this.out.categories.set(strings[name], category);
  }
}

/** One program's HLO, decoded on its own (an HloDecoder shares its strings across the programs it decodes). */
export function decodeHloProgram(bytes: Uint8Array): HloProgram {
  return new HloDecoder().decode(bytes);
}
