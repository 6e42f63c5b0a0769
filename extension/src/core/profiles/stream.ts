/**
 * Streaming XSpace decoder: reads a `*.xplane.pb` from disk through a fixed window and decodes it one XLine at
 * a time, so the file is never held whole. Field numbers from tsl/profiler/protobuf/xplane.proto.
 *
 * Layout it relies on (any field order is accepted): XSpace = repeated planes (1), errors (2), warnings (3),
 * hostnames (4). XPlane = id (1), name (2), lines (3), event_metadata (4), stat_metadata (5), stats (6).
 * Serializers write an XPlane's lines *before* its metadata, so a plane is read in two steps: a scan of its
 * fields (noting where each line lies, decoding the metadata), then each line from its file offset. Peak
 * memory is the window (or the largest line, if bigger) plus what the visitor keeps.
 *
 * Messages are decoded with protobufjs's Reader (the events' own loop, where the time goes, is in xevent.ts).
 * Only the stats the run view shows (hlo_op, hlo_module, hlo_category, flops, bytes_accessed) are materialized
 * (the others are skipped by their length); metadata ids are resolved once per plane, not per event; strings are
 * interned from their bytes into one table per thread (intern.ts), so a plane that names what an earlier one
 * named creates no new strings.
 */
import { closeSync, openSync } from 'node:fs';
import protobuf from 'protobufjs/minimal.js';
import { FileWindow } from './file-window';
import { hostRoots } from './step-roots';
import { IdTable, Utf8Interner } from './intern';
import { decodeLine, GROUPING_STATS, groupingPlane, Kept, LineColumns, type StatStrings } from './xevent';
import { eventInfo, type EventInfo, type PlaneView, type SpaceInfo, type XSpaceVisitor } from './view';
import { grown, HLO_PROTO_STAT, ProfileFormatError, varint64, varintDecimalAt, type StatValue } from './xplane';

type Reader = protobuf.Reader;

/** Default read window. Lines up to this size are decoded in place; bigger ones get a buffer of their own. */
export const DEFAULT_CHUNK = 8 << 20;

const utf8 = new TextDecoder('utf-8');

/** The field being scanned; one object, reused (a 200 MB capture has millions of fields). */
const f = { field: 0, wire: 0, start: 0, end: 0 };
type Field = typeof f;

/** Scans the field at `off` into `f`: for length-delimited fields [start, end) is the payload; the next field begins at end. */
function field(w: FileWindow, off: number, limit: number): Field {
  const tag = w.varint(off);
  f.field = Math.floor(tag / 8);
  f.wire = tag & 7;
  if (f.field === 0 || f.wire === 3 || f.wire === 4 || f.wire > 5) throw w.corrupt(off, `invalid field tag ${tag}`);
  f.start = f.end = w.next;
  if (f.wire === 0) { w.varint(f.start); f.end = w.next; }
  else if (f.wire === 1) f.end += 8;
  else if (f.wire === 5) f.end += 4;
  else {
    const len = w.varint(f.start);
    f.start = w.next;
    f.end = f.start + len;
  }
  if (f.end > limit) throw f.end > w.size ? w.truncated(off) : w.overrun(off);
  return f;
}

/** The stats the run view shows, by name; all others are skipped by their length. */
const KEPT_STATS = new Map<string, Kept>([
  ['hlo_op', Kept.Op], ['hlo_module', Kept.Module], ['hlo_category', Kept.Category], ['program_id', Kept.Program],
  ['flops', Kept.Flops], ['bytes_accessed', Kept.Bytes], ['device_offset_ps', Kept.DevOffset], ['device_duration_ps', Kept.DevDuration],
  ...GROUPING_STATS,
]);

/** What one thread keeps across the planes it decodes: one string table, and what is derived per string. */
class ThreadStrings {
  readonly table = new Utf8Interner();
  /** The EventInfo of a metadata entry without stats, by name key: one object for every plane that names it. */
  private readonly plain: (EventInfo | undefined)[] = [];
  /** Kept code by key of a stat name, or -1 if not known yet. */
  private keptOfKey = new Int8Array(256).fill(-1);

  /** The key of the length-delimited string at r.pos (bounds checked as protobufjs's Reader.string() is). */
  read(r: Reader): number {
    const len = r.uint32();
    const start = r.pos;
    const end = start + len;
    if (end > r.len) throw new RangeError('index out of range');
    r.pos = end;
    return this.table.intern(r.buf, start, end);
  }

  /** The key of a number's decimal digits (program ids: on every GPU kernel, and mostly the one before). */
  numberKey(n: number): number {
    if (n === this.lastNumber) return this.lastNumberKey;
    let key = this.keyOfNumber.get(n);
    if (key === undefined) {
      key = this.table.internString(String(n));
      this.keyOfNumber.set(n, key);
    }
    this.lastNumber = n;
    return (this.lastNumberKey = key);
  }

  private lastNumber = NaN;
  private lastNumberKey = -1;
  private readonly keyOfNumber = new Map<number, number>();

  plainInfo(key: number): EventInfo {
    return (this.plain[key] ??= {
      name: this.table.strings[key], key, category: undefined, flops: undefined, bytes: undefined, displayName: '', program: undefined, hloProto: undefined,
    });
  }

  kept(key: number): Kept {
    this.keptOfKey = grown(this.keptOfKey, key + 1, -1);
    let c = this.keptOfKey[key];
    if (c < 0) c = this.keptOfKey[key] = KEPT_STATS.get(this.table.strings[key]) ?? Kept.No;
    return c;
  }
}

/** Per-plane decoding context: which stat metadata ids are the kept stats, and the stats' names. */
class PlaneCtx implements StatStrings {
  /** Kept code (Kept) by stat metadata id: one typed-array load per stat tells whether to skip it. */
  kept = new Uint8Array(0);
  /** Stat metadata id → key of its name. */
  private readonly statKey = new IdTable<number>();

  constructor(readonly s: ThreadStrings) {}

  addStat(id: number, key: number): void {
    this.statKey.set(id, key);
  }

  /** grouping: keep the step-grouping stats too (planes that step grouping reads). */
  resolveIds(grouping: boolean): void {
    const keptOf = (key: number): Kept => {
      const k = this.s.kept(key);
      return grouping || k < Kept.Correlation ? k : Kept.No;
    };
    let max = -1;
    this.statKey.forEach((key, id) => {
      if (id >= 0 && id < 1 << 24 && keptOf(key) !== Kept.No) max = Math.max(max, id);
    });
    const kept = (this.kept = new Uint8Array(max + 1));
    this.statKey.forEach((key, id) => {
      if (id >= 0 && id <= max) kept[id] = keptOf(key);
    });
  }

  read(r: Reader): number {
    return this.s.read(r);
  }

  number(n: number): number {
    return this.s.numberKey(n);
  }

  digits(d: string): number {
    return this.s.table.internString(d);
  }

  /** ref_value: the id of a stat metadata entry whose name is the value (XLA interns op names so). */
  ref(id: number): number {
    const k = this.statKey.get(id);
    return k !== undefined ? k : this.s.table.internString(`stat#${id}`);
  }

  statName(id: number): string {
    const k = this.statKey.get(id);
    return k !== undefined ? this.s.table.strings[k] : `stat#${id}`;
  }
}

/** A metadata-level XStat; ref is set when value is a ref_value id, named once all stat metadata is read. */
interface RawStat { meta: number; value: StatValue | undefined; ref: boolean; bin?: Uint8Array }

/** Decodes one XStat (any field order); bytes values are skipped, not copied. */
function readStat(r: Reader, end: number): RawStat {
  const s: RawStat = { meta: 0, value: undefined, ref: false };
  while (r.pos < end) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 1: s.meta = varint64(r); break;
      case 2: s.value = r.double(); break;
      case 3: case 4: {
        const at = r.pos;
        s.value = varint64(r);
        // Past 2^53 a double is not the value: keep the exact digits (program ids).
        if (!Number.isSafeInteger(s.value)) s.value = varintDecimalAt(r.buf, at);
        break;
      }
      case 5: s.value = r.string(); break;
      // Bytes (the programs' HloProto) stay a view of the read window, good until the window moves (PlaneScan).
      case 6: s.bin = r.bytes(); break;
      case 7: s.value = varint64(r); s.ref = true; break;
      default: r.skipType(tag & 7);
    }
  }
  return s;
}

/** The metadata entry being decoded; one object, reused (a plane has thousands). */
const em = { id: 0, key: -1, display: -1, stats: undefined as RawStat[] | undefined };

/** An XEventMetadata map entry (key 1, value 2) into `em`. */
function decodeEventMeta(r: Reader, s: ThreadStrings): typeof em {
  let key = 0;
  let id = 0;
  em.key = -1;
  em.display = -1;
  // Most metadata has no stats (on CPU, none does): no array for them.
  em.stats = undefined;
  while (r.pos < r.len) {
    const tag = r.uint32();
    if (tag >>> 3 === 1 && (tag & 7) === 0) { key = varint64(r); continue; }
    if (tag >>> 3 !== 2) { r.skipType(tag & 7); continue; }
    const end = r.uint32() + r.pos;
    while (r.pos < end) {
      const t = r.uint32();
      switch (t >>> 3) {
        case 1: id = varint64(r); break;
        case 2: em.key = s.read(r); break;
        // Stats are named once the plane's stat metadata is all known (it may follow).
        case 5: { const e = r.uint32() + r.pos; (em.stats ??= []).push(readStat(r, e)); break; }
        case 4: em.display = s.read(r); break;
        default: r.skipType(t & 7); // metadata bytes (3), child_id (6)
      }
    }
  }
  em.id = id || key;
  if (em.key < 0) em.key = s.table.internString('');
  return em;
}

/** An XStatMetadata map entry: [id, key of its name]. */
function decodeStatMeta(r: Reader, s: ThreadStrings, ctx: PlaneCtx): void {
  let key = 0;
  let id = 0;
  let name = -1;
  while (r.pos < r.len) {
    const tag = r.uint32();
    if (tag >>> 3 === 1 && (tag & 7) === 0) { key = varint64(r); continue; }
    if (tag >>> 3 !== 2) { r.skipType(tag & 7); continue; }
    const end = r.uint32() + r.pos;
    while (r.pos < end) {
      const t = r.uint32();
      if (t >>> 3 === 1) id = varint64(r);
      else if (t >>> 3 === 2) name = s.read(r);
      else r.skipType(t & 7);
    }
  }
  ctx.addStat(id || key, name >= 0 ? name : s.table.internString(''));
}

export interface StreamOptions {
  /** Read window in bytes (tests use a small one to split planes and lines across reads). */
  chunkSize?: number;
  /**
   * false: step-grouping stats are not kept on any plane (scanXSpaceFile's `stepRoots` is false: grouping could
   * find no step, and a GPU capture's correlation ids are a stat on nearly every event). Default true.
   */
  grouping?: boolean;
}

/** Where one XPlane lies in the file: its payload [start, end), and its position among the planes. */
export interface PlaneRange { index: number; start: number; end: number }

/**
 * The top level of `file`: where each plane lies, and the space's hostnames, errors and warnings. Reads only
 * the top-level tags (through a small window: the planes in between are not read).
 */
export function scanXSpaceFile(file: string): { planes: PlaneRange[]; info: SpaceInfo; size: number; stepRoots: boolean } {
  const fd = openSync(file, 'r');
  try {
    const w = new FileWindow(fd, file, 512);
    if (w.size === 0) throw new ProfileFormatError(`${file}: the profile file is empty`);
    const info: SpaceInfo = { hostnames: [], errors: [], warnings: [] };
    const planes: PlaneRange[] = [];
    let hw: FileWindow | undefined;
    let stepRoots = false;
    for (let off = 0; off < w.size;) {
      field(w, off, w.size);
      off = f.end;
      if (f.wire === 2 && f.field === 1) {
        const p = { index: planes.length, start: f.start, end: f.end };
        planes.push(p);
        if (!stepRoots) stepRoots = hostRoots(w, (hw ??= new FileWindow(fd, file, 64 << 10)), p.start, p.end);
      } else if (f.wire === 2 && f.field >= 2 && f.field <= 4) {
        const s = utf8.decode(w.bytes(f.start, f.end - f.start));
        (f.field === 2 ? info.errors : f.field === 3 ? info.warnings : info.hostnames).push(s);
      }
    }
    if (planes.length === 0) throw new ProfileFormatError(`${file}: no planes in the profile: not an XSpace file, or an empty capture`);
    return { planes, info, size: w.size, stepRoots };
  } finally {
    closeSync(fd);
  }
}

/** Decodes the given planes of `file` (from scanXSpaceFile) line by line into `visitor`. */
export function streamPlanes(file: string, planes: PlaneRange[], visitor: XSpaceVisitor, opts: StreamOptions = {}): void {
  const f = new PlaneFile(file, opts);
  try {
    f.stream(planes, visitor);
  } finally {
    f.close();
  }
}

/** One open file, read window and set of line columns for several runs of planes (a thread taking chunk after chunk). */
export class PlaneFile {
  private readonly fd: number;
  private readonly w: FileWindow;
  private readonly cols = new LineColumns();
  private readonly strings = new ThreadStrings();
  private readonly grouping: boolean;

  constructor(file: string, opts: StreamOptions = {}) {
    this.fd = openSync(file, 'r');
    try {
      this.w = new FileWindow(this.fd, file, opts.chunkSize ?? DEFAULT_CHUNK);
      this.grouping = opts.grouping !== false;
    } catch (e) {
      closeSync(this.fd);
      throw e;
    }
  }

  stream(planes: readonly PlaneRange[], visitor: XSpaceVisitor): void {
    for (const p of planes) readPlane(this.w, p, visitor, this.cols, this.strings, this.grouping);
  }

  close(): void {
    closeSync(this.fd);
  }
}

/**
 * Decodes `file` line by line into `visitor`. Throws ProfileFormatError naming the file and the byte offset on
 * truncated or corrupt input, and fs errors (ENOENT, …) as they are.
 */
export function streamXSpaceFile(file: string, visitor: XSpaceVisitor, opts: StreamOptions = {}): SpaceInfo {
  const { planes, info, stepRoots } = scanXSpaceFile(file);
  streamPlanes(file, planes, visitor, { ...opts, grouping: stepRoots && opts.grouping !== false });
  return info;
}

/**
 * One plane's fields other than its lines, decoded in the first step; each handler gets a Reader bounded to
 * the field's payload. Lines are only located (their events are decoded once the metadata is known).
 */
class PlaneScan {
  readonly lines: number[] = [];
  readonly view: PlaneView;
  readonly ctx: PlaneCtx;
  private readonly withStats: { id: number; key: number; display: number; stats: RawStat[] }[] = [];
  private readonly planeStats: RawStat[] = [];

  /**
   * true: each field is read on its own (a plane bigger than the read window), so the window moves between them,
   * and bytes stats are copied; otherwise they are views, valid until the lines are read (after visitor.plane()).
   */
  copyBytes = false;

  constructor(index: number, private readonly s: ThreadStrings) {
    this.view = { index, name: '', lineCount: 0, meta: new IdTable<EventInfo>(), strings: s.table.strings, stats: new Map() };
    this.ctx = new PlaneCtx(s);
  }

  /** Length-delimited field `field` whose payload is [r.pos, r.len) of `r`, at file offset base + r.pos. */
  field(field: number, r: Reader, base: number): void {
    if (field === 3) this.lines.push(base + r.pos, base + r.len);
    else if (field === 2) this.view.name = utf8.decode(r.buf.subarray(r.pos, r.len));
    else if (field === 4) {
      const m = decodeEventMeta(r, this.s);
      if (this.copyBytes) for (const st of m.stats ?? []) if (st.bin) st.bin = new Uint8Array(st.bin);
      // A display name (TPU ops' short names) makes the entry its own, like stats do.
      if (m.stats || m.display >= 0) this.withStats.push({ id: m.id, key: m.key, display: m.display, stats: m.stats ?? [] });
      else this.view.meta.set(m.id, this.s.plainInfo(m.key));
    } else if (field === 5) decodeStatMeta(r, this.s, this.ctx);
    else if (field === 6) this.planeStats.push(readStat(r, r.len));
  }

  /** Stat names are complete now: name the metadata stats and their ref values (most metadata has none). */
  done(grouping: boolean): void {
    for (const m of this.withStats) this.view.meta.set(m.id, metaInfo(m, this.ctx, this.s.table.strings));
    this.ctx.resolveIds(grouping && groupingPlane(this.view.name));
    this.view.lineCount = this.lines.length / 2;
    const stats = new Map<string, StatValue>();
    for (const st of this.planeStats) {
      const v = st.ref ? this.ctx.statName(Number(st.value)) : st.value;
      if (v !== undefined) stats.set(this.ctx.statName(st.meta), v);
    }
    this.view.stats = stats;
  }
}

function readPlane(w: FileWindow, { start, end, index }: PlaneRange, visitor: XSpaceVisitor, cols: LineColumns, strings: ThreadStrings, grouping: boolean): void {
  const scan = new PlaneScan(index, strings);
  if (end - start <= w.capacity) {
    // The usual case: the plane fits in the window, and one Reader walks all of its fields.
    const r = w.reader(start, end - start);
    const base = w.readerBase;
    const len = r.len;
    try {
      while (r.pos < len) {
        const tag = r.uint32();
        const wire = tag & 7;
        if (tag >>> 3 === 0 || wire === 3 || wire === 4 || wire > 5) throw new ProfileFormatError(`invalid field tag ${tag}`);
        if (wire !== 2) { r.skipType(wire); continue; }
        const e = r.uint32() + r.pos;
        if (e > len) throw new RangeError('index out of range');
        r.len = e;
        scan.field(tag >>> 3, r, base);
        r.pos = e;
        r.len = len;
      }
    } catch (e) {
      throw asFormatError(w, e, base + r.pos);
    }
  } else {
    // A plane bigger than the window: field by field from the file, each with a Reader of its own.
    scan.copyBytes = true;
    for (let off = start; off < end;) {
      field(w, off, end);
      off = f.end;
      if (f.wire !== 2) continue;
      const r = w.reader(f.start, f.end - f.start);
      try {
        scan.field(f.field, r, w.readerBase);
      } catch (e) {
        throw asFormatError(w, e, w.readerBase + r.pos);
      }
    }
  }
  scan.done(grouping);
  const { view, ctx, lines } = scan;
  visitor.plane(view);
  for (let k = 0; k < lines.length; k += 2) {
    const s = lines[k];
    const r = w.reader(s, lines[k + 1] - s);
    try {
      decodeLine(r, cols, ctx.kept, ctx);
    } catch (e) {
      throw asFormatError(w, e, w.readerBase + r.pos);
    }
    visitor.line(view, cols);
  }
}

function metaInfo(m: { key: number; display: number; stats: RawStat[] }, ctx: PlaneCtx, strings: string[]): EventInfo {
  const hlo = m.stats.find((s) => s.bin && ctx.statName(s.meta) === HLO_PROTO_STAT);
  return eventInfo(strings[m.key], m.key, (n) => {
    for (const s of m.stats) if (ctx.statName(s.meta) === n) return s.ref ? ctx.statName(Number(s.value)) : s.value;
    return undefined;
  }, m.display >= 0 ? strings[m.display] : '', hlo?.bin);
}

/** protobufjs throws RangeError("index out of range") when a length runs past the end of its buffer. */
function asFormatError(w: FileWindow, e: unknown, at: number): Error {
  if (e instanceof ProfileFormatError) return w.corrupt(at, e.message);
  // protobufjs's own "at offset N" counts from the start of the read window, not of the file: replaced by `at`.
  const why = (e instanceof Error ? e.message : String(e)).replace(/ at offset \d+/, '');
  return /index out of range/.test(why) ? w.overrun(at) : w.corrupt(at, why);
}
