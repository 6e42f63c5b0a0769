/**
 * The Chips tab: a small multiple per worker, a row per chip, with duty cycle and HBM used/total as live sparklines
 * (libtpu's metrics, read on each worker by the extension host). The idlest chip and the fullest HBM of the whole
 * run are named above the grid and marked in their rows; a worker that stops answering keeps its lines, dimmed,
 * under what went wrong. Plain SVG: dozens of tiny charts redrawn every couple of seconds need no chart library.
 */
import './chips.css';
import { chipsSummaryLine, CHIPS_STATE_LABEL, fullestHbm, gib, idlestChip, type ChipReading, type WorkerChips } from '../../protocol/chip-readings';
import { el } from './dom';

/** Readings kept per chip for its sparklines (two minutes at the host's 2 s). */
const HISTORY = 60;
const SVG = 'http://www.w3.org/2000/svg';
const SPARK_W = 120;
const SPARK_H = 18;
const MIN_SPAN = 10;

interface ChipHistory {
  duty: number[];
  hbm: number[];
  last: ChipReading;
}

interface WorkerBox {
  figure: HTMLElement;
  status: HTMLElement;
  body: HTMLTableSectionElement;
  chips: Map<number, ChipHistory>;
  last?: WorkerChips;
}

function sparkline(values: readonly number[], max: number, label: string): SVGSVGElement {
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('class', 'spark');
  svg.setAttribute('viewBox', `0 0 ${SPARK_W} ${SPARK_H}`);
  svg.setAttribute('width', String(SPARK_W));
  svg.setAttribute('height', String(SPARK_H));
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', label);
  const line = document.createElementNS(SVG, 'polyline');
  // Few readings spread over the width (at least MIN_SPAN slots), so a new chart is not a dot in a corner.
  const step = SPARK_W / (Math.max(values.length, MIN_SPAN) - 1);
  const x0 = SPARK_W - (values.length - 1) * step;
  const top = max > 0 ? max : 1;
  line.setAttribute('points', values.map((v, i) => `${(x0 + i * step).toFixed(1)},${(SPARK_H - 1 - (Math.min(v, top) / top) * (SPARK_H - 2)).toFixed(1)}`).join(' '));
  svg.append(line);
  return svg;
}

export class ChipsView {
  readonly root = el('div', 'tpu-chips');
  private readonly summary = el('p', 'tpu-chips-summary');
  private readonly grid = el('div', 'tpu-chips-grid');
  private readonly empty = el('p', 'empty');
  private readonly workers = new Map<number, WorkerBox>();

  constructor() {
    this.summary.setAttribute('role', 'status');
    this.empty.textContent = 'No chips yet: each worker\'s TPU chips appear here once its libtpu answers (while the run view is open).';
    this.root.append(this.empty, this.summary, this.grid);
  }

  /** Every worker's latest state, as the table and tests read it. */
  get latest(): WorkerChips[] {
    return [...this.workers.values()].flatMap((w) => (w.last ? [w.last] : [])).sort((a, b) => a.worker - b.worker);
  }

  update(readings: readonly WorkerChips[]): void {
    for (const r of readings) this.updateWorker(r);
    this.empty.hidden = this.workers.size > 0;
    this.mark();
  }

  private box(worker: number): WorkerBox {
    let b = this.workers.get(worker);
    if (b) return b;
    const figure = el('figure', 'tpu-chips-worker');
    figure.dataset.worker = String(worker);
    const caption = el('figcaption');
    const name = el('strong');
    name.textContent = `w${worker}`;
    const status = el('span', 'tpu-chips-status');
    caption.append(name, status);
    const table = el('table');
    const head = el('thead');
    const hr = el('tr');
    for (const h of ['chip', 'duty cycle', 'HBM']) {
      const th = el('th');
      th.textContent = h;
      hr.append(th);
    }
    head.append(hr);
    const body = el('tbody');
    table.append(head, body);
    figure.append(caption, table);
    b = { figure, status, body, chips: new Map() };
    this.workers.set(worker, b);
    // Workers in order, whichever answers first.
    const later = [...this.workers.keys()].filter((w) => w > worker).sort((x, y) => x - y)[0];
    this.grid.insertBefore(figure, later === undefined ? null : this.workers.get(later)!.figure);
    return b;
  }

  private updateWorker(r: WorkerChips): void {
    const b = this.box(r.worker);
    b.last = r;
    b.figure.dataset.state = r.state;
    b.status.textContent = r.state === 'ok' ? `${r.chips.length} chip${r.chips.length === 1 ? '' : 's'}` : CHIPS_STATE_LABEL[r.state];
    b.status.title = r.detail ?? '';
    if (r.state !== 'ok') return; // the lines stay as they were, dimmed by the state
    for (const c of r.chips) {
      let h = b.chips.get(c.chip);
      if (!h) b.chips.set(c.chip, (h = { duty: [], hbm: [], last: c }));
      h.last = c;
      h.duty.push(c.dutyCyclePct);
      h.hbm.push(c.hbmUsedBytes);
      if (h.duty.length > HISTORY) h.duty.shift();
      if (h.hbm.length > HISTORY) h.hbm.shift();
    }
    b.body.replaceChildren(...[...b.chips.entries()].sort((x, y) => x[0] - y[0]).map(([chip, h]) => this.row(r.worker, chip, h)));
  }

  private row(worker: number, chip: number, h: ChipHistory): HTMLTableRowElement {
    const tr = el('tr');
    tr.dataset.chip = String(chip);
    const name = el('td');
    name.textContent = String(chip);
    const duty = el('td', 'duty');
    const dutyValue = el('span', 'value');
    dutyValue.textContent = `${h.last.dutyCyclePct.toFixed(1)}%`;
    duty.append(sparkline(h.duty, 100, `w${worker} chip ${chip} duty cycle`), dutyValue);
    const hbm = el('td', 'hbm');
    const hbmValue = el('span', 'value');
    hbmValue.textContent = `${gib(h.last.hbmUsedBytes)} / ${gib(h.last.hbmTotalBytes)}`;
    // Scaled to the most it held lately, not to the total: a few hundred MB of 16 GiB would be a flat line.
    hbm.append(sparkline(h.hbm, Math.max(...h.hbm), `w${worker} chip ${chip} HBM used`), hbmValue);
    tr.append(name, duty, hbm);
    return tr;
  }

  /** Names and marks the idlest chip and the fullest HBM among the workers that answered last. */
  private mark(): void {
    this.root.querySelectorAll('tr.idlest, tr.fullest').forEach((r) => r.classList.remove('idlest', 'fullest'));
    const latest = this.latest;
    const idle = idlestChip(latest);
    const full = fullestHbm(latest);
    this.summary.textContent = chipsSummaryLine(latest);
    const row = (w: number, c: number) => this.workers.get(w)?.body.querySelector<HTMLTableRowElement>(`tr[data-chip="${c}"]`);
    if (idle) row(idle.worker, idle.chip)?.classList.add('idlest');
    if (full) row(full.worker, full.chip)?.classList.add('fullest');
  }
}
