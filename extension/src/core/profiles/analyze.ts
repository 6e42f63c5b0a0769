/**
 * From a decoded XSpace to what the run view shows: step-time breakdown, op profile, and a compact
 * timeline. Plain data out (no Maps), so results can cross worker_threads and postMessage as they are.
 */
import type { OpRow, ProfileSummary, StepBreakdown, TimelineLine } from '../../../../webview/src/protocol';
import { eventStat, type LineData, type PlaneData, type XSpaceData } from './xplane';


export type { OpRow, ProfileSummary, StepBreakdown, TimelineLine };

const COMPILE = /Compile/i;
const EXECUTE = /ExecuteComputation|ExecuteReplicated/;
const TRANSFER = /TransferToDevice|TransferFromDevice|TransferToServer|TransferFromServer/;

/** Absolute start (ns) of event i. timestampNs is a double: ~256 ns precision at 2026 epochs, fine for display. */
function startNs(line: LineData, i: number): number {
  return line.timestampNs + line.offsetPs[i] / 1000;
}

/** Per-event "parent" depth for events sorted by start, with a stack of open end times. */
function depths(line: LineData, order: Uint32Array): Uint8Array {
  const d = new Uint8Array(line.count);
  const ends: number[] = [];
  for (const i of order) {
    const s = line.offsetPs[i];
    while (ends.length && ends[ends.length - 1] <= s) ends.pop();
    d[i] = Math.min(ends.length, 255);
    ends.push(s + line.durationPs[i]);
  }
  return d;
}

function sortedOrder(line: LineData): Uint32Array {
  const order = new Uint32Array(line.count);
  for (let i = 0; i < line.count; i++) order[i] = i;
  let sorted = true;
  for (let i = 1; i < line.count && sorted; i++) sorted = line.offsetPs[i - 1] <= line.offsetPs[i];
  // Longer first on equal starts, so a parent precedes the child it begins with.
  if (!sorted) order.sort((a, b) => line.offsetPs[a] - line.offsetPs[b] || line.durationPs[b] - line.durationPs[a]);
  return order;
}

/** XLA on CPU does not record hlo_category; derive a coarse one from the op name as xprof's categories read. */
function categoryFromName(op: string): string {
  const base = op.replace(/(\.clone)?(\.\d+)*(\.clone)?$/, '');
  if (base.endsWith('fusion')) return /dot|convolution/.test(base) ? 'convolution fusion' : 'loop fusion';
  if (base === 'dot' || base === 'convolution') return 'convolution';
  if (/^(copy|transpose|bitcast|reshape|broadcast|concatenate|slice|pad|gather|scatter|wrapped_scatter)/.test(base)) return 'data formatting';
  if (/^(all-reduce|all-gather|reduce-scatter|collective-permute|all-to-all)/.test(base)) return 'collective';
  if (/^reduce/.test(base)) return 'reduction';
  if (base === 'call' || base === 'while' || base === 'conditional') return 'control flow';
  return 'elementwise';
}

function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

function opProfile(plane: PlaneData, out: Map<string, OpRow>): void {
  for (const line of plane.lines) {
    const order = sortedOrder(line);
    // Self time = own duration minus the durations of direct children (events nested inside it on this line).
    const stack: { i: number; end: number; childPs: number }[] = [];
    const flush = (upTo: number): void => {
      while (stack.length && stack[stack.length - 1].end <= upTo) {
        const top = stack.pop()!;
        addOp(plane, line, top.i, top.childPs, out);
        if (stack.length) stack[stack.length - 1].childPs += line.durationPs[top.i];
      }
    };
    for (const i of order) {
      if (eventStat(plane, line, i, 'hlo_op') === undefined) continue;
      flush(line.offsetPs[i]);
      stack.push({ i, end: line.offsetPs[i] + line.durationPs[i], childPs: 0 });
    }
    flush(Infinity);
  }
}

function addOp(plane: PlaneData, line: LineData, i: number, childPs: number, out: Map<string, OpRow>): void {
  const meta = plane.eventMeta.get(line.metaId[i]);
  const name = String(eventStat(plane, line, i, 'hlo_op') ?? meta?.name ?? '?');
  const module = String(eventStat(plane, line, i, 'hlo_module') ?? '');
  const key = `${module}\u0000${name}`;
  let row = out.get(key);
  if (!row) {
    const cat = meta?.stats.get('hlo_category') ?? eventStat(plane, line, i, 'hlo_category');
    row = { name, module, category: typeof cat === 'string' ? cat : categoryFromName(name), count: 0, selfUs: 0, totalUs: 0, flops: 0, bytes: 0 };
    out.set(key, row);
  }
  const dur = line.durationPs[i];
  row.count++;
  row.totalUs += dur / 1e6;
  row.selfUs += Math.max(0, dur - childPs) / 1e6;
  row.flops += num(meta?.stats.get('flops') ?? eventStat(plane, line, i, 'flops'));
  row.bytes += num(meta?.stats.get('bytes_accessed') ?? eventStat(plane, line, i, 'bytes_accessed'));
}

/**
 * Steps are the windows between consecutive XLA program dispatches (ExecuteComputation / ExecuteReplicated):
 * torch_xla's mark_step dispatches one program per training step. StepMarker events are not used as
 * boundaries because execution is asynchronous: a step's program often starts after its marker ended,
 * inside the next marker (the trainer's final sync before stop_trace is such a marker, with nothing to run).
 */
function stepBreakdown(space: XSpaceData): StepBreakdown[] {
  const host = space.planes.find((p) => p.name.startsWith('/host:CPU'));
  if (!host) return [];
  type Iv = { s: number; e: number; kind: 'marker' | 'compile' | 'execute' | 'transfer' | 'host' };
  const ivs: Iv[] = [];
  for (const line of host.lines) {
    const order = sortedOrder(line);
    const depth = depths(line, order);
    for (let i = 0; i < line.count; i++) {
      const name = host.eventMeta.get(line.metaId[i])?.name ?? '';
      const s = startNs(line, i) / 1000;
      const e = s + line.durationPs[i] / 1e6;
      if (name === 'StepMarker') ivs.push({ s, e, kind: 'marker' });
      else if (COMPILE.test(name) && depth[i] <= 8) ivs.push({ s, e, kind: 'compile' });
      else if (EXECUTE.test(name) && depth[i] === 0) ivs.push({ s, e, kind: 'execute' });
      else if (TRANSFER.test(name)) ivs.push({ s, e, kind: 'transfer' });
      else if (/^(SyncTensorsGraphInternal|RunPostOrder|ExtractIRAndPrepareXlaData_|CollectSyncTensors)$/.test(name)) ivs.push({ s, e, kind: 'host' });
    }
  }
  const device = deviceBusy(space);
  // An execution dispatched before the capture's first StepMarker belongs to a step that began before the
  // capture (dispatch is asynchronous, so the previous step's program can start just after tracing did): partial, left out.
  const firstMarker = Math.min(...ivs.filter((v) => v.kind === 'marker').map((v) => v.s));
  const starts = ivs.filter((v) => v.kind === 'execute' && !(v.s < firstMarker)).map((v) => v.s).sort((a, b) => a - b);
  const lastEnd = Math.max(device.at(-1) ?? 0, ...ivs.filter((v) => v.kind === 'execute').map((v) => v.e));
  const steps: StepBreakdown[] = [];
  for (let k = 0; k < starts.length; k++) {
    const win = { s: starts[k], e: k + 1 < starts.length ? starts[k + 1] : lastEnd };
    const sum = (kind: Iv['kind']): number => ivs.filter((v) => v.kind === kind && v.s >= win.s && v.s < win.e).reduce((a, v) => a + (Math.min(v.e, win.e) - v.s), 0);
    // Executing is asynchronous on the host (ExecuteComputation only dispatches): the time the device spent is
    // the union of HLO op intervals in the window, on every device or XLA thread.
    const executeUs = Math.max(overlap(device, win.s, win.e), sum('execute'));
    const compileUs = sum('compile');
    const transferUs = sum('transfer');
    const totalUs = win.e - win.s;
    // Compile runs inside SyncTensorsGraphInternal: count it once, as compile.
    const hostUs = Math.max(0, sum('host') - compileUs);
    steps.push({ index: k + 1, startUs: win.s, totalUs, compileUs, executeUs, transferUs, hostUs, otherUs: Math.max(0, totalUs - compileUs - executeUs - transferUs - hostUs) });
  }
  return steps;
}

/** Merged [start, end] µs intervals in which any HLO op ran, anywhere in the capture. */
function deviceBusy(space: XSpaceData): number[] {
  const iv: [number, number][] = [];
  for (const plane of space.planes) {
    const hloOp = [...plane.statMeta.values()].find((m) => m.name === 'hlo_op')?.id;
    if (hloOp === undefined) continue;
    for (const line of plane.lines) {
      for (let i = 0; i < line.count; i++) {
        for (let k = line.statStart[i]; k < line.statStart[i + 1]; k++) {
          if (line.statMeta[k] !== hloOp) continue;
          const s = startNs(line, i) / 1000;
          iv.push([s, s + line.durationPs[i] / 1e6]);
          break;
        }
      }
    }
  }
  iv.sort((a, b) => a[0] - b[0]);
  const merged: number[] = [];
  for (const [s, e] of iv) {
    const n = merged.length;
    if (n && s <= merged[n - 1]) merged[n - 1] = Math.max(merged[n - 1], e);
    else merged.push(s, e);
  }
  return merged;
}

/** Length of [s, e) covered by the merged intervals (flat [s0, e0, s1, e1, ...]). */
function overlap(merged: number[], s: number, e: number): number {
  let total = 0;
  for (let k = 0; k < merged.length; k += 2) {
    const a = Math.max(s, merged[k]);
    const b = Math.min(e, merged[k + 1]);
    if (b > a) total += b - a;
  }
  return total;
}

/** Events shorter than this are left out of the timeline when a capture is huge; the op profile still counts them. */
const TIMELINE_MAX_EVENTS = 4_000_000;

function timeline(space: XSpaceData, t0Us: number): ProfileSummary['timeline'] {
  const names: string[] = [];
  const index = new Map<string, number>();
  const lines: TimelineLine[] = [];
  for (const plane of space.planes) {
    for (const line of plane.lines) {
      if (line.count === 0) continue;
      const order = sortedOrder(line);
      const depth = depths(line, order);
      const tl: TimelineLine = {
        plane: plane.name, name: line.displayName || line.name,
        start: new Float64Array(line.count), dur: new Float64Array(line.count), name_: new Int32Array(line.count), depth: new Uint8Array(line.count),
      };
      let k = 0;
      for (const i of order) {
        const n = plane.eventMeta.get(line.metaId[i])?.name ?? '?';
        let id = index.get(n);
        if (id === undefined) { id = names.length; names.push(n); index.set(n, id); }
        tl.start[k] = startNs(line, i) / 1000 - t0Us;
        tl.dur[k] = line.durationPs[i] / 1e6;
        tl.name_[k] = id;
        tl.depth[k] = depth[i];
        k++;
      }
      lines.push(tl);
    }
  }
  return { names, lines };
}

export function analyzeXSpace(space: XSpaceData): ProfileSummary {
  let eventCount = 0;
  let t0 = Infinity;
  let t1 = -Infinity;
  for (const p of space.planes) {
    for (const l of p.lines) {
      eventCount += l.count;
      for (let i = 0; i < l.count; i++) {
        const s = startNs(l, i) / 1000;
        if (s < t0) t0 = s;
        const e = s + l.durationPs[i] / 1e6;
        if (e > t1) t1 = e;
      }
    }
  }
  if (!Number.isFinite(t0)) { t0 = 0; t1 = 0; }
  const ops = new Map<string, OpRow>();
  for (const p of space.planes) opProfile(p, ops);
  const warnings = [...space.errors, ...space.warnings];
  const steps = stepBreakdown(space).map((s) => ({ ...s, startUs: s.startUs - t0 }));
  const tl = eventCount <= TIMELINE_MAX_EVENTS ? timeline(space, t0) : { names: [], lines: [] };
  if (eventCount > TIMELINE_MAX_EVENTS) warnings.push(`The capture has ${eventCount} events; the timeline shows none above ${TIMELINE_MAX_EVENTS}. Export the Chrome trace to see them in Perfetto.`);
  return {
    hosts: space.hostnames,
    planes: space.planes.map((p) => ({ name: p.name, lines: p.lines.length, events: p.lines.reduce((a, l) => a + l.count, 0) })),
    eventCount,
    spanUs: t1 - t0,
    steps,
    ops: [...ops.values()].sort((a, b) => b.selfUs - a.selfUs),
    timeline: tl,
    warnings,
  };
}
