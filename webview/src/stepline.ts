/** The trainer's console step line → a metrics record (no DOM, no chart library: unit-tested in Node). */
import type { MetricRecord } from '../../protocol/metrics-record';

const UNITS: Record<string, number> = { B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3, TiB: 1024 ** 4 };

/**
 * The trainer's console line: `step 10 loss 5.3177 lr 3.000e-04 grad_norm 2.155 step_time_s 0.0805
 * tokens_per_s 12727 mfu - mem 924.5MiB` → a record (a `-` is a missing value).
 */
export function parseStepLine(line: string, worker: number): MetricRecord | undefined {
  const m = /^step (\d+) (loss .*)$/.exec(line.trim());
  if (!m) return undefined;
  const rec: MetricRecord = { step: Number(m[1]), worker };
  const parts = m[2].split(/\s+/);
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const [k, v] = [parts[i], parts[i + 1]];
    const val = Number(v);
    if (k === 'mem') {
      const mm = /^([\d.]+)(B|KiB|MiB|GiB|TiB)$/.exec(v);
      if (mm) rec.mem_bytes = Math.round(Number(mm[1]) * UNITS[mm[2]]);
    } else if (k === 'mfu' || k === 'grad_norm') {
      // The record's schema allows null here: the trainer has no value (CPU MFU, no norm clipping).
      rec[k] = v !== '-' && Number.isFinite(val) ? val : null;
    } else if ((k === 'loss' || k === 'lr' || k === 'step_time_s' || k === 'tokens_per_s') && Number.isFinite(val)) {
      rec[k] = val;
    }
  }
  return rec;
}
