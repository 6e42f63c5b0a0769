/**
 * The narrow view of an XSpace that the analysis and the Chrome trace export consume, one line at a time.
 *
 * Why a visitor over lines and not a decoded XSpace: a 200 MB capture decoded whole (every stat of every
 * event) costs several times the file in memory. The streaming decoder (stream.ts) fills one line's columns,
 * hands them over, and reuses them for the next line; it keeps only the stats the run view shows (hlo_op,
 * hlo_module, hlo_category, flops, bytes_accessed). visitXSpace adapts an already decoded XSpaceData (tests,
 * small files) to the same interface, so there is one analysis for both paths.
 */
import { IdTable } from './intern';
import { GROUPING_STATS, groupingPlane, type Kept } from './xevent';
import { eventStat, type LineData, type PlaneData, type StatValue, type XSpaceData } from './xplane';

/** What the analysis needs of one event metadata entry, resolved once per plane (and shared by planes that name it alike). */
export interface EventInfo {
  name: string;
  /** Index of `name` in PlaneView.strings. */
  key: number;
  /** Metadata-level stats (TPU captures carry these per op, not per event). */
  category: string | undefined;
  flops: number | undefined;
  bytes: number | undefined;
  /** The op's short name on TPU (`copy-start.4`), where `name` is its whole HLO text; '' when absent. */
  displayName: string;
  /** The program_id stat, as exact decimal digits (TPU ops carry it on their metadata). */
  program: string | undefined;
  /**
   * The serialized xla.HloProto (entries of the /host:metadata plane). From the streaming decoder, a view of its
   * read window, valid only while the visitor's plane() runs (copying it was a tenth of the time on a GPU
   * capture whose programs are most of its bytes).
   */
  hloProto: Uint8Array | undefined;
}

export interface PlaneView {
  /** Position of the plane in the file (0-based). */
  index: number;
  name: string;
  /** Number of XLine fields of the plane, known before its first line is visited. */
  lineCount: number;
  /** Event metadata by id. */
  meta: IdTable<EventInfo>;
  /** The plane's own stats (a device's type and peak rates), by name. */
  stats: ReadonlyMap<string, StatValue>;
  /**
   * Interned strings: metadata names and stat string values; EventInfo.key and LineView.op/module/category
   * index into it. Several planes may share one (the streaming decoder's planes on one thread do): an index
   * names the same string in all of them, so what is derived from a string can be kept by index.
   */
  strings: string[];
}

/**
 * One line's events, columnar. The arrays may be longer than `count` (they are reused between lines): only
 * [0, count) is valid, and only during the visitor call.
 */
export interface LineView {
  name: string;
  displayName: string;
  timestampNs: number;
  count: number;
  metaId: Int32Array;
  /** Relative to timestampNs. */
  offsetPs: Float64Array;
  durationPs: Float64Array;
  /** Index into PlaneView.strings of the event's hlo_op / hlo_module / hlo_category stat, or -1. */
  op: Int32Array;
  module: Int32Array;
  category: Int32Array;
  /** The event's flops / bytes_accessed stat, or NaN. */
  flops: Float64Array;
  bytes: Float64Array;
  /** Index into PlaneView.strings of the event's program_id stat (exact decimal digits), or -1. */
  program: Int32Array;
  /**
   * The device_offset_ps / device_duration_ps stats, or NaN: TPU ops carry the device's own clock there, and
   * xprof times them by it (the event's offset and duration are the host's view, off by up to several %).
   */
  devOffsetPs: Float64Array;
  devDurationPs: Float64Array;
  /**
   * The step-grouping stats of the line's events (GROUPING_STATS), a side list since few events carry any:
   * entry k is event tagEvent[k]'s stat of kind tagKind[k] (a Kept), value tagValue[k] (NaN if not a number).
   */
  tagCount: number;
  tagEvent: Int32Array;
  tagKind: Uint8Array;
  tagValue: Float64Array;
}

export interface SpaceInfo {
  hostnames: string[];
  errors: string[];
  warnings: string[];
}

export interface XSpaceVisitor {
  /** A plane's metadata is known; its lines follow. */
  plane(p: PlaneView): void;
  line(p: PlaneView, l: LineView): void;
}

export function eventInfo(
  name: string, key: number, stat: (n: string) => StatValue | undefined, displayName = '', hloProto?: Uint8Array,
): EventInfo {
  const cat = stat('hlo_category');
  const flops = stat('flops');
  const bytes = stat('bytes_accessed');
  const program = stat('program_id');
  // Fields in the order of every other EventInfo (stream.ts's plainInfo): one object shape for the analysis's
  // lookups, which V8 otherwise compiles for one shape and throws away on meeting the other.
  return {
    name, key,
    category: typeof cat === 'string' ? cat : undefined,
    flops: typeof flops === 'number' ? flops : undefined,
    bytes: typeof bytes === 'number' ? bytes : undefined,
    displayName,
    program: program === undefined ? undefined : String(program),
    hloProto,
  };
}

/** Walks a decoded XSpace as the streaming decoder would; returns its top-level strings. */
export function visitXSpace(space: XSpaceData, v: XSpaceVisitor): SpaceInfo {
  space.planes.forEach((plane, index) => {
    const strings: string[] = [];
    const intern = new Map<string, number>();
    const str = (x: StatValue | undefined): number => {
      if (x === undefined) return -1;
      const s = String(x);
      let k = intern.get(s);
      if (k === undefined) { k = strings.length; strings.push(s); intern.set(s, k); }
      return k;
    };
    const meta = new IdTable<EventInfo>();
    for (const [id, m] of plane.eventMeta) meta.set(id, eventInfo(m.name, str(m.name), (n) => m.stats.get(n), m.displayName, m.hloProto));
    const view: PlaneView = { index, name: plane.name, lineCount: plane.lines.length, meta, strings, stats: plane.stats };
    v.plane(view);
    for (const line of plane.lines) v.line(view, lineView(plane, line, str));
  });
  return { hostnames: space.hostnames, errors: space.errors, warnings: space.warnings };
}

function lineView(plane: PlaneData, line: LineData, str: (x: StatValue | undefined) => number): LineView {
  const n = line.count;
  const l: LineView = {
    name: line.name, displayName: line.displayName, timestampNs: line.timestampNs, count: n,
    metaId: line.metaId, offsetPs: line.offsetPs, durationPs: line.durationPs,
    op: new Int32Array(n), module: new Int32Array(n), category: new Int32Array(n), flops: new Float64Array(n), bytes: new Float64Array(n),
    program: new Int32Array(n), devOffsetPs: new Float64Array(n), devDurationPs: new Float64Array(n),
    tagCount: 0, tagEvent: new Int32Array(0), tagKind: new Uint8Array(0), tagValue: new Float64Array(0),
  };
  const tags: [number, Kept, number][] = [];
  const grouping = groupingPlane(plane.name);
  const numOr = (x: StatValue | undefined): number => (typeof x === 'number' ? x : NaN);
  for (let i = 0; i < n; i++) {
    l.op[i] = str(eventStat(plane, line, i, 'hlo_op'));
    l.module[i] = str(eventStat(plane, line, i, 'hlo_module'));
    const cat = eventStat(plane, line, i, 'hlo_category');
    l.category[i] = typeof cat === 'string' ? str(cat) : -1;
    l.flops[i] = numOr(eventStat(plane, line, i, 'flops'));
    l.bytes[i] = numOr(eventStat(plane, line, i, 'bytes_accessed'));
    l.program[i] = str(eventStat(plane, line, i, 'program_id'));
    l.devOffsetPs[i] = numOr(eventStat(plane, line, i, 'device_offset_ps'));
    l.devDurationPs[i] = numOr(eventStat(plane, line, i, 'device_duration_ps'));
    if (grouping) for (const [name, kind] of GROUPING_STATS) {
      const v = eventStat(plane, line, i, name);
      if (v !== undefined) tags.push([i, kind, numOr(v)]);
    }
  }
  l.tagCount = tags.length;
  l.tagEvent = Int32Array.from(tags, (t) => t[0]);
  l.tagKind = Uint8Array.from(tags, (t) => t[1]);
  l.tagValue = Float64Array.from(tags, (t) => t[2]);
  return l;
}
