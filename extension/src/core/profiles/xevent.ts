/**
 * The XEvent loop of the streaming decoder (stream.ts): one line's events into reusable columns. Field numbers
 * from tsl/profiler/protobuf/xplane.proto: XEvent = metadata_id (1), offset_ps (2), duration_ps (3), stats (4),
 * num_occurrences (5); XStat = metadata_id (1), double (2), uint64 (3), int64 (4), str (5), bytes (6), ref (7).
 *
 * Why this loop reads the bytes itself: a 200 MB capture is ~2.4 M events and ~5 M stats, and this is where the
 * decoder spends its time. Going through protobufjs's Reader for every tag and varint (a call, and a load and a
 * store of reader.pos, each) cost about a third more than this loop (decoding alone, the 200 MB bench file:
 * ~360 ms against ~265 ms once compiled), which keeps the position in a local, compares tags whole (a one-byte
 * tag as it lies) and reads varints in place. The Reader still owns the buffer and does everything else: fields
 * this loop does not know, other wire types, and kept stats' doubles and strings are read or skipped through it,
 * so unknown fields and wire types are handled as protobufjs handles them. Bounds: a varint that runs past its
 * message is caught once read (reads past the buffer's end give undefined, which ends no varint), and reported
 * as protobufjs reports it, "index out of range", at the field where it began.
 */
import protobuf from 'protobufjs/minimal.js';
import { grown, ProfileFormatError, varintAt, varintDecimalAt, varintEnd as after } from './xplane';
import type { LineView } from './view';

type Reader = protobuf.Reader;

export const enum Kept {
  No = 0, Op, Module, Category, Program, Flops, Bytes, DevOffset, DevDuration,
  // Step grouping (step-groups.ts): rare on events, so kept in a side list (LineView.tag*), not in columns.
  Correlation, Root, ProducerType, ProducerId, ConsumerType, ConsumerId, Async, GroupId,
}

/** The stats xprof's step grouping reads (tsl/profiler/utils/xplane_schema: kCorrelationId, kIsRoot, kProducerType, …). */
export const GROUPING_STATS: readonly [string, Kept][] = [
  ['correlation_id', Kept.Correlation], ['_r', Kept.Root], ['_pt', Kept.ProducerType], ['_p', Kept.ProducerId],
  ['_ct', Kept.ConsumerType], ['_c', Kept.ConsumerId], ['_a', Kept.Async], ['group_id', Kept.GroupId],
];

/** The planes whose events step grouping reads (step-groups.ts): the host's threads and GPUs. */
export function groupingPlane(name: string): boolean {
  return name === '/host:CPU' || name.startsWith('/device:GPU:');
}

/** Where a kept stat's string values go (the plane's string table, see stream.ts). */
export interface StatStrings {
  /** The key of the length-delimited string at r.pos. */
  read(r: Reader): number;
  /** The key of the name of stat metadata `id` (ref_value). */
  ref(id: number): number;
  /** The key of a number given where a string was expected. */
  number(n: number): number;
  /** The key of the exact decimal digits of a number too big for a double (a 64-bit id). */
  digits(d: string): number;
}

/** Reusable, growable columns of the line being decoded. */
export class LineColumns implements LineView {
  name = '';
  displayName = '';
  timestampNs = 0;
  count = 0;
  metaId = new Int32Array(1024);
  offsetPs = new Float64Array(1024);
  durationPs = new Float64Array(1024);
  op = new Int32Array(1024);
  module = new Int32Array(1024);
  category = new Int32Array(1024);
  flops = new Float64Array(1024);
  bytes = new Float64Array(1024);
  program = new Int32Array(1024);
  devOffsetPs = new Float64Array(1024);
  devDurationPs = new Float64Array(1024);
  tagCount = 0;
  tagEvent = new Int32Array(256);
  tagKind = new Uint8Array(256);
  tagValue = new Float64Array(256);

  /** A step-grouping stat of event i. */
  tag(i: number, kind: Kept, value: number): void {
    const n = this.tagCount++;
    if (n === this.tagEvent.length) {
      this.tagEvent = grown(this.tagEvent, n + 1); this.tagKind = grown(this.tagKind, n + 1); this.tagValue = grown(this.tagValue, n + 1);
    }
    this.tagEvent[n] = i; this.tagKind[n] = kind; this.tagValue[n] = value;
  }

  grow(): void {
    const n = this.count + 1;
    this.metaId = grown(this.metaId, n); this.offsetPs = grown(this.offsetPs, n); this.durationPs = grown(this.durationPs, n);
    this.op = grown(this.op, n); this.module = grown(this.module, n); this.category = grown(this.category, n);
    this.flops = grown(this.flops, n); this.bytes = grown(this.bytes, n); this.program = grown(this.program, n);
    this.devOffsetPs = grown(this.devOffsetPs, n); this.devDurationPs = grown(this.devDurationPs, n);
  }
}

/** Skips the value of a field whose tag (already read) ended at `pos`, through the Reader; returns the position after it. */
function skipValue(r: Reader, pos: number, tag: number): number {
  if (tag >>> 3 === 0) throw new ProfileFormatError(`invalid field tag ${tag}`);
  r.pos = pos;
  r.skipType(tag & 7);
  return r.pos;
}

/** Where the field being read began: errors are reported there (the in-place reads do not move reader.pos). */
let fieldAt = 0;

/** Decodes the XLine payload [r.pos, r.len) into `c`, keeping the stats `kept` marks (by stat metadata id). */
export function decodeLine(r: Reader, c: LineColumns, kept: Uint8Array, strings: StatStrings): void {
  c.name = ''; c.displayName = ''; c.timestampNs = 0; c.count = 0; c.tagCount = 0;
  const buf = r.buf;
  const len = r.len;
  while (r.pos < len) {
    const at = r.pos;
    const tag = r.uint32();
    switch (tag) {
      case (2 << 3) | 2: c.name = r.string(); break;
      case (3 << 3) | 0: c.timestampNs = varintAt(buf, r.pos); r.pos = after; break;
      case (4 << 3) | 2: {
        const n = varintAt(buf, r.pos);
        const end = after + n;
        if (end > len) { r.pos = at; throw new RangeError('index out of range'); }
        try {
          r.pos = decodeEvent(buf, after, end, c, kept, strings, r);
        } catch (e) {
          r.pos = fieldAt;
          throw e;
        }
        break;
      }
      case (11 << 3) | 2: c.displayName = r.string(); break;
      default:
        if (tag >>> 3 === 0) throw new ProfileFormatError(`invalid field tag ${tag}`);
        r.skipType(tag & 7); // id (1), duration_ps (9), display_id (10)
    }
    if (r.pos > len) { r.pos = at; throw new RangeError('index out of range'); }
  }
  c.displayName ||= c.name;
}

/**
 * One XEvent at buf[pos, end) into row c.count; returns end. Tags are compared whole: a one-byte tag as it
 * lies, a longer one (a field past 15, or an overlong encoding of a small one) decoded first.
 */
function decodeEvent(buf: Uint8Array, pos: number, end: number, c: LineColumns, kept: Uint8Array, strings: StatStrings, r: Reader): number {
  if (c.count === c.metaId.length) c.grow();
  let meta = 0, offset = 0, dur = 0, op = -1, mod = -1, cat = -1, prog = -1, flops = NaN, bytes = NaN, devOff = NaN, devDur = NaN;
  while (pos < end) {
    fieldAt = pos;
    let tag = buf[pos++];
    if (tag >= 0x80) { tag = varintAt(buf, pos - 1); pos = after; }
    // One-byte varints (metadata ids, lengths, stat ids: most of them) are read here; a call each was a
    // quarter of the decoder's time on a 200 MB capture (V8 does not inline varintAt into this big a function).
    if (tag === ((1 << 3) | 0)) { const b = buf[pos]; if (b < 0x80) { meta = b; pos++; } else { meta = varintAt(buf, pos); pos = after; } }
    else if (tag === ((2 << 3) | 0)) { offset = varintAt(buf, pos); pos = after; }
    else if (tag === ((3 << 3) | 0)) { dur = varintAt(buf, pos); pos = after; }
    else if (tag === ((4 << 3) | 2)) {
      let e = buf[pos];
      if (e < 0x80) e += ++pos;
      else { e = varintAt(buf, pos) + after; pos = after; }
      if (e > end) throw new RangeError('index out of range');
      // metadata_id comes first in serialized stats: most stats are not kept, and are skipped whole.
      let k: number = Kept.No;
      while (pos < e) {
        fieldAt = pos;
        let t = buf[pos++];
        if (t >= 0x80) { t = varintAt(buf, pos - 1); pos = after; }
        if (t === ((1 << 3) | 0)) {
          let m = buf[pos];
          let next = pos + 1;
          if (m >= 0x80 || m === undefined) { m = varintAt(buf, pos); next = after; }
          if (next > e) throw new RangeError('index out of range');
          k = m < kept.length ? kept[m] : Kept.No;
          if (k === Kept.No) { pos = e; break; }
          pos = next;
          continue;
        }
        // A kept stat's value: varints read here, anything else through the Reader.
        let num = NaN;
        let s = -1;
        if (t === ((3 << 3) | 0) || t === ((4 << 3) | 0)) {
          num = varintAt(buf, pos);
          // A 64-bit id past 2^53 (program_id) keeps its exact digits.
          if (k === Kept.Program && !Number.isSafeInteger(num)) s = strings.digits(varintDecimalAt(buf, pos));
          pos = after;
        }
        else if (t === ((7 << 3) | 0)) {
          const id = varintAt(buf, pos);
          pos = after;
          s = strings.ref(id);
        }
        else {
          r.pos = pos;
          if (t === ((2 << 3) | 1)) num = r.double();
          else if (t === ((5 << 3) | 2)) s = strings.read(r);
          else { pos = skipValue(r, pos, t); continue; }
          pos = r.pos;
        }
        if (s < 0 && k !== Kept.No && k <= Kept.Program) s = strings.number(num);
        if (k === Kept.Op) op = s;
        else if (k === Kept.Module) mod = s;
        else if (k === Kept.Category) cat = s;
        else if (k === Kept.Program) prog = s;
        else if (k === Kept.Flops) flops = num;
        else if (k === Kept.Bytes) bytes = num;
        else if (k === Kept.DevOffset) devOff = num;
        else if (k === Kept.DevDuration) devDur = num;
        else if (k !== Kept.No) c.tag(c.count, k, num);
      }
      if (pos > e) throw new RangeError('index out of range');
    } else pos = skipValue(r, pos, tag); // num_occurrences (5): aggregated events, no timing.
  }
  if (pos > end) throw new RangeError('index out of range');
  const i = c.count++;
  c.metaId[i] = meta; c.offsetPs[i] = offset; c.durationPs[i] = dur;
  c.op[i] = op; c.module[i] = mod; c.category[i] = cat; c.flops[i] = flops; c.bytes[i] = bytes;
  c.program[i] = prog; c.devOffsetPs[i] = devOff; c.devDurationPs[i] = devDur;
  return end;
}
