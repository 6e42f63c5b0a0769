/**
 * From an XSpace to what the run view shows: step-time breakdown, op profile, and a compact timeline.
 * Plain data out (no Maps), so results can cross worker_threads and postMessage as they are.
 *
 * The analysis is one pass over the lines (an XSpaceVisitor): each line is sorted once (captures are almost
 * always already in order, then nothing is sorted), and the same walk computes nesting depth, self time of
 * HLO ops, device-busy intervals, step intervals and the timeline columns. Nothing per event is kept but the
 * timeline's four columns, so it runs on the streaming decoder without holding the capture.
 */
import type { OpRow, ProfileSummary, StepBreakdown, TimelineLine } from '../../../../protocol/run-view-messages';
import { IntervalUnion } from './intervals';
import { ColumnSlabs } from './slabs';
import { Kind, kindOf, StepIntervals, stepBreakdown } from './steps';
import { IdTable } from './intern';
import { streamXSpaceFile, type StreamOptions } from './stream';
import { visitXSpace, type EventInfo, type LineView, type PlaneView, type SpaceInfo, type XSpaceVisitor } from './view';
import { grown, type XSpaceData } from './xplane';
import { mergeOps, OpStats, type OpPartial } from './op-stats';
import { DeviceStats, deviceSteps, overviewOf, type DevicePartial } from './devices';
import { GroupCollector, groupSteps, type GroupPartial } from './step-groups';

/** Device lines whose events are not op executions (their spans would count a device busy twice or wrongly). */
const NOT_BUSY_LINES = new Set(['XLA Modules', 'Async XLA Ops', 'XLA TraceMe', 'Steps']);

export type { OpRow, ProfileSummary, StepBreakdown, TimelineLine };

/** Events shorter than this are left out of the timeline when a capture is huge; the op profile still counts them. */
export const TIMELINE_MAX_EVENTS = 4_000_000;

/**
 * What an Analyzer saw of some of the planes (all of them, or one thread's share), in plain data: op sums in
 * raw units (5 per row: count, total ps, self ps, flops, bytes), timeline starts in absolute µs.
 */
export interface PartialSummary {
  eventCount: number;
  t0: number;
  t1: number;
  planes: ProfileSummary['planes'];
  ops: OpPartial;
  devices: DevicePartial;
  names: string[];
  /** undefined once the events passed TIMELINE_MAX_EVENTS. */
  timeline: TimelineLine[] | undefined;
  /** Index of the first /host:CPU plane seen, or -1; its step intervals are stepS/stepE (by Kind). */
  hostIndex: number;
  stepS: number[][];
  stepE: number[][];
  /** Union of the intervals in which an HLO op ran on a device, flat [s0, e0, s1, e1, ...], sorted. */
  busy: Float64Array;
  /** The same on host planes (XLA on CPU); used only when no device ran an op. */
  hostBusy: Float64Array;
  /** What xprof's step grouping reads (step annotations, launches, kernels' correlation ids). */
  groups: GroupPartial;
}

/** The timeline columns' buffers, each once (columns share slabs), to transfer (not copy) a summary across threads. */
export function timelineBuffers(lines: readonly TimelineLine[]): ArrayBuffer[] {
  return [...new Set(lines.flatMap((l) => [l.start.buffer, l.dur.buffer, l.name_.buffer, l.depth.buffer] as ArrayBuffer[]))];
}

/** What the analysis collects besides the op table, steps and overview. */
export interface AnalyzeOptions extends StreamOptions {
  /** false: no timeline columns (`tpw profile` shows none: less memory and time on a big capture). Default true. */
  timeline?: boolean;
}

/** The summary of partials that cover consecutive planes, in plane order (`timeline` false: they collected none, by request). */
export function mergePartials(parts: PartialSummary[], info: SpaceInfo, timeline = true): ProfileSummary {
  let eventCount = 0;
  let t0 = Infinity;
  let t1 = -Infinity;
  const planes: ProfileSummary['planes'] = [];
  let host: PartialSummary | undefined;
  for (const p of parts) {
    eventCount += p.eventCount;
    t0 = Math.min(t0, p.t0);
    t1 = Math.max(t1, p.t1);
    planes.push(...p.planes);
    if (p.hostIndex >= 0 && (!host || p.hostIndex < host.hostIndex)) host = p;
  }
  if (!Number.isFinite(t0)) { t0 = 0; t1 = 0; }
  const unattributedKernels: ProfileSummary['unattributedKernels'] = { count: 0, selfUs: 0, names: {} };
  const ops = mergeOps(parts.map((p) => p.ops), unattributedKernels);
  const anyDevice = parts.some((p) => p.busy.length > 0);
  const u = new IntervalUnion();
  for (const p of parts) u.pushRun(anyDevice ? p.busy : p.hostBusy);
  const busy = u.result();
  // Steps as xprof finds them: a device's own Steps line first, else the device work step annotations group
  // (GPU), else the host's program dispatches (torch_xla).
  const stepLines = parts.flatMap((p) => p.devices.steps);
  const deviceWindows = stepLines.length ? stepLines : undefined;
  const grouped = deviceWindows ? undefined : groupSteps(parts.map((p) => p.groups), busy);
  const hostSteps = host && !deviceWindows && !grouped ? stepBreakdown({ s: host.stepS, e: host.stepE }, busy) : [];
  const rawSteps = deviceWindows ? deviceSteps(deviceWindows, busy) : grouped ?? hostSteps;
  const steps = rawSteps.map((s) => ({ ...s, startUs: s.startUs - t0 }));
  const stepSource = deviceWindows ? 'device' : grouped ? 'annotations' : steps.length ? 'host' : 'none';
  const overview = overviewOf(parts.map((p) => p.devices), Math.max(1, info.hostnames.length), ops, stepSource);
  const warnings = [...info.errors, ...info.warnings];
  const tl: ProfileSummary['timeline'] = { names: [], lines: [] };
  if (!timeline) {
    // None asked for: nothing to warn about.
  } else if (eventCount <= TIMELINE_MAX_EVENTS && parts.every((p) => p.timeline)) {
    const ids = new Map<string, number>();
    for (const p of parts) {
      // Name ids are per part: renumber into one table (the first part's are already in order).
      const remap = p.names.map((n) => {
        let id = ids.get(n);
        if (id === undefined) { id = tl.names.length; tl.names.push(n); ids.set(n, id); }
        return id;
      });
      const identity = remap.every((id, k) => id === k);
      for (const line of p.timeline ?? []) {
        for (let k = 0; k < line.start.length; k++) line.start[k] -= t0;
        if (!identity) for (let k = 0; k < line.name_.length; k++) line.name_[k] = remap[line.name_[k]];
        tl.lines.push(line);
      }
    }
  } else {
    warnings.push(`The capture has ${eventCount} events; the timeline shows none above ${TIMELINE_MAX_EVENTS}. Export the Chrome trace to see them in Perfetto.`);
  }
  return {
    hosts: info.hostnames, planes, eventCount, spanUs: t1 - t0, steps,
    ops, unattributedKernels, overview,
    timeline: tl, warnings,
  };
}

export class Analyzer implements XSpaceVisitor {
  private eventCount = 0;
  private t0 = Infinity;
  private t1 = -Infinity;
  private readonly ops = new OpStats();
  private readonly devices = new DeviceStats();
  private readonly groups = new GroupCollector();
  /** The current line's merged busy intervals, when it is a device's (per-device busy time for the overview). */
  private lineBusy: number[] = [];
  private readonly planes: ProfileSummary['planes'] = [];
  private names: string[] = [];
  private readonly nameIndex = new Map<string, number>();
  private timeline: TimelineLine[] | undefined;
  /** Steps come from the first /host:CPU plane. */
  private hostIndex = -1;
  private readonly stepIv = new StepIntervals();
  /** Intervals in which an HLO op ran: one sorted run per line. */
  private readonly busy = new IntervalUnion();
  /** The plane being visited's metadata. */
  private meta = new IdTable<EventInfo>();
  /** The string table of the planes seen last; the caches below are by its keys, kept while it is the same. */
  private strings: string[] | undefined;
  /** Timeline name id by name key (-1: not resolved yet), across the planes that share a string table. */
  private nameOfKey = new Int32Array(1024).fill(-1);
  /** Timeline name id by metadata id on the current plane (-1: not resolved yet): one load per event. */
  private nameOfMeta = new Int32Array(1024).fill(-1);
  /** nameOfMeta's entries past this are all -1 (what a new plane must reset). */
  private nameOfMetaUsed = 0;
  /**
   * Step-interval kind by name key (-1: not known yet), across the planes that share a string table. Typed and
   * by key: a plain array written at metadata ids (thousands, in any order) turned into a slow dictionary.
   */
  private kindOfKey = new Int8Array(1024).fill(-1);
  // Scratch reused across lines.
  private order = new Uint32Array(1024);
  private depthEnd = new Float64Array(64);
  private readonly hostBusy = new IntervalUnion();

  /**
   * keepTimeline false: collect no timeline (a chunk of a capture already known to be past TIMELINE_MAX_EVENTS).
   * slabs: where the timeline columns are cut from (shared by the analyzers of one thread).
   */
  constructor(keepTimeline = true, private readonly slabs = new ColumnSlabs()) {
    this.timeline = keepTimeline ? [] : undefined;
  }

  plane(p: PlaneView): void {
    this.planes.push({ name: p.name, lines: p.lineCount, events: 0 });
    if (this.hostIndex < 0 && p.name.startsWith('/host:CPU')) this.hostIndex = p.index;
    this.meta = p.meta;
    this.nameOfMeta.fill(-1, 0, this.nameOfMetaUsed);
    this.nameOfMetaUsed = 0;
    if (p.strings !== this.strings) {
      this.strings = p.strings;
      this.nameOfKey.fill(-1);
      this.kindOfKey.fill(-1);
    }
    this.ops.plane(p);
    this.devices.plane(p);
    this.groups.plane(p);
  }

  line(p: PlaneView, l: LineView): void {
    const n = l.count;
    if (n === 0) return;
    this.planes[this.planes.length - 1].events += n;
    this.eventCount += n;
    if (this.timeline && this.eventCount > TIMELINE_MAX_EVENTS) {
      this.timeline = undefined;
      this.names = [];
    }
    const order = this.sortedOrder(l);
    // Hoisted into locals: the loop runs once per event of the capture, and calls out would otherwise make the
    // compiler reload every field.
    const tl: TimelineLine | undefined = this.timeline && {
      plane: p.name, name: l.displayName || l.name,
      start: this.slabs.f64.take(n), dur: this.slabs.f64.take(n), name_: this.slabs.i32.take(n), depth: this.slabs.u8.take(n),
    };
    if (tl) this.timeline?.push(tl);
    const tStart = tl?.start, tDur = tl?.dur, tName = tl?.name_, tDepth = tl?.depth;
    const isHost = p.index === this.hostIndex;
    const device = p.name.startsWith('/device:');
    // Busy: a device's op executions (every event of TPU's XLA Ops line, GPU kernels naming an HLO op), or on a
    // host, its op events (XLA on CPU); launch events only count where no device ran anything (mergePartials).
    const allOps = device && l.name === 'XLA Ops';
    const busyOn = device ? (allOps || !NOT_BUSY_LINES.has(l.name) ? this.busy : undefined) : this.hostBusy;
    const { offsetPs, durationPs, op, metaId, timestampNs } = l;
    let depthEnd = this.depthEnd;
    const nameOfMeta = this.nameOfMeta;
    let dTop = 0;
    let busyS = NaN, busyE = NaN;
    let t0 = this.t0, t1 = this.t1;
    for (let k = 0; k < n; k++) {
      const i = order ? order[k] : k;
      const off = offsetPs[i];
      const dur = durationPs[i];
      while (dTop && depthEnd[dTop - 1] <= off) dTop--;
      const depth = dTop < 255 ? dTop : 255;
      if (dTop === depthEnd.length) depthEnd = this.depthEnd = grown(depthEnd, dTop + 1);
      depthEnd[dTop++] = off + dur;
      const sUs = (timestampNs + off / 1000) / 1000;
      const eUs = sUs + dur / 1e6;
      if (sUs < t0) t0 = sUs;
      if (eUs > t1) t1 = eUs;
      if (tStart && tDur && tName && tDepth) {
        tStart[k] = sUs;
        tDur[k] = dur / 1e6;
        const m = metaId[i];
        const id = m >= 0 && m < nameOfMeta.length ? nameOfMeta[m] : -1;
        tName[k] = id >= 0 ? id : this.nameId(m);
        tDepth[k] = depth;
      }
      if (isHost) {
        const kind = this.kindOfMeta(metaId[i]);
        if (kind !== Kind.None && (kind !== Kind.Compile || depth <= 8) && (kind !== Kind.Execute || depth === 0)) this.stepIv.add(kind, sUs, eUs);
      }
      if (!busyOn || (!allOps && op[i] < 0)) continue;
      // Busy intervals, merged along the line (events come sorted by start).
      if (sUs <= busyE) { if (eUs > busyE) busyE = eUs; }
      else {
        if (busyE === busyE) {
          busyOn.push(busyS, busyE);
          if (device) this.lineBusy.push(busyS, busyE);
        }
        busyS = sUs;
        busyE = eUs;
      }
    }
    if (busyOn) {
      if (busyE === busyE) {
        busyOn.push(busyS, busyE);
        if (device) this.lineBusy.push(busyS, busyE);
      }
      busyOn.endRun();
    }
    if (this.lineBusy.length) {
      this.devices.busyRun(this.lineBusy);
      this.lineBusy = [];
    }
    this.devices.line(l);
    this.groups.line(l);
    this.t0 = t0;
    this.t1 = t1;
    this.ops.line(p, l);
  }

  /** What this analyzer saw, as plain data (it crosses worker_threads; mergePartials makes the summary). */
  partial(): PartialSummary {
    return {
      eventCount: this.eventCount, t0: this.t0, t1: this.t1, planes: this.planes,
      ops: this.ops.partial(),
      devices: this.devices.partial(),
      names: this.names, timeline: this.timeline, hostIndex: this.hostIndex,
      stepS: this.stepIv.s, stepE: this.stepIv.e,
      // Merged here, on the thread that collected them: the union is usually far shorter than the list.
      busy: this.busy.result(),
      hostBusy: this.hostBusy.result(),
      groups: this.groups.partial(),
    };
  }

  /** Events in start order, longer first on equal starts (a parent precedes the child it begins with); undefined when already so. */
  private sortedOrder(l: LineView): Uint32Array | undefined {
    const { offsetPs: o, durationPs: d, count: n } = l;
    let sorted = true;
    for (let i = 1; i < n && sorted; i++) sorted = o[i - 1] < o[i] || (o[i - 1] === o[i] && d[i - 1] >= d[i]);
    if (sorted) return undefined;
    if (this.order.length < n) this.order = new Uint32Array(Math.max(n, this.order.length * 2));
    const order = this.order.subarray(0, n);
    for (let i = 0; i < n; i++) order[i] = i;
    return order.sort((a, b) => o[a] - o[b] || d[b] - d[a]);
  }

  /** The timeline name id of an event's metadata, cached by the name's key. */
  private nameId(metaId: number): number {
    const info = this.meta.get(metaId);
    const key = info ? info.key : -1;
    let id = key >= 0 && key < this.nameOfKey.length ? this.nameOfKey[key] : -1;
    if (id < 0) id = this.newNameId(info, key);
    // Cached by metadata id for the rest of the plane (not past the first 16 M ids; a line's loop holds the array).
    if (metaId >= 0 && metaId < this.nameOfMeta.length) {
      this.nameOfMeta[metaId] = id;
      this.nameOfMetaUsed = Math.max(this.nameOfMetaUsed, metaId + 1);
    } else if (metaId >= this.nameOfMeta.length && metaId < 1 << 24) {
      // Grown for the next line (the current one keeps the array it started with).
      this.nameOfMeta = grown(this.nameOfMeta, metaId + 1, -1);
      this.nameOfMeta[metaId] = id;
      this.nameOfMetaUsed = Math.max(this.nameOfMetaUsed, metaId + 1);
    }
    return id;
  }

  private newNameId(info: EventInfo | undefined, key: number): number {
    const name = info?.name ?? '?';
    let id = this.nameIndex.get(name) ?? -1;
    if (id < 0 || this.names[id] !== name) {
      id = this.names.length;
      this.names.push(name);
      this.nameIndex.set(name, id);
    }
    if (key >= 0 && key < 1 << 24) {
      this.nameOfKey = grown(this.nameOfKey, key + 1, -1);
      this.nameOfKey[key] = id;
    }
    return id;
  }

  private kindOfMeta(metaId: number): Kind {
    const info = this.meta.get(metaId);
    const key = info ? info.key : -1;
    if (key >= 0 && key < this.kindOfKey.length && this.kindOfKey[key] >= 0) return this.kindOfKey[key] as Kind;
    const k = kindOf(info?.name ?? '');
    if (key >= 0 && key < 1 << 24) {
      this.kindOfKey = grown(this.kindOfKey, key + 1, -1);
      this.kindOfKey[key] = k;
    }
    return k;
  }
}

/** Analyzes an already decoded XSpace (tests, small files). */
export function analyzeXSpace(space: XSpaceData): ProfileSummary {
  const a = new Analyzer();
  const info = visitXSpace(space, a);
  return mergePartials([a.partial()], info);
}

/** Streams `file` through the analysis without holding it in memory (what the extension's worker runs). */
export function analyzeProfileFile(file: string, opts: AnalyzeOptions = {}): ProfileSummary {
  const timeline = opts.timeline !== false;
  const a = new Analyzer(timeline);
  const info = streamXSpaceFile(file, a, opts);
  return mergePartials([a.partial()], info, timeline);
}
