/**
 * XSpace (`*.xplane.pb`) decoding with protobufjs's wire Reader. Field numbers come from
 * tsl/profiler/protobuf/xplane.proto (XSpace, XPlane, XLine, XEvent, XStat, XEventMetadata, XStatMetadata).
 *
 * Why a hand-driven Reader and not generated message classes: a capture holds millions of XEvents, and one
 * JS object per event (plus one Long per int64 field) is what makes TensorBoard need GBs. Here events go
 * into typed arrays per line (columnar), and per-event stats into flat arrays, so memory stays close to
 * the file size.
 */
import protobuf from 'protobufjs/minimal.js';

type Reader = protobuf.Reader;

export class ProfileFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProfileFormatError';
  }
}

export interface StatMeta {
  id: number;
  name: string;
}

/** A stat value: numbers for the numeric oneof members, strings for str_value, and ref_value resolved by name. */
export type StatValue = number | string;

export interface EventMeta {
  id: number;
  name: string;
  displayName: string;
  /** Metadata-level stats (e.g. hlo_category, flops, bytes_accessed on TPU), by stat name. */
  stats: Map<string, StatValue>;
  /** The serialized xla.HloProto of a program (the /host:metadata plane's entries carry one each). */
  hloProto?: Uint8Array;
}

/** The metadata stat that holds a program's serialized HloProto. */
export const HLO_PROTO_STAT = 'Hlo Proto';

/** One XLine's events, columnar. offsetPs is relative to the line's timestampNs. */
export interface LineData {
  id: number;
  name: string;
  displayName: string;
  timestampNs: number;
  count: number;
  metaId: Int32Array;
  offsetPs: Float64Array;
  durationPs: Float64Array;
  /** Event i's stats are statMeta/statNum/statStr[statStart[i] .. statStart[i+1]). */
  statStart: Uint32Array;
  statMeta: Int32Array;
  statNum: Float64Array;
  /** Sparse: only string stats have an entry (index into the stat arrays). ref_value stats are resolved to their name here. */
  statStr: Map<number, string>;
}

export interface PlaneData {
  id: number;
  name: string;
  lines: LineData[];
  eventMeta: Map<number, EventMeta>;
  statMeta: Map<number, StatMeta>;
  stats: Map<string, StatValue>;
}

export interface XSpaceData {
  planes: PlaneData[];
  hostnames: string[];
  errors: string[];
  warnings: string[];
}

/** Position after the varint read last by varintAt (a module variable: two results, no allocation). */
export let varintEnd = 0;

/**
 * The varint at buf[pos] as a double (exact below 2^53: ids, picosecond offsets and durations); its end goes to
 * varintEnd. No bounds check per byte: the caller checks varintEnd against its message's end (reads past the
 * buffer's end give undefined, which ends no varint, and ten bytes without an end throw).
 */
export function varintAt(buf: Uint8Array, pos: number): number {
  // The first 28 bits with integer arithmetic: ids and most durations fit there, and this runs several times per event.
  let b = buf[pos];
  if (b < 0x80) { varintEnd = pos + 1; return b; }
  let v = b & 0x7f;
  b = buf[pos + 1]; v |= (b & 0x7f) << 7;
  if (b < 0x80) { varintEnd = pos + 2; return v; }
  b = buf[pos + 2]; v |= (b & 0x7f) << 14;
  if (b < 0x80) { varintEnd = pos + 3; return v; }
  b = buf[pos + 3]; v |= (b & 0x7f) << 21;
  if (b < 0x80) { varintEnd = pos + 4; return v; }
  return varintRest(buf, pos + 4, v);
}

/**
 * Bytes 5 to 8 of a varint, unrolled (offsets in picoseconds take 5 or 6; a TPU's device offsets, 7 or 8, on
 * every op: a call each to the loop below was 8% of a TPU capture's analysis); then the rest.
 */
function varintRest(buf: Uint8Array, pos: number, low: number): number {
  let b = buf[pos];
  let result = low + (b & 0x7f) * 2 ** 28;
  if (b < 0x80) { varintEnd = pos + 1; return result; }
  b = buf[pos + 1];
  result += (b & 0x7f) * 2 ** 35;
  if (b < 0x80) { varintEnd = pos + 2; return result; }
  b = buf[pos + 2];
  result += (b & 0x7f) * 2 ** 42;
  if (b < 0x80) { varintEnd = pos + 3; return result; }
  b = buf[pos + 3];
  result += (b & 0x7f) * 2 ** 49;
  if (b < 0x80) { varintEnd = pos + 4; return result; }
  return varintTail(buf, pos + 4, result);
}

/** Bytes 9 and 10 of a varint. */
function varintTail(buf: Uint8Array, pos: number, low: number): number {
  let result = low;
  let scale = 2 ** 56;
  for (let i = 8; i < 10; i++) {
    const b = buf[pos++];
    result += (b & 0x7f) * scale;
    if (b < 0x80) {
      varintEnd = pos;
      // A negative int64 is ten bytes of two's complement; ids and times are never negative in practice.
      return i === 9 && result >= 2 ** 63 ? result - 2 ** 64 : result;
    }
    scale *= 128;
  }
  if (pos > buf.length) throw new RangeError('index out of range');
  throw new ProfileFormatError('invalid varint');
}

/**
 * The varint at buf[pos] as an unsigned decimal string, exact to 64 bits. XLA's program ids are uint64 (often
 * written as int64, so negative): a double would round them, and they name programs in xprof's tables.
 */
export function varintDecimalAt(buf: Uint8Array, pos: number): string {
  let v = 0n;
  for (let shift = 0n; shift < 70n; shift += 7n) {
    const b = buf[pos++];
    if (b === undefined) throw new RangeError('index out of range');
    v |= BigInt(b & 0x7f) << shift;
    if (b < 0x80) return BigInt.asUintN(64, v).toString();
  }
  throw new ProfileFormatError('invalid varint');
}

/** A 64-bit varint at the Reader's position, as a double (see varintAt); a varint past the Reader's end throws as protobufjs does. */
export function varint64(r: Reader): number {
  const v = varintAt(r.buf, r.pos);
  if (varintEnd > r.len) throw new RangeError('index out of range');
  r.pos = varintEnd;
  return v;
}

/** Growable typed columns for one line while decoding. */
class LineBuilder {
  count = 0;
  metaId = new Int32Array(64);
  offsetPs = new Float64Array(64);
  durationPs = new Float64Array(64);
  statStart = new Uint32Array(65);
  nStats = 0;
  statMeta = new Int32Array(64);
  statNum = new Float64Array(64);
  statStr = new Map<number, string>();
  statRef = new Set<number>();

  ensureEvent(): void {
    if (this.count + 1 < this.metaId.length) return;
    const n = this.metaId.length * 2;
    this.metaId = grown(this.metaId, n);
    this.offsetPs = grown(this.offsetPs, n);
    this.durationPs = grown(this.durationPs, n);
    this.statStart = grown(this.statStart, n + 1);
  }

  ensureStat(): void {
    if (this.nStats < this.statMeta.length) return;
    const n = this.statMeta.length * 2;
    this.statMeta = grown(this.statMeta, n);
    this.statNum = grown(this.statNum, n);
  }
}

/**
 * `a`, or a copy at least twice as long when `need` exceeds it, its new entries `fill` (default 0): the columns,
 * stacks, tables and caches of the decoders and the analysis, all grown this way.
 */
export function grown<T extends Int32Array | Float64Array | Uint32Array | Int8Array | Uint8Array>(a: T, need: number, fill = 0): T {
  if (need <= a.length) return a;
  const b = new (a.constructor as new (n: number) => T)(Math.max(need, a.length * 2));
  if (fill !== 0) b.fill(fill);
  b.set(a);
  return b;
}

/** Decodes one XStat into (metaId, number | string). ref_value stays a number here; resolved by readers. */
function readStat(r: Reader, end: number): RawStat {
  let meta = 0;
  let num = 0;
  let str: string | undefined;
  let ref = false;
  let bin: Uint8Array | undefined;
  while (r.pos < end) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 1: meta = varint64(r); break;
      case 2: num = r.double(); break;
      case 3: case 4: {
        const at = r.pos;
        num = varint64(r);
        // Past 2^53 a double is not the value: keep the exact digits (program ids).
        if (!Number.isSafeInteger(num)) str = varintDecimalAt(r.buf, at);
        break;
      }
      // ref_value: the id of a stat metadata entry whose *name* is the string value (XLA interns op names so).
      case 7: num = varint64(r); ref = true; break;
      case 5: str = r.string(); break;
      case 6: bin = r.bytes(); str = `<${bin.length} bytes>`; break;
      default: r.skipType(tag & 7);
    }
  }
  return { meta, num, str, ref, bin };
}

function readEvent(r: Reader, end: number, b: LineBuilder): void {
  b.ensureEvent();
  const i = b.count;
  b.statStart[i] = b.nStats;
  let meta = 0;
  let offset = 0;
  let dur = 0;
  while (r.pos < end) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 1: meta = varint64(r); break;
      case 2: offset = varint64(r); break;
      case 3: dur = varint64(r); break;
      case 4: {
        const e = r.uint32() + r.pos;
        const s = readStat(r, e);
        b.ensureStat();
        b.statMeta[b.nStats] = s.meta;
        b.statNum[b.nStats] = s.num;
        if (s.str !== undefined) b.statStr.set(b.nStats, s.str);
        else if (s.ref) b.statRef.add(b.nStats);
        b.nStats++;
        break;
      }
      default: r.skipType(tag & 7); // num_occurrences (5): aggregated events, no timing.
    }
  }
  b.metaId[i] = meta;
  b.offsetPs[i] = offset;
  b.durationPs[i] = dur;
  b.count++;
  b.statStart[b.count] = b.nStats;
}

function readLine(r: Reader, end: number): LineData {
  const b = new LineBuilder();
  let id = 0;
  let name = '';
  let displayName = '';
  let ts = 0;
  while (r.pos < end) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 1: id = varint64(r); break;
      case 2: name = r.string(); break;
      case 3: ts = varint64(r); break;
      case 4: { const e = r.uint32() + r.pos; readEvent(r, e, b); break; }
      case 10: r.skipType(tag & 7); break; // display_id
      case 11: displayName = r.string(); break;
      default: r.skipType(tag & 7); // duration_ps (9) and reserved fields
    }
  }
  const n = b.count;
  return {
    id, name, displayName: displayName || name, timestampNs: ts, count: n,
    metaId: b.metaId.slice(0, n), offsetPs: b.offsetPs.slice(0, n), durationPs: b.durationPs.slice(0, n),
    statStart: b.statStart.slice(0, n + 1), statMeta: b.statMeta.slice(0, b.nStats), statNum: b.statNum.slice(0, b.nStats),
    statStr: b.statStr, statRef: b.statRef,
  } as LineData & { statRef: Set<number> };
}

/** Metadata-level stats are few: decode them to raw triples and name them once the plane's stat metadata is known. */
interface RawStat { meta: number; num: number; str: string | undefined; ref: boolean; bin?: Uint8Array }

function readEventMeta(r: Reader, end: number): { meta: EventMeta; raw: RawStat[] } {
  const meta: EventMeta = { id: 0, name: '', displayName: '', stats: new Map() };
  const raw: RawStat[] = [];
  while (r.pos < end) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 1: meta.id = varint64(r); break;
      case 2: meta.name = r.string(); break;
      case 4: meta.displayName = r.string(); break;
      case 5: { const e = r.uint32() + r.pos; raw.push(readStat(r, e)); break; }
      default: r.skipType(tag & 7); // metadata bytes (3), child_id (6)
    }
  }
  return { meta, raw };
}

function readStatMeta(r: Reader, end: number): StatMeta {
  const m: StatMeta = { id: 0, name: '' };
  while (r.pos < end) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 1: m.id = varint64(r); break;
      case 2: m.name = r.string(); break;
      default: r.skipType(tag & 7);
    }
  }
  return m;
}

/** map<int64, M> entries are messages with key = 1, value = 2. */
function readMapEntry<T>(r: Reader, end: number, value: (r: Reader, end: number) => T): { key: number; value: T | undefined } {
  let key = 0;
  let v: T | undefined;
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag >>> 3 === 1) key = varint64(r);
    else if (tag >>> 3 === 2) { const e = r.uint32() + r.pos; v = value(r, e); }
    else r.skipType(tag & 7);
  }
  return { key, value: v };
}

function readPlane(r: Reader, end: number): PlaneData {
  const plane: PlaneData = { id: 0, name: '', lines: [], eventMeta: new Map(), statMeta: new Map(), stats: new Map() };
  const pending: { meta: EventMeta; raw: RawStat[] }[] = [];
  const planeStats: RawStat[] = [];
  while (r.pos < end) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 1: plane.id = varint64(r); break;
      case 2: plane.name = r.string(); break;
      case 3: { const e = r.uint32() + r.pos; plane.lines.push(readLine(r, e)); break; }
      case 4: {
        const e = r.uint32() + r.pos;
        const entry = readMapEntry(r, e, readEventMeta);
        if (entry.value) {
          entry.value.meta.id ||= entry.key;
          plane.eventMeta.set(entry.key, entry.value.meta);
          pending.push(entry.value);
        }
        break;
      }
      case 5: {
        const e = r.uint32() + r.pos;
        const entry = readMapEntry(r, e, readStatMeta);
        if (entry.value) plane.statMeta.set(entry.key, { id: entry.key, name: entry.value.name });
        break;
      }
      case 6: { const e = r.uint32() + r.pos; planeStats.push(readStat(r, e)); break; }
      default: r.skipType(tag & 7);
    }
  }
  const name = (id: number): string => plane.statMeta.get(id)?.name ?? `stat#${id}`;
  const value = (s: RawStat): StatValue => s.str ?? (s.ref ? name(s.num) : s.num);
  for (const p of pending) {
    for (const s of p.raw) {
      const n = name(s.meta);
      p.meta.stats.set(n, value(s));
      if (n === HLO_PROTO_STAT && s.bin) p.meta.hloProto = s.bin;
    }
  }
  for (const s of planeStats) plane.stats.set(name(s.meta), value(s));
  // Lines are read before the stat metadata map may have been seen: resolve ref_value stats now.
  for (const line of plane.lines as (LineData & { statRef?: Set<number> })[]) {
    for (const k of line.statRef ?? []) line.statStr.set(k, name(line.statNum[k]));
    delete line.statRef;
  }
  return plane;
}

/**
 * A string field checked against the end of the buffer. protobufjs's reader over a Node Buffer cuts a string
 * that runs past the end short instead of failing, and the last field of a capture is often a hostname: a file
 * that lost its last bytes would otherwise read as whole, with a shorter hostname.
 */
function boundedString(r: Reader): string {
  const at = r.pos;
  const len = r.uint32();
  if (r.pos + len > r.len) throw new RangeError('index out of range');
  r.pos = at;
  return r.string();
}

/**
 * Decodes a whole XSpace. Throws ProfileFormatError with a plain-words reason on corrupt or truncated input
 * (protobufjs throws RangeError "index out of range" when a length runs past the end).
 */
export function decodeXSpace(buf: Uint8Array): XSpaceData {
  if (buf.length === 0) throw new ProfileFormatError('the profile file is empty');
  const r = protobuf.Reader.create(buf);
  const space: XSpaceData = { planes: [], hostnames: [], errors: [], warnings: [] };
  try {
    while (r.pos < r.len) {
      const tag = r.uint32();
      const wire = tag & 7;
      const field = tag >>> 3;
      if (field === 0 || wire > 5 || wire === 3 || wire === 4) throw new ProfileFormatError(`invalid field tag ${tag} at byte ${r.pos}`);
      switch (field) {
        case 1: {
          const e = r.uint32() + r.pos;
          if (e > r.len) throw new RangeError('index out of range');
          space.planes.push(readPlane(r, e));
          break;
        }
        case 2: space.errors.push(boundedString(r)); break;
        case 3: space.warnings.push(boundedString(r)); break;
        case 4: space.hostnames.push(boundedString(r)); break;
        default: r.skipType(wire);
      }
    }
  } catch (e) {
    if (e instanceof ProfileFormatError) throw new ProfileFormatError(`not a valid XSpace profile: ${e.message}`);
    const why = e instanceof Error ? e.message : String(e);
    if (/index out of range/.test(why)) {
      throw new ProfileFormatError(`the profile is truncated or corrupt: a field runs past the end of the file (at byte ${r.pos} of ${r.len})`);
    }
    throw new ProfileFormatError(`not a valid XSpace profile: ${why}`);
  }
  if (space.planes.length === 0) throw new ProfileFormatError('no planes in the profile: not an XSpace file, or an empty capture');
  return space;
}

/** The value of stat `name` on event `i` of `line`, or undefined. */
export function eventStat(plane: PlaneData, line: LineData, i: number, name: string): StatValue | undefined {
  for (let k = line.statStart[i]; k < line.statStart[i + 1]; k++) {
    if (plane.statMeta.get(line.statMeta[k])?.name === name) return line.statStr.get(k) ?? line.statNum[k];
  }
  return undefined;
}
