import { chipsSummaryLine, CHIPS_STATE_LABEL, gib, type ChipReading, type WorkerChips } from '../../../../protocol/chip-readings';

/**
 * `tpw top`'s table: a row per chip of every worker, with tpu-info's columns and units (duty cycle in percent, HBM
 * in GiB as used / total) plus what tpu-info prints in its other tables (HBM bandwidth, idle time, HLO queue and
 * execution time), a line for a worker that was not read, and the Chips tab's summary line under it.
 */

const HEAD = ['WORKER', 'CHIP', 'DUTY CYCLE', 'HBM USAGE', 'HBM BW', 'IDLE', 'QUEUE', 'HLO P50'];

function opt(v: number | null, fmt: (n: number) => string): string {
  return v === null ? '-' : fmt(v);
}

function us(v: number): string {
  return v >= 1e6 ? `${(v / 1e6).toFixed(2)} s` : v >= 1e3 ? `${(v / 1e3).toFixed(2)} ms` : `${v.toFixed(0)} µs`;
}

function cells(worker: number, c: ChipReading): string[] {
  return [
    `w${worker}`,
    String(c.chip),
    `${c.dutyCyclePct.toFixed(2)}%`,
    `${gib(c.hbmUsedBytes)} / ${gib(c.hbmTotalBytes)}`,
    opt(c.hbmBandwidthPct, (v) => `${v.toFixed(2)}%`),
    opt(c.idleSeconds, (v) => `${v.toFixed(1)} s`),
    opt(c.queueSize, String),
    opt(c.execP50Us, us),
  ];
}

export function chipsTable(workers: readonly WorkerChips[]): string[] {
  const rows: (string[] | string)[] = [];
  for (const w of [...workers].sort((a, b) => a.worker - b.worker)) {
    if (w.state === 'ok') for (const c of w.chips) rows.push(cells(w.worker, c));
    else rows.push(`w${w.worker}  ${CHIPS_STATE_LABEL[w.state]}${w.detail ? `: ${w.detail}` : ''}`);
  }
  const table = rows.filter((r): r is string[] => Array.isArray(r));
  const widths = HEAD.map((h, i) => Math.max(h.length, ...table.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd();
  const out = [line(HEAD), ...rows.map((r) => (Array.isArray(r) ? line(r) : r))];
  const summary = chipsSummaryLine(workers);
  if (summary) out.push('', summary);
  return out;
}
