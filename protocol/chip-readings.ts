/**
 * What the run view's Chips panel and `tpw top` show of each worker's TPU chips: one reading per chip, from libtpu's
 * runtime metrics service (tpu-metric-service.ts), in tpu-info's units. Plain data and pure functions, so the
 * webview (a browser) and the terminal name the same idlest chip and fullest HBM.
 */

/** One chip of one worker. Figures a libtpu does not serve are null. */
export interface ChipReading {
  chip: number;
  /** tpu.runtime.tensorcore.dutycycle.percent */
  dutyCyclePct: number;
  /** tpu.runtime.hbm.memory.usage.bytes and .total.bytes, summed over the chip's devices. */
  hbmUsedBytes: number;
  hbmTotalBytes: number;
  /** tpu.runtime.hbm.utilization.percent (bandwidth) */
  hbmBandwidthPct: number | null;
  /** tpu.runtime.tensorcore.idle_duration.seconds */
  idleSeconds: number | null;
  /** hlo.queue.size.gauge */
  queueSize: number | null;
  /** hlo.execution.timing.distribution.microseconds: mean and p50/p90 as tpu-info interpolates them. */
  execMeanUs: number | null;
  execP50Us: number | null;
  execP90Us: number | null;
}

/**
 * How a worker's last attempt to read its chips went:
 * - ok: read;
 * - no-libtpu: the worker answered, but nothing listens on its localhost:8431 (no program has libtpu loaded);
 * - unreachable: the worker itself could not be reached over SSH;
 * - timeout: the service did not answer within the deadline;
 * - bad-reply: it answered something that is not libtpu's metrics (a gRPC error, bytes that do not decode).
 */
export type WorkerChipsState = 'ok' | 'no-libtpu' | 'unreachable' | 'timeout' | 'bad-reply';

export interface WorkerChips {
  worker: number;
  state: WorkerChipsState;
  /** Unix time (ms) of the reading or of the failed attempt. */
  at: number;
  /** The chips read; empty when the attempt failed. */
  chips: ChipReading[];
  /** Why the attempt failed, in a sentence. */
  detail?: string;
}

/** What a state says in a table cell or a panel's subtitle. */
export const CHIPS_STATE_LABEL: Record<WorkerChipsState, string> = {
  ok: 'ok',
  'no-libtpu': 'no TPU program (libtpu metrics not served)',
  unreachable: 'not answering (SSH)',
  timeout: 'not answering (metrics timed out)',
  'bad-reply': 'bad reply from libtpu metrics',
};

export interface ChipRef {
  worker: number;
  chip: number;
}

/** The chip with the lowest duty cycle among the workers read (ties: the first worker, then the first chip). */
export function idlestChip(workers: readonly WorkerChips[]): (ChipRef & { dutyCyclePct: number }) | undefined {
  let best: (ChipRef & { dutyCyclePct: number }) | undefined;
  for (const w of workers) {
    if (w.state !== 'ok') continue;
    for (const c of w.chips) if (!best || c.dutyCyclePct < best.dutyCyclePct) best = { worker: w.worker, chip: c.chip, dutyCyclePct: c.dutyCyclePct };
  }
  return best;
}

/** The chip whose HBM is fullest (by share of its total), among the workers read. */
export function fullestHbm(workers: readonly WorkerChips[]): (ChipRef & { usedBytes: number; totalBytes: number }) | undefined {
  let best: (ChipRef & { usedBytes: number; totalBytes: number; share: number }) | undefined;
  for (const w of workers) {
    if (w.state !== 'ok') continue;
    for (const c of w.chips) {
      const share = c.hbmTotalBytes > 0 ? c.hbmUsedBytes / c.hbmTotalBytes : 0;
      if (!best || share > best.share) best = { worker: w.worker, chip: c.chip, usedBytes: c.hbmUsedBytes, totalBytes: c.hbmTotalBytes, share };
    }
  }
  return best && { worker: best.worker, chip: best.chip, usedBytes: best.usedBytes, totalBytes: best.totalBytes };
}

/** Bytes as tpu-info prints HBM: GiB with two decimals. */
export function gib(bytes: number): string {
  return `${(bytes / 2 ** 30).toFixed(2)} GiB`;
}

/** A worker's mean duty cycle and summed HBM in use, for the Metrics tab's "duty cycle" and "HBM" series. */
export function workerTotals(w: WorkerChips): { dutyCyclePct: number; hbmUsedBytes: number } | undefined {
  if (w.state !== 'ok' || w.chips.length === 0) return undefined;
  return {
    dutyCyclePct: w.chips.reduce((a, c) => a + c.dutyCyclePct, 0) / w.chips.length,
    hbmUsedBytes: w.chips.reduce((a, c) => a + c.hbmUsedBytes, 0),
  };
}

/** The line above the Chips tab's grid and under `tpw top`'s table: the idlest chip, the fullest HBM, who was not read. */
export function chipsSummaryLine(workers: readonly WorkerChips[]): string {
  const idle = idlestChip(workers);
  const full = fullestHbm(workers);
  const down = workers.filter((w) => w.state !== 'ok').map((w) => `w${w.worker}`);
  const parts: string[] = [];
  if (idle) parts.push(`Idlest chip: w${idle.worker} chip ${idle.chip} (${idle.dutyCyclePct.toFixed(1)}%)`);
  if (full) parts.push(`Fullest HBM: w${full.worker} chip ${full.chip} (${gib(full.usedBytes)} / ${gib(full.totalBytes)})`);
  if (down.length) parts.push(`Not read: ${down.join(', ')}`);
  return parts.join(' · ');
}
