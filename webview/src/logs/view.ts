import { workerLabel } from '../../../protocol/run-view-messages';

/**
 * The log pane: every worker's lines in one virtualized list. Only the rows on screen exist in the DOM (a
 * fixed pool, refilled on scroll), so 1,000,000 lines cost one string each, not one element each.
 * Browsers cap an element's height (~16-33M px), so past that the scrollbar maps proportionally onto rows.
 * Log lines are untrusted: they only ever reach the DOM as textContent.
 */
import type { WorkerStatus } from '../../../protocol/run-status';
import { parseAnsi } from './ansi';
import { Level, LogStore } from './store';
import { WrapLayout } from './wrap';
import { button, el } from '../dom';

const ROW_H = 18;
const MAX_SCROLL_PX = 8_000_000;

export interface LogViewHost {
  copy(text: string): void;
  save(text: string): void;
}

interface WorkerChip {
  state: WorkerStatus;
  exitCode?: number | null;
  el: HTMLButtonElement;
}

export class LogView {
  readonly root = el('div', 'logs');
  readonly store = new LogStore();
  private readonly scroller = el('div', 'log-scroller');
  private readonly spacer = el('div', 'log-spacer');
  private readonly rows = el('div', 'log-rows');
  private readonly chips = el('div', 'chips');
  private readonly search = el('input', 'search');
  private readonly count = el('span', 'count');
  private readonly followBtn: HTMLButtonElement;
  private readonly wrapBtn: HTMLButtonElement;
  /** Screen lines per row (Wrap): the pane scrolls over these. */
  private readonly layout = new WrapLayout();
  /** Width of one character of the log font, measured when Wrap is turned on. */
  private charWidth = 0;
  private readonly level = el('select', 'level');
  private readonly workerChips = new Map<number, WorkerChip>();
  private pool: HTMLDivElement[] = [];
  private follow = true;
  private cursor = -1;
  private matches: Int32Array = new Int32Array(0);
  private matchIndex = -1;
  private searchRe: RegExp | undefined;
  private frame = 0;
  private firstRow = 0;

  constructor(private readonly host: LogViewHost) {
    const bar = el('div', 'toolbar');
    bar.setAttribute('role', 'toolbar');
    bar.setAttribute('aria-label', 'Log tools');
    for (const [v, t] of [[Level.Info, 'All levels'], [Level.Warn, 'Warnings and errors'], [Level.Error, 'Errors only']] as const) {
      const o = el('option');
      o.value = String(v);
      o.textContent = t;
      this.level.append(o);
    }
    this.level.setAttribute('aria-label', 'Level filter');
    this.level.addEventListener('change', () => {
      this.store.minLevel = Number(this.level.value) as Level;
      this.refilter();
    });
    this.search.type = 'search';
    this.search.placeholder = 'Search (regex)';
    this.search.setAttribute('aria-label', 'Search logs with a regular expression');
    this.search.addEventListener('input', () => this.runSearch());
    this.search.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') this.step(e.shiftKey ? -1 : 1);
    });
    this.count.setAttribute('aria-live', 'polite');
    this.followBtn = button('Follow', () => this.setFollow(!this.follow), 'Keep the newest line in view');
    this.wrapBtn = button('Wrap', () => this.setWrap(!this.layout.wrapping), 'Wrap long lines instead of cutting them at the edge');
    this.wrapBtn.setAttribute('aria-pressed', 'false');
    bar.append(
      this.chips, this.level, this.search, this.count,
      button('↑', () => this.step(-1), 'Previous match (Shift+Enter)'),
      button('↓', () => this.step(1), 'Next match (Enter)'),
      this.followBtn,
      this.wrapBtn,
      button('First error', () => this.jumpToFirstError(), 'Jump to the first error line'),
      button('Copy', () => this.host.copy(this.store.viewText()), 'Copy the filtered lines'),
      button('Save…', () => this.host.save(this.store.viewText()), 'Save the filtered lines to a file'),
    );
    this.scroller.tabIndex = 0;
    this.scroller.setAttribute('role', 'log');
    this.scroller.setAttribute('aria-label', 'Worker logs. Arrow keys move between lines; Ctrl+C copies the current line.');
    this.scroller.append(this.spacer, this.rows);
    this.scroller.addEventListener('scroll', () => {
      // Dragging the scrollbar up leaves follow mode (render's own scrolls always land at the bottom).
      const atBottom = this.scroller.scrollTop + this.scroller.clientHeight >= this.scroller.scrollHeight - 2 * ROW_H;
      if (this.follow && !atBottom) this.setFollow(false);
      this.schedule();
    });
    this.scroller.addEventListener('wheel', (e) => {
      if (e.deltaY < 0) this.setFollow(false);
    }, { passive: true });
    this.scroller.addEventListener('keydown', (e) => this.onKey(e));
    this.root.append(bar, this.scroller);
    new ResizeObserver(() => {
      // A narrower pane holds fewer characters a line: lay the wrapped rows out again.
      if (this.layout.wrapping) this.layout.setCols(this.wrapCols());
      this.schedule();
    }).observe(this.scroller);
    this.setFollow(true);
  }

  /** Long lines wrap (every character shown, rows as tall as they need) or are cut at the pane's edge. */
  setWrap(on: boolean): void {
    this.root.classList.toggle('wrap', on);
    this.wrapBtn.setAttribute('aria-pressed', String(on));
    this.layout.setCols(on ? this.wrapCols() : 0);
    // The rows drawn so far have the other mode's height.
    for (const row of this.pool) delete row.dataset.key;
    this.schedule();
  }

  /** Characters a wrapped line holds: the text column's width over the log font's character width. */
  private wrapCols(): number {
    if (!this.charWidth) {
      const probe = el('span', 'row');
      probe.style.cssText = 'position:absolute;visibility:hidden;white-space:pre';
      probe.textContent = 'M'.repeat(200);
      this.scroller.append(probe);
      this.charWidth = probe.getBoundingClientRect().width / 200 || 7;
      probe.remove();
    }
    const gutter = this.pool[0]?.firstElementChild?.getBoundingClientRect().width || 4.5 * this.charWidth;
    // The row's right padding (8px) and a character's slack for rounding.
    return Math.max(10, Math.floor((this.scroller.clientWidth - gutter - 8) / this.charWidth) - 1);
  }

  append(worker: number, lines: string[]): void {
    const added = this.store.append(worker, lines);
    if (!this.workerChips.has(worker)) this.setWorkerStatus(worker, 'running');
    this.updateChip(worker);
    if (added > 0) {
      // New lines can match the active search: extend the hits instead of rescanning everything.
      if (this.searchRe) this.extendSearch(this.store.viewLength - added);
      this.schedule();
    }
  }

  setWorkerStatus(worker: number, state: WorkerStatus, exitCode?: number | null): void {
    let chip = this.workerChips.get(worker);
    if (!chip) {
      const b = button(workerLabel(worker, this.store.perSlice), () => {
        if (this.store.hiddenWorkers.has(worker)) this.store.hiddenWorkers.delete(worker);
        else this.store.hiddenWorkers.add(worker);
        this.updateChip(worker);
        this.refilter();
      });
      b.classList.add('chip');
      chip = { state, exitCode, el: b };
      this.workerChips.set(worker, chip);
      const after = [...this.workerChips.keys()].filter((w) => w > worker).sort((a, b2) => a - b2)[0];
      const before = after === undefined ? null : (this.workerChips.get(after)?.el ?? null);
      this.chips.insertBefore(b, before);
    }
    chip.state = state;
    chip.exitCode = exitCode;
    this.updateChip(worker);
  }

  private updateChip(worker: number): void {
    const chip = this.workerChips.get(worker);
    if (!chip) return;
    const shown = !this.store.hiddenWorkers.has(worker);
    const status = chip.state === 'exited' || chip.state === 'failed' ? `exit ${chip.exitCode ?? '?'}` : chip.state;
    chip.el.textContent = `${workerLabel(worker, this.store.perSlice)} · ${status}`;
    chip.el.dataset.state = chip.state === 'exited' && chip.exitCode !== 0 ? 'failed' : chip.state;
    chip.el.setAttribute('aria-pressed', String(shown));
    chip.el.title = `Worker ${worker}: ${status}, ${this.store.perWorker.get(worker) ?? 0} lines. Click to ${shown ? 'hide' : 'show'} its lines.`;
  }

  setFollow(on: boolean): void {
    this.follow = on;
    this.followBtn.setAttribute('aria-pressed', String(on));
    if (on) this.schedule();
  }

  private refilter(): void {
    this.store.refilter();
    this.layout.reset();
    this.cursor = Math.min(this.cursor, this.store.viewLength - 1);
    this.runSearch();
    this.schedule();
  }

  private runSearch(): void {
    const q = this.search.value;
    this.searchRe = undefined;
    this.search.classList.remove('invalid');
    if (q) {
      try {
        this.searchRe = new RegExp(q, 'i');
      } catch {
        this.search.classList.add('invalid');
      }
    }
    this.matches = this.searchRe ? this.store.search(this.searchRe) : new Int32Array(0);
    this.matchIndex = -1;
    this.updateCount();
    this.schedule();
  }

  private extendSearch(fromRow: number): void {
    const re = this.searchRe!;
    const more: number[] = [];
    for (let r = fromRow; r < this.store.viewLength; r++) if (re.test(this.store.text[this.store.view[r]])) more.push(r);
    if (!more.length) return;
    const m = new Int32Array(this.matches.length + more.length);
    m.set(this.matches);
    m.set(more, this.matches.length);
    this.matches = m;
    this.updateCount();
  }

  private updateCount(): void {
    if (this.search.classList.contains('invalid')) this.count.textContent = 'invalid regex';
    else if (!this.searchRe) this.count.textContent = '';
    else this.count.textContent = `${this.matchIndex >= 0 ? this.matchIndex + 1 : 0} of ${this.matches.length}`;
  }

  /** Next (+1) or previous (-1) match from the current one, wrapping. */
  step(dir: 1 | -1): void {
    const n = this.matches.length;
    if (!n) return;
    this.matchIndex = this.matchIndex < 0 ? (dir > 0 ? 0 : n - 1) : (this.matchIndex + dir + n) % n;
    this.updateCount();
    this.reveal(this.matches[this.matchIndex]);
  }

  jumpToFirstError(): void {
    const r = this.store.firstError();
    if (r >= 0) this.reveal(r);
  }

  /** Puts view row `r` under the cursor and on screen; stops following. */
  reveal(r: number): void {
    this.setFollow(false);
    this.cursor = r;
    const visible = this.visibleRows();
    this.layoutRows();
    const line = this.layout.startOf(r);
    const first = this.layout.startOf(this.firstRow);
    if (line < first || line + this.layout.linesOfRow(r) > first + visible - 1) this.scrollToLine(Math.max(0, line - Math.floor(visible / 3)));
    this.schedule();
  }

  /** Screen lines the pane shows. */
  private visibleRows(): number {
    return Math.max(1, Math.ceil(this.scroller.clientHeight / ROW_H));
  }

  private maxFirstLine(): number {
    return Math.max(0, this.layout.total - this.visibleRows() + 1);
  }

  private scrollToLine(line: number): void {
    const maxScroll = this.scroller.scrollHeight - this.scroller.clientHeight;
    const maxLine = this.maxFirstLine();
    this.scroller.scrollTop = maxLine > 0 ? (line / maxLine) * maxScroll : 0;
  }

  private layoutRows(): void {
    const store = this.store;
    this.layout.update(store.viewLength, (r) => store.text[store.view[r]].length);
  }

  private onKey(e: KeyboardEvent): void {
    const n = this.store.viewLength;
    if (!n) return;
    const page = this.visibleRows() - 1;
    const move: Record<string, number> = { ArrowDown: 1, ArrowUp: -1, PageDown: page, PageUp: -page, Home: -Infinity, End: Infinity };
    if (e.key in move) {
      e.preventDefault();
      const base = this.cursor < 0 ? this.firstRow : this.cursor;
      const to = Math.max(0, Math.min(n - 1, base + move[e.key]));
      if (e.key === 'End') {
        this.cursor = n - 1;
        this.setFollow(true);
        return;
      }
      this.reveal(to);
    } else if ((e.ctrlKey || e.metaKey) && e.key === 'c' && this.cursor >= 0) {
      e.preventDefault();
      this.host.copy(this.store.viewText(this.cursor, this.cursor + 1));
    }
  }

  schedule(): void {
    if (!this.frame) this.frame = requestAnimationFrame(() => this.render());
  }

  /** Renders the rows on screen. Public for benchmarks, which time it. */
  render(): void {
    this.frame = 0;
    const n = this.store.viewLength;
    this.layoutRows();
    const lines = this.layout.total;
    const height = Math.min(lines * ROW_H, MAX_SCROLL_PX);
    if (this.spacer.style.height !== `${height}px`) this.spacer.style.height = `${height}px`;
    const visible = this.visibleRows();
    const maxScroll = Math.max(0, height - this.scroller.clientHeight);
    if (this.follow) this.scroller.scrollTop = maxScroll;
    const maxLine = this.maxFirstLine();
    // Past the browser's height limit the scrollbar maps proportionally onto screen lines.
    let firstLine = maxScroll > 0 ? Math.round((this.scroller.scrollTop / maxScroll) * maxLine) : 0;
    if (this.follow) firstLine = maxLine;
    this.firstRow = this.layout.rowAt(firstLine);
    // The first row may start above the pane (a wrapped row cut at the top).
    const above = (firstLine - this.layout.startOf(this.firstRow)) * ROW_H;
    this.rows.style.transform = `translateY(${this.scroller.scrollTop - above}px)`;
    let k = 0;
    for (let r = this.firstRow, shown = -above / ROW_H; r < n && shown < visible; r++, k++) {
      if (k === this.pool.length) {
        const row = el('div', 'row');
        row.append(el('span', 'gutter'), el('span', 'text'));
        this.pool.push(row);
        this.rows.append(row);
      }
      const row = this.pool[k];
      row.hidden = false;
      this.fillRow(row, r);
      shown += this.layout.linesOfRow(r);
    }
    for (; k < this.pool.length; k++) this.pool[k].hidden = true;
  }

  private fillRow(row: HTMLDivElement, r: number): void {
    const store = this.store;
    const i = store.view[r];
    const lines = this.layout.linesOfRow(r);
    const key = `${i}|${r === this.cursor ? 1 : 0}|${this.searchRe?.source ?? ''}|${lines}`;
    if (row.dataset.key === key) return;
    row.dataset.key = key;
    const height = lines > 1 ? `${lines * ROW_H}px` : '';
    if (row.style.height !== height) row.style.height = height;
    const gutter = row.firstChild as HTMLSpanElement;
    const text = row.lastChild as HTMLSpanElement;
    const w = store.worker[i];
    gutter.textContent = workerLabel(w, store.perSlice);
    gutter.dataset.worker = String(w % 8);
    row.dataset.level = String(store.level[i]);
    row.classList.toggle('cursor', r === this.cursor);
    row.setAttribute('aria-current', r === this.cursor ? 'true' : 'false');
    text.replaceChildren();
    const raw = store.raw.get(i);
    const segments = raw !== undefined ? parseAnsi(raw) : [{ text: store.text[i] }];
    const re = this.searchRe ? new RegExp(this.searchRe.source, 'gi') : undefined;
    for (const seg of segments) {
      const span = el('span');
      const s = span.style;
      if ('fg' in seg && seg.fg) s.color = seg.fg;
      if ('bg' in seg && seg.bg) s.backgroundColor = seg.bg;
      if ('bold' in seg && seg.bold) s.fontWeight = 'bold';
      if ('italic' in seg && seg.italic) s.fontStyle = 'italic';
      if ('underline' in seg && seg.underline) s.textDecoration = 'underline';
      appendHighlighted(span, seg.text, re);
      text.append(span);
    }
  }
}

/** Appends `text` to `parent` as text nodes, with regex matches wrapped in <mark>. */
function appendHighlighted(parent: HTMLElement, text: string, re: RegExp | undefined): void {
  if (!re) {
    parent.textContent = text;
    return;
  }
  let last = 0;
  re.lastIndex = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    if (m[0] === '') {
      re.lastIndex++;
      continue;
    }
    if (m.index > last) parent.append(text.slice(last, m.index));
    const mark = el('mark');
    mark.textContent = m[0];
    parent.append(mark);
    last = m.index + m[0].length;
  }
  if (last < text.length) parent.append(text.slice(last));
}
