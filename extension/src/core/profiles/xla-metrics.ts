/**
 * The torch_xla metrics report (`torch_xla.debug.metrics.metrics_report()`, written by the trainer as
 * xla_metrics.txt) → numbers, and → findings in plain words about the two most common torch_xla
 * performance bugs: recompilation and host syncs (plus ops that fell back to the CPU).
 */
export interface XlaMetric {
  samples: number;
  /** Sum of samples: seconds for time metrics, else the raw number. */
  total: number;
}

export interface XlaMetricsReport {
  metrics: Record<string, XlaMetric>;
  counters: Record<string, number>;
}

import type { MetricRecord } from '../../../../protocol/metrics-record';
import type { HealthFinding } from '../../../../protocol/run-view-messages';

export type { HealthFinding };

/** "06s057ms494.266us", "004ms156.735us", "63.00", "1.2GB" → seconds for durations, else the number. */
export function parseQuantity(text: string): number {
  const t = text.trim();
  const parts = [...t.matchAll(/(\d+(?:\.\d+)?)(ms|us|ns|m|s)/g)];
  if (parts.length && parts.map((m) => m[0]).join('') === t.replace(/\s+/g, '')) {
    const scale: Record<string, number> = { m: 60, s: 1, ms: 1e-3, us: 1e-6, ns: 1e-9 };
    return parts.reduce((a, m) => a + Number(m[1]) * scale[m[2]], 0);
  }
  const bytes = /^([\d.]+)\s*(B|KB|MB|GB|TB)$/.exec(t);
  if (bytes) return Number(bytes[1]) * 1024 ** ['B', 'KB', 'MB', 'GB', 'TB'].indexOf(bytes[2]);
  const n = Number(t);
  return Number.isFinite(n) ? n : NaN;
}

export function parseXlaMetricsReport(text: string): XlaMetricsReport {
  const report: XlaMetricsReport = { metrics: {}, counters: {} };
  let current: { kind: 'metric' | 'counter'; name: string } | undefined;
  for (const raw of text.split(/\r?\n/)) {
    const head = /^(Metric|Counter):\s*(.+?)\s*$/.exec(raw);
    if (head) {
      current = { kind: head[1] === 'Metric' ? 'metric' : 'counter', name: head[2] };
      if (current.kind === 'metric') report.metrics[current.name] = { samples: 0, total: 0 };
      continue;
    }
    const field = /^\s+(\w+):\s*(.*)$/.exec(raw);
    if (!field || !current) continue;
    if (current.kind === 'counter' && field[1] === 'Value') report.counters[current.name] = Number(field[2]);
    if (current.kind === 'metric' && field[1] === 'TotalSamples') report.metrics[current.name].samples = Number(field[2]);
    if (current.kind === 'metric' && field[1] === 'Accumulator') report.metrics[current.name].total = parseQuantity(field[2]);
  }
  return report;
}

/** What the trainer logs per step that matters here (metrics.jsonl's `compiles`). */
export type StepCompiles = Pick<MetricRecord, 'step' | 'compiles'>;

/** Graphs a steady training loop compiles: the step itself, plus the optimizer's first-step variant. */
const EXPECTED_COMPILES = 2;

export function healthFindings(report: XlaMetricsReport, steps: StepCompiles[] = []): HealthFinding[] {
  const out: HealthFinding[] = [];
  const compiles = report.counters.UncachedCompile ?? report.metrics.CompileTime?.samples ?? 0;
  const compileS = report.metrics.CompileTime?.total ?? 0;
  // From the per-step record: compiles that happened after step 2, i.e. in what should be a steady loop.
  const known = steps.filter((s) => typeof s.compiles === 'number').sort((a, b) => a.step - b.step);
  const base = known.filter((s) => s.step <= 2).at(-1)?.compiles ?? known[0]?.compiles ?? null;
  const later = base === null ? [] : known.filter((s) => s.step > 2 && (s.compiles ?? 0) > base);
  if (later.length > 0 && base !== null) {
    const extra = (later.at(-1)!.compiles ?? 0) - base;
    out.push({
      severity: 'warning',
      title: `Recompiled ${extra} time${extra === 1 ? '' : 's'} after step 2`,
      detail: `First new compilation seen at step ${later[0].step}. A graph that changes between steps (shapes that vary, Python values baked into the graph, a branch on a tensor) makes XLA compile again; ${compileS.toFixed(1)} s went to compiling in total.`,
    });
  } else if (compiles > EXPECTED_COMPILES) {
    out.push({ severity: 'warning', title: `Compiled ${compiles} graphs`, detail: `A steady training loop compiles about ${EXPECTED_COMPILES}; more means the graph changes between steps. ${compileS.toFixed(1)} s went to compiling.` });
  } else {
    out.push({ severity: 'ok', title: `No recompilation (${compiles} compile${compiles === 1 ? '' : 's'}, ${compileS.toFixed(1)} s)`, detail: 'The step graph was compiled once and then reused from the cache.' });
  }
  const syncs = report.metrics.TransferFromDeviceTime?.samples ?? 0;
  const marks = report.counters.MarkStep ?? report.counters.ExecuteComputation ?? 0;
  const scalar = report.counters['aten::_local_scalar_dense'] ?? 0;
  if (syncs > 0) {
    const perStep = marks > 0 ? syncs / marks : syncs;
    out.push({
      severity: perStep > 2 ? 'warning' : 'info',
      title: `${syncs} host sync${syncs === 1 ? '' : 's'} (device → host transfers)${marks ? `, ${perStep.toFixed(1)} per step` : ''}`,
      detail: `Each one waits for the device. ${scalar ? `${scalar} came from reading a tensor's value in Python (.item(), print, if on a tensor: aten::_local_scalar_dense). ` : ''}Log less often, or keep values on the device.`,
    });
  }
  const fallbacks = Object.entries(report.counters).filter(([k]) => k.startsWith('aten::') && k !== 'aten::_local_scalar_dense').sort((a, b) => b[1] - a[1]);
  if (fallbacks.length) {
    out.push({
      severity: 'warning',
      title: `${fallbacks.length} op${fallbacks.length === 1 ? '' : 's'} fell back to the CPU`,
      detail: `${fallbacks.slice(0, 5).map(([k, v]) => `${k} (${v}×)`).join(', ')}: torch_xla has no XLA lowering for them, so each call copies tensors to the host and back.`,
    });
  }
  return out;
}
