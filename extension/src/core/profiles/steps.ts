/**
 * Step-time breakdown from the host plane's intervals and the device-busy intervals. Steps are the windows
 * between consecutive XLA program dispatches (ExecuteComputation / ExecuteReplicated): torch_xla's mark_step
 * dispatches one program per training step. StepMarker events are not used as boundaries because execution
 * is asynchronous: a step's program often starts after its marker ended, inside the next marker (the
 * trainer's final sync before stop_trace is such a marker, with nothing to run).
 */
import type { StepBreakdown } from '../../../../protocol/run-view-messages';

export enum Kind { None = 0, Marker, Compile, Execute, Transfer, Host }

const COMPILE = /Compile/i;
const EXECUTE = /ExecuteComputation|ExecuteReplicated/;
const TRANSFER = /TransferToDevice|TransferFromDevice|TransferToServer|TransferFromServer/;
const HOST = /^(SyncTensorsGraphInternal|RunPostOrder|ExtractIRAndPrepareXlaData_|CollectSyncTensors)$/;

/** The kind an event name may have; depth limits (compile ≤ 8, execute = 0) are applied by the caller. */
export function kindOf(name: string): Kind {
  if (name === 'StepMarker') return Kind.Marker;
  if (COMPILE.test(name)) return Kind.Compile;
  if (EXECUTE.test(name)) return Kind.Execute;
  if (TRANSFER.test(name)) return Kind.Transfer;
  if (HOST.test(name)) return Kind.Host;
  return Kind.None;
}

/** Interval starts and ends (µs) by Kind. */
export interface StepLists { s: number[][]; e: number[][] }

/** Intervals (µs) per kind, appended in any order. */
export class StepIntervals {
  readonly s: number[][] = [[], [], [], [], [], []];
  readonly e: number[][] = [[], [], [], [], [], []];

  add(kind: Kind, s: number, e: number): void {
    this.s[kind].push(s);
    this.e[kind].push(e);
  }
}

/** First index k with a[k] >= x (a sorted). */
function lowerBound(a: ArrayLike<number>, x: number, stride = 1, at = 0): number {
  let lo = 0;
  let hi = Math.floor(a.length / stride);
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid * stride + at] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Length of [s, e) covered by the merged intervals (flat, sorted). */
function overlap(merged: ArrayLike<number>, s: number, e: number): number {
  let total = 0;
  for (let k = lowerBound(merged, s, 2, 1) * 2; k < merged.length && merged[k] < e; k += 2) {
    const a = Math.max(s, merged[k]);
    const b = Math.min(e, merged[k + 1]);
    if (b > a) total += b - a;
  }
  return total;
}

/** Intervals of one kind sorted by start, for window sums. */
function sortedKind(iv: StepLists, kind: Kind): { s: Float64Array; e: Float64Array } {
  const n = iv.s[kind].length;
  const order = Array.from({ length: n }, (_, k) => k).sort((a, b) => iv.s[kind][a] - iv.s[kind][b]);
  return { s: Float64Array.from(order, (k) => iv.s[kind][k]), e: Float64Array.from(order, (k) => iv.e[kind][k]) };
}

/** Steps from the host intervals; `busy` = merged intervals in which any HLO op ran, anywhere in the capture. */
export function stepBreakdown(iv: StepLists, busy: ArrayLike<number>): StepBreakdown[] {
  // An execution dispatched before the capture's first StepMarker belongs to a step that began before the
  // capture (dispatch is asynchronous, so the previous step's program can start just after tracing did): partial, left out.
  let firstMarker = Infinity;
  for (const s of iv.s[Kind.Marker]) firstMarker = Math.min(firstMarker, s);
  const starts = iv.s[Kind.Execute].filter((s) => !(s < firstMarker)).sort((a, b) => a - b);
  let lastEnd = busy.length ? busy[busy.length - 1] : 0;
  for (const e of iv.e[Kind.Execute]) lastEnd = Math.max(lastEnd, e);
  const byKind = [Kind.Compile, Kind.Execute, Kind.Transfer, Kind.Host].map((k) => sortedKind(iv, k));
  const [compile, execute, transfer, host] = byKind;
  const sum = (k: { s: Float64Array; e: Float64Array }, ws: number, we: number): number => {
    let total = 0;
    for (let j = lowerBound(k.s, ws); j < k.s.length && k.s[j] < we; j++) total += Math.min(k.e[j], we) - k.s[j];
    return total;
  };
  const steps: StepBreakdown[] = [];
  for (let k = 0; k < starts.length; k++) {
    const ws = starts[k];
    const we = k + 1 < starts.length ? starts[k + 1] : lastEnd;
    // Executing is asynchronous on the host (ExecuteComputation only dispatches): the time the device spent is
    // the union of HLO op intervals in the window, on every device or XLA thread.
    const executeUs = Math.max(overlap(busy, ws, we), sum(execute, ws, we));
    const compileUs = sum(compile, ws, we);
    const transferUs = sum(transfer, ws, we);
    const totalUs = we - ws;
    // Compile runs inside SyncTensorsGraphInternal: count it once, as compile.
    const hostUs = Math.max(0, sum(host, ws, we) - compileUs);
    steps.push({ index: k + 1, startUs: ws, totalUs, compileUs, executeUs, transferUs, hostUs, otherUs: Math.max(0, totalUs - compileUs - executeUs - transferUs - hostUs) });
  }
  return steps;
}
