/**
 * Live metrics charts (uPlot): loss, learning rate, step time, tokens/s, MFU and memory, one series per
 * worker. Drag to zoom, double-click to reset, hover for the readout (uPlot's legend). Records come from the
 * trainer's `step …` log lines as they stream, and from metrics.jsonl when the host sends it (which wins).
 * The chips' duty cycle and HBM (libtpu's, per worker: the mean over its chips and their sum) join them on the
 * same step axis: each reading is charted at the step its worker's trainer had logged last.
 */
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { workerTotals, type WorkerChips } from '../../protocol/chip-readings';
import type { MetricRecord } from '../../protocol/metrics-record';
import { CHARTED_METRICS, type ChartedMetric } from './charted-metrics';
import { el, fmtNum } from './dom';

export { parseStepLine } from './stepline';

/** The chips' series, from libtpu rather than the trainer's record. */
type ChipKey = 'duty_cycle' | 'hbm';
type Key = ChartedMetric | ChipKey;
type ChipValues = Record<ChipKey, number>;

const STYLE: Record<Key, { title: string; fmt: (v: number) => string }> = {
  loss: { title: 'Loss', fmt: (v) => v.toFixed(4) },
  lr: { title: 'Learning rate', fmt: (v) => v.toExponential(2) },
  step_time_s: { title: 'Step time (s)', fmt: (v) => v.toFixed(4) },
  tokens_per_s: { title: 'Tokens / s', fmt: fmtNum },
  mfu: { title: 'MFU', fmt: (v) => `${(v * 100).toFixed(1)}%` },
  mem_bytes: { title: 'Memory', fmt: (v) => `${fmtNum(v)}B` },
  duty_cycle: { title: 'Duty cycle (chips)', fmt: (v) => `${v.toFixed(1)}%` },
  hbm: { title: 'HBM (chips)', fmt: (v) => `${fmtNum(v)}B` },
};
const CHIP_KEYS: readonly ChipKey[] = ['duty_cycle', 'hbm'];
const CHARTS = [...CHARTED_METRICS, ...CHIP_KEYS].map((key) => ({ key, ...STYLE[key] }));

function cssVar(name: string, fallback: string): string {
  return getComputedStyle(document.body).getPropertyValue(name).trim() || fallback;
}

const PALETTE = ['--vscode-charts-blue', '--vscode-charts-orange', '--vscode-charts-green', '--vscode-charts-purple', '--vscode-charts-red', '--vscode-charts-yellow'];
const FALLBACK = ['#3794ff', '#d18616', '#89d185', '#b180d7', '#f14c4c', '#cca700'];

export class MetricsView {
  readonly root = el('div', 'metrics');
  private readonly byWorker = new Map<number, Map<number, MetricRecord>>();
  /** Worker → step → the chips' reading charted at that step. */
  private readonly chipsByWorker = new Map<number, Map<number, ChipValues>>();
  private readonly plots = new Map<Key, uPlot>();
  private readonly empty = el('p', 'empty');
  private seriesWorkers: number[] = [];
  private frame = 0;
  private visible = false;

  constructor() {
    this.empty.textContent = 'No metrics yet: charts appear with the trainer\'s first logged step.';
    this.root.append(this.empty);
    new ResizeObserver(() => this.resize()).observe(this.root);
  }

  get recordCount(): number {
    let n = 0;
    for (const m of this.byWorker.values()) n += m.size;
    return n;
  }

  add(records: MetricRecord[]): void {
    for (const r of records) {
      if (!Number.isFinite(r.step)) continue;
      const w = r.worker ?? 0;
      let m = this.byWorker.get(w);
      if (!m) this.byWorker.set(w, (m = new Map()));
      m.set(r.step, { ...m.get(r.step), ...r });
    }
    this.schedule();
  }

  /** Chip readings, each at the latest step its worker logged (readings before the first step are not charted). */
  addChips(workers: readonly WorkerChips[]): void {
    let added = false;
    for (const w of workers) {
      const totals = workerTotals(w);
      const steps = this.byWorker.get(w.worker);
      if (!totals || !steps || steps.size === 0) continue;
      const step = Math.max(...steps.keys());
      let m = this.chipsByWorker.get(w.worker);
      if (!m) this.chipsByWorker.set(w.worker, (m = new Map()));
      m.set(step, { duty_cycle: totals.dutyCyclePct, hbm: totals.hbmUsedBytes });
      added = true;
    }
    if (added) this.schedule();
  }

  private value(worker: number, step: number, key: Key): unknown {
    if (key === 'duty_cycle' || key === 'hbm') return this.chipsByWorker.get(worker)?.get(step)?.[key];
    return this.byWorker.get(worker)?.get(step)?.[key];
  }

  /** Charts are drawn only while the tab is visible: uPlot needs a laid-out width. */
  setVisible(v: boolean): void {
    this.visible = v;
    if (v) this.schedule();
  }

  private schedule(): void {
    if (this.visible && !this.frame) this.frame = requestAnimationFrame(() => this.draw());
  }

  private width(): number {
    return Math.max(240, Math.min(640, Math.floor((this.root.clientWidth - 24) / 2) - 12));
  }

  private resize(): void {
    for (const p of this.plots.values()) p.setSize({ width: this.width(), height: 200 });
  }

  /** Removes a chart: its figure first (destroy() detaches uPlot's root, after which the figure is unreachable). */
  private drop(key: Key, plot: uPlot): void {
    plot.root.parentElement?.remove();
    plot.destroy();
    this.plots.delete(key);
  }

  private draw(): void {
    this.frame = 0;
    if (this.byWorker.size === 0) return;
    this.empty.hidden = true;
    const workers = [...this.byWorker.keys()].sort((a, b) => a - b);
    const steps = [...new Set([...this.byWorker.values()].flatMap((m) => [...m.keys()]))].sort((a, b) => a - b);
    const rebuild = workers.join() !== this.seriesWorkers.join();
    this.seriesWorkers = workers;
    for (const c of CHARTS) {
      const ys = workers.map((w) => steps.map((s) => {
        const v = this.value(w, s, c.key);
        return typeof v === 'number' && Number.isFinite(v) ? v : null;
      }));
      const data: uPlot.AlignedData = [steps, ...ys];
      let plot = this.plots.get(c.key);
      // A metric nobody logs (a program's own metrics.jsonl, or a CPU run's MFU) gets no empty chart.
      if (ys.every((y) => y.every((v) => v === null))) {
        if (plot) this.drop(c.key, plot);
        continue;
      }
      if (plot && rebuild) {
        this.drop(c.key, plot);
        plot = undefined;
      }
      if (!plot) {
        const box = el('figure', 'chart');
        box.dataset.metric = c.key;
        box.setAttribute('aria-label', `${c.title} by step`);
        const cap = el('figcaption');
        cap.textContent = c.title;
        box.append(cap);
        // In CHARTS order, whichever appear first.
        const later = CHARTS.slice(CHARTS.indexOf(c) + 1).map((k) => this.plots.get(k.key)?.root.parentElement).find((e) => e);
        this.root.insertBefore(box, later ?? null);
        const fg = cssVar('--vscode-foreground', '#ccc');
        const grid = cssVar('--vscode-charts-lines', 'rgba(128,128,128,0.3)');
        const axis = { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
        plot = new uPlot({
          width: this.width(),
          height: 200,
          scales: { x: { time: false } },
          axes: [{ ...axis, label: 'step' }, { ...axis, size: 72, values: (_u, vals) => vals.map((v) => c.fmt(v)) }],
          series: [
            { label: 'step' },
            ...workers.map((w, k) => ({
              label: `w${w}`,
              stroke: cssVar(PALETTE[k % PALETTE.length], FALLBACK[k % FALLBACK.length]),
              width: 1.5,
              spanGaps: true,
              points: { show: steps.length < 60 },
              value: (_u: uPlot, v: number | null) => (v === null ? '–' : c.fmt(v)),
            })),
          ],
        }, data, box);
        this.plots.set(c.key, plot);
      } else {
        plot.setData(data);
      }
    }
  }
}
