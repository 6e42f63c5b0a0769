/**
 * GPU steps as xprof finds them in a capture that has no Steps line: by grouping events under step annotations
 * (jax.profiler.StepTraceAnnotation, a TraceMe with `_r` and `step_num`). Rules from XLA's
 * tsl/profiler/utils/group_events.cc (EventForest, GroupTfEvents) and xprof's utils/derived_timeline.cc
 * (ProcessUngroupedEvents, DeriveStepEventsFromGroups) and convert/xplane_to_step_events.cc:
 * - A root is a host event with an `_r` stat (its root level). Roots are taken by level (higher first), then by
 *   start; one nested in (or produced by) a root of its own level is not a root of its own. Each root's group id
 *   is its rank, and it spreads to every event not yet grouped that the root reaches: events nested in it on its
 *   thread (async `_a` events excepted), consumers (`_ct`/`_c`) of a producer (`_pt`/`_p`) of the same type and
 *   id, and the device events (kernels, memsets, copies) whose `correlation_id` is that of a host launch event.
 * - On each device, events in start order with no group take the last group seen; consecutive events of one
 *   group make one step span (first start to last end). A step's time is its longest span over the devices.
 * A capture already grouped when it was written (a `group_id` stat, TensorFlow's) is left as xprof leaves it.
 *
 * What is kept, compactly (a GPU capture has as many launches and kernels as events, nearly): host events with
 * a root or context stat as nodes (few), each launch as its correlation id and nearest such node above it on its
 * line (its group is that node's: nothing else reaches a launch), and device events as spans, one per run of
 * events of one correlation id on a line (a CUDA graph's kernels share their launch's).
 * Host events that can pass no group to a device are not kept: a line's with no root and no launch, unless it
 * both consumes (can be reached) and produces (can pass on), and a host plane's that launched nothing (a TPU's).
 * Not as xprof: device events without a correlation_id are left out (CUPTI gives every kernel, memset and copy
 * one); producer and consumer pids are not compared (one process writes a capture); ids past 2^53 compare as
 * doubles; and a group whose device events are all copies is still a step (xprof asks for a compute kernel).
 */
import type { StepBreakdown } from '../../../../protocol/run-view-messages';
import { windowSteps } from './devices';
import { Kept } from './xevent';
import type { LineView, PlaneView } from './view';
import { grown } from './xplane';

/** What one analyzer kept for grouping, as plain data (crosses worker_threads). */
export interface GroupPartial {
  /** A `group_id` stat was seen: the capture was grouped when written. */
  grouped: boolean;
  /** Host nodes (events with a root or context stat): start (absolute µs), root level (0: none), parent node (-1: none). */
  nodeStart: number[];
  rootLevel: number[];
  parent: number[];
  /** Their context stats (NaN: absent). */
  producerType: number[];
  producerId: number[];
  consumerType: number[];
  consumerId: number[];
  /** Host launches: correlation id, and the node above it on its line (-1: none). */
  launchCorr: Float64Array;
  launchNode: Int32Array;
  /** Device spans: device plane index, start and end (absolute µs), correlation id. */
  devPlane: Int32Array;
  devStart: Float64Array;
  devEnd: Float64Array;
  devCorr: Float64Array;
}

/** Host line scratch: each tagged event's index on the line and grouping stats (NaN: absent), and an order. */
interface Scratch {
  ev: Int32Array; root: Float64Array; pt: Float64Array; p: Float64Array; ct: Float64Array; c: Float64Array; corr: Float64Array;
  async: Uint8Array; order: Uint32Array;
}

function newScratch(n: number): Scratch {
  return {
    ev: new Int32Array(n), root: new Float64Array(n), pt: new Float64Array(n), p: new Float64Array(n), ct: new Float64Array(n),
    c: new Float64Array(n), corr: new Float64Array(n), async: new Uint8Array(n), order: new Uint32Array(n),
  };
}

export class GroupCollector {
  private grouped = false;
  private readonly nodeStart: number[] = [];
  private readonly rootLevel: number[] = [];
  private readonly parent: number[] = [];
  private readonly producerType: number[] = [];
  private readonly producerId: number[] = [];
  private readonly consumerType: number[] = [];
  private readonly consumerId: number[] = [];
  private launches = 0;
  private launchCorr = new Float64Array(256);
  private launchNode = new Int32Array(256);
  private spans = 0;
  private devPlane = new Int32Array(256);
  private devStart = new Float64Array(256);
  private devEnd = new Float64Array(256);
  private devCorr = new Float64Array(256);
  private host = false;
  private device = false;
  private planeIndex = -1;
  private tpu = false;
  /** Nodes and launches kept before the current plane. */
  private planeNodes = 0;
  private planeLaunches = 0;
  private t = newScratch(0);

  plane(p: PlaneView): void {
    this.endPlane();
    this.host = p.name === '/host:CPU';
    this.planeNodes = this.nodeStart.length;
    this.planeLaunches = this.launches;
    this.device = p.name.startsWith('/device:GPU:');
    this.planeIndex = p.index;
    // A TPU capture is grouped otherwise (xprof's GroupTpuEventsOSS; its devices have Steps lines): its host's
    // many context events are not kept once a TPU plane was seen (they come first in TPU captures).
    this.tpu ||= p.name.startsWith('/device:TPU:');
  }

  line(l: LineView): void {
    const n = l.tagCount;
    if (n === 0 || this.tpu) return;
    let root = false, launch = false, producer = false, consumer = false;
    const kind = l.tagKind;
    for (let k = 0; k < n; k++) {
      const x = kind[k];
      if (x === Kept.Correlation) launch = true;
      else if (x === Kept.Root) root = true;
      else if (x === Kept.ProducerType) producer = true;
      else if (x === Kept.ConsumerType) consumer = true;
      else if (x === Kept.GroupId) this.grouped = true;
    }
    if (this.device) { if (launch) this.deviceLine(l); }
    // A host line with no root and no launch passes a group on only if it is reached (a consumer) and passes it
    // on (a producer); any other is no use to grouping, and its context events (a TPU host has many) are not kept.
    else if (this.host && (root || launch || (producer && consumer))) this.hostLine(l);
  }

  partial(): GroupPartial {
    this.endPlane();
    return {
      grouped: this.grouped, nodeStart: this.nodeStart, rootLevel: this.rootLevel, parent: this.parent,
      producerType: this.producerType, producerId: this.producerId, consumerType: this.consumerType, consumerId: this.consumerId,
      // Views, not copies (the collector is done): a capture's worth of launches and kernels is not held twice.
      launchCorr: this.launchCorr.subarray(0, this.launches), launchNode: this.launchNode.subarray(0, this.launches),
      devPlane: this.devPlane.subarray(0, this.spans), devStart: this.devStart.subarray(0, this.spans),
      devEnd: this.devEnd.subarray(0, this.spans), devCorr: this.devCorr.subarray(0, this.spans),
    };
  }

  /** A host plane that launched nothing can pass no group to a device: its nodes (a TPU host's) are dropped. */
  private endPlane(): void {
    if (this.host && this.launches === this.planeLaunches) {
      for (const a of [this.nodeStart, this.rootLevel, this.parent, this.producerType, this.producerId, this.consumerType, this.consumerId]) a.length = this.planeNodes;
    }
    this.host = false;
  }

  private deviceLine(l: LineView): void {
    let open = false;
    for (let k = 0; k < l.tagCount; k++) {
      if (l.tagKind[k] !== Kept.Correlation) continue;
      const i = l.tagEvent[k];
      const corr = l.tagValue[k];
      const s = (l.timestampNs + l.offsetPs[i] / 1000) / 1000;
      const e = s + l.durationPs[i] / 1e6;
      const last = this.spans - 1;
      // Events of one correlation id one after the other on a line (a graph's kernels): one span.
      if (open && this.devCorr[last] === corr && s >= this.devStart[last]) {
        if (e > this.devEnd[last]) this.devEnd[last] = e;
        continue;
      }
      const m = this.spans++;
      if (m === this.devPlane.length) {
        this.devPlane = grown(this.devPlane, m + 1); this.devStart = grown(this.devStart, m + 1);
        this.devEnd = grown(this.devEnd, m + 1); this.devCorr = grown(this.devCorr, m + 1);
      }
      this.devPlane[m] = this.planeIndex; this.devStart[m] = s; this.devEnd[m] = e; this.devCorr[m] = corr;
      open = true;
    }
  }

  /** The line's tagged events: nodes with their nearest node above them, launches with theirs (line-relative ps, exact). */
  private hostLine(l: LineView): void {
    // The tagged events' stats, one slot each (tags come grouped by event, events in line order).
    const t = this.scratch(l.tagCount);
    let nt = 0;
    for (let k = 0; k < l.tagCount; k++) {
      const i = l.tagEvent[k];
      if (nt === 0 || t.ev[nt - 1] !== i) {
        t.ev[nt] = i; t.root[nt] = 0; t.pt[nt] = NaN; t.p[nt] = NaN; t.ct[nt] = NaN; t.c[nt] = NaN; t.corr[nt] = NaN; t.async[nt] = 0;
        nt++;
      }
      const j = nt - 1;
      const v = l.tagValue[k];
      switch (l.tagKind[k] as Kept) {
        case Kept.Root: t.root[j] = v > 0 ? v : 0; break;
        case Kept.ProducerType: t.pt[j] = v; break;
        case Kept.ProducerId: t.p[j] = v; break;
        case Kept.ConsumerType: t.ct[j] = v; break;
        case Kept.ConsumerId: t.c[j] = v; break;
        case Kept.Correlation: t.corr[j] = v; break;
        case Kept.Async: t.async[j] = v !== 0 ? 1 : 0; break;
        default: break;
      }
    }
    const { offsetPs: off, durationPs: dur } = l;
    const before = (a: number, b: number): number => off[t.ev[a]] - off[t.ev[b]] || dur[t.ev[b]] - dur[t.ev[a]];
    const order = t.order.subarray(0, nt);
    let sorted = true;
    for (let j = 0; j < nt; j++) { order[j] = j; if (j && before(j - 1, j) > 0) sorted = false; }
    if (!sorted) order.sort(before);
    // Open nodes above the current event: their line-relative ends and node numbers.
    const ends: number[] = [];
    const nodes: number[] = [];
    for (const j of order) {
      const i = t.ev[j];
      const end = off[i] + dur[i];
      const async = t.async[j] === 1;
      if (!async) while (ends.length && ends[ends.length - 1] < end) { ends.pop(); nodes.pop(); }
      const above = !async && nodes.length ? nodes[nodes.length - 1] : -1;
      const isNode = t.root[j] > 0 || t.pt[j] === t.pt[j] || t.ct[j] === t.ct[j];
      if (t.corr[j] === t.corr[j]) {
        const m = this.launches++;
        if (m === this.launchCorr.length) { this.launchCorr = grown(this.launchCorr, m + 1); this.launchNode = grown(this.launchNode, m + 1); }
        this.launchCorr[m] = t.corr[j];
        this.launchNode[m] = isNode ? this.nodeStart.length : above;
      }
      if (!isNode) continue;
      const node = this.nodeStart.length;
      this.nodeStart.push((l.timestampNs + off[i] / 1000) / 1000);
      this.rootLevel.push(t.root[j]);
      this.parent.push(above);
      this.producerType.push(t.pt[j]); this.producerId.push(t.p[j]); this.consumerType.push(t.ct[j]); this.consumerId.push(t.c[j]);
      if (!async) { ends.push(end); nodes.push(node); }
    }
  }

  /** Per-event scratch for a host line of up to n tagged events (reused). */
  private scratch(n: number): Scratch {
    if (this.t.ev.length < n) {
      const m = Math.max(n, this.t.ev.length * 2);
      this.t = newScratch(m);
    }
    return this.t;
  }
}

/** A producer/consumer meeting point: the nodes of one context type and id. */
interface Context { producers: number[]; consumers: number[] }

/**
 * The steps the partials' step annotations make (partials in plane order), or undefined where there are none: no
 * root, or a capture grouped when written. `busy` (merged device-busy intervals, µs) gives each step's execute time.
 */
export function groupSteps(parts: readonly GroupPartial[], busy: ArrayLike<number>): StepBreakdown[] | undefined {
  if (parts.some((p) => p.grouped) || !parts.some((p) => p.rootLevel.some((r) => r > 0))) return undefined;
  const group = nodeGroups(parts);
  // Each launch's group is its node's; the last launch of a correlation id is the one its device events hang from.
  const launches = parts.reduce((a, p) => a + p.launchCorr.length, 0);
  const corr = new Float64Array(launches);
  const lgroup = new Int32Array(launches);
  let m = 0;
  let base = 0;
  for (const p of parts) {
    for (let k = 0; k < p.launchCorr.length; k++, m++) {
      corr[m] = p.launchCorr[k];
      lgroup[m] = p.launchNode[k] < 0 ? -1 : group[base + p.launchNode[k]];
    }
    base += p.nodeStart.length;
  }
  const groupOfCorr = corrGroups(corr, lgroup);
  // One partial's spans are used as they are; several are joined.
  const one = parts.length === 1 ? parts[0] : undefined;
  const spans = parts.reduce((a, p) => a + p.devCorr.length, 0);
  const plane = one ? one.devPlane : new Int32Array(spans);
  const s = one ? one.devStart : new Float64Array(spans);
  const e = one ? one.devEnd : new Float64Array(spans);
  const g = new Int32Array(spans);
  m = 0;
  for (const p of parts) {
    for (let k = 0; k < p.devCorr.length; k++, m++) {
      if (!one) { plane[m] = p.devPlane[k]; s[m] = p.devStart[k]; e[m] = p.devEnd[k]; }
      g[m] = groupOfCorr(p.devCorr[k]);
    }
  }
  return stepsOfDeviceGroups(plane, s, e, g, busy);
}

/**
 * The group of the last launch with each correlation id, as a function of the id (-1: none). CUPTI numbers its
 * calls from 1, so ids are usually small integers: a table indexed by id, filled in launch order (the last one
 * wins), where the largest id is not far past the number of launches; otherwise a binary search over the
 * launches ordered by id, then by order.
 */
function corrGroups(corr: Float64Array, lgroup: Int32Array): (c: number) => number {
  const n = corr.length;
  let max = 0;
  let small = true;
  for (let k = 0; k < n && small; k++) {
    const c = corr[k];
    if (!(c >= 0 && c <= 0x3fffffff && c === Math.floor(c))) small = false;
    else if (c > max) max = c;
  }
  if (small && max <= 8 * n + 65536) {
    // -2: no launch has this id (a launch's own group may be -1).
    const table = new Int32Array(max + 1).fill(-2);
    for (let k = 0; k < n; k++) table[corr[k]] = lgroup[k];
    return (c: number): number => {
      const g = c >= 0 && c <= max && c === Math.floor(c) ? table[c] : -2;
      return g === -2 ? -1 : g;
    };
  }
  const byCorr = sortedOrder(n, (a, b) => corr[a] - corr[b] || a - b);
  return (c: number): number => {
    // The last launch with correlation id c (byCorr is by id, then by order): binary search past it.
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (corr[byCorr[mid]] <= c) lo = mid + 1;
      else hi = mid;
    }
    return lo > 0 && corr[byCorr[lo - 1]] === c ? lgroup[byCorr[lo - 1]] : -1;
  };
}

/** The group of each host node (numbered across the partials in order), -1 for none. */
function nodeGroups(parts: readonly GroupPartial[]): Int32Array {
  const level: number[] = [];
  const start: number[] = [];
  const parents: number[][] = [];
  const children: number[][] = [];
  const contexts = new Map<string, Context>();
  const context = (type: number, id: number): Context => {
    const key = `${type}/${id}`;
    let c = contexts.get(key);
    if (!c) contexts.set(key, (c = { producers: [], consumers: [] }));
    return c;
  };
  for (const p of parts) {
    const base = level.length;
    for (let k = 0; k < p.nodeStart.length; k++) {
      const node = base + k;
      level.push(p.rootLevel[k]);
      start.push(p.nodeStart[k]);
      parents.push([]);
      children.push([]);
      if (p.parent[k] >= 0) { parents[node].push(base + p.parent[k]); children[base + p.parent[k]].push(node); }
      if (p.producerType[k] === p.producerType[k] && p.producerId[k] === p.producerId[k]) context(p.producerType[k], p.producerId[k]).producers.push(node);
      if (p.consumerType[k] === p.consumerType[k] && p.consumerId[k] === p.consumerId[k]) context(p.consumerType[k], p.consumerId[k]).consumers.push(node);
    }
  }
  for (const c of contexts.values()) {
    // As group_events.cc's ConnectContextGroups: a context this crowded on both sides is left unconnected.
    if (c.producers.length >= 64 && c.consumers.length >= 64) continue;
    for (const a of c.producers) for (const b of c.consumers) { children[a].push(b); parents[b].push(a); }
  }
  const group = new Int32Array(level.length).fill(-1);
  const roots = level.map((_, k) => k).filter((k) => level[k] > 0).sort((a, b) => level[b] - level[a] || start[a] - start[b]);
  let next = 0;
  for (const r of roots) {
    if (group[r] >= 0 || hasRootAncestor(r, level, parents)) continue;
    const id = next++;
    const seen = new Set<number>([r]);
    const queue = [r];
    for (let q = 0; q < queue.length; q++) {
      const node = queue[q];
      if (group[node] >= 0) continue;
      group[node] = id;
      for (const c of children[node]) if (!seen.has(c)) { seen.add(c); queue.push(c); }
    }
  }
  return group;
}

/** Whether a root of the same level reaches `r` (nesting or producer): then that one groups it. */
function hasRootAncestor(r: number, level: readonly number[], parents: readonly number[][]): boolean {
  const seen = new Set<number>([r, ...parents[r]]);
  const queue = [...parents[r]];
  for (let q = 0; q < queue.length; q++) {
    const node = queue[q];
    if (level[node] === level[r]) return true;
    for (const p of parents[node]) if (!seen.has(p)) { seen.add(p); queue.push(p); }
  }
  return false;
}

/** Step spans per device from its grouped spans (ungrouped ones take the group before them); longest span per group. */
function stepsOfDeviceGroups(plane: Int32Array, s: Float64Array, e: Float64Array, g: Int32Array, busy: ArrayLike<number>): StepBreakdown[] | undefined {
  const order = sortedOrder(s.length, (a, b) => plane[a] - plane[b] || s[a] - s[b] || e[b] - e[a]);
  const longest = new Map<number, [number, number]>();
  let at = NaN;
  let last = -1;
  let span: [number, number] | undefined;
  const close = (): void => {
    if (!span) return;
    const have = longest.get(last);
    if (!have || span[1] - span[0] > have[1] - have[0]) longest.set(last, span);
    span = undefined;
  };
  for (const k of order) {
    if (plane[k] !== at) { close(); at = plane[k]; last = -1; }
    const id = g[k] >= 0 ? g[k] : last;
    if (id < 0) continue;
    if (span && id === last) span[1] = Math.max(span[1], e[k]);
    else { close(); span = [s[k], e[k]]; }
    last = id;
  }
  close();
  const windows: number[] = [];
  for (const id of [...longest.keys()].sort((a, b) => a - b)) {
    const [ws, we] = longest.get(id) ?? [0, 0];
    if (we > ws) windows.push(ws, we);
  }
  return windows.length ? windowSteps(windows, busy) : undefined;
}

/** 0 … n−1 in the order `cmp` gives; sorted only when not already so (ids and times mostly come in order). */
function sortedOrder(n: number, cmp: (a: number, b: number) => number): Uint32Array {
  const order = new Uint32Array(n);
  let sorted = true;
  for (let k = 0; k < n; k++) { order[k] = k; if (k && sorted && cmp(k - 1, k) > 0) sorted = false; }
  return sorted ? order : order.sort(cmp);
}
