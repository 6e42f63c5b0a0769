/**
 * Trace timeline on a canvas: one band per XLine (rows by nesting depth), zoom with the wheel or +/-, pan by
 * dragging or with the arrow keys, 0 resets. Only events in the visible range are visited (binary search on
 * sorted starts), and events narrower than a pixel that fall on an already painted pixel are skipped, so
 * millions of events draw in a frame.
 *
 * Keyboard users inspect events too: Up/Down pick a line, [ and ] step through its events (the view follows),
 * Enter zooms to the picked one; its name, duration and start are read out in a live region. In high-contrast
 * themes events are outlined with the theme's contrast border and labelled in its foreground colour.
 */
import type { ProfileSummary, TimelineLine } from '../../protocol/run-view-messages';
import { el, fmtUs } from './dom';

const ROW = 14;
const LABEL_W = 180;
const BAND_GAP = 6;

interface Band {
  line: TimelineLine;
  top: number;
  rows: number;
  /** Longest event, to find events that start before the visible range but reach into it. */
  maxDur: number;
}

function hashColour(s: string): string {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0;
  return `hsl(${Math.abs(h) % 360}, 55%, 55%)`;
}

function lowerBound(a: Float64Array, x: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class Timeline {
  readonly root = el('div', 'timeline');
  private readonly canvas = el('canvas');
  private readonly tip = el('div', 'tip');
  /** What the keyboard picked, read out by screen readers (role=status). */
  private readonly readout = el('div', 'readout');
  private sel: { band: number; index: number } | undefined;
  private bands: Band[] = [];
  private names: string[] = [];
  private colours: string[] = [];
  private t0 = 0;
  private t1 = 1;
  private span = 1;
  private frame = 0;
  /** Events drawn in the last frame (tests and benchmarks read it). */
  drawn = 0;

  constructor() {
    this.canvas.tabIndex = 0;
    this.canvas.setAttribute('role', 'img');
    this.canvas.setAttribute('aria-label', 'Trace timeline. Plus and minus zoom, left and right pan, 0 resets; up and down pick a line, [ and ] step through its events, Enter zooms to the event.');
    this.readout.setAttribute('role', 'status');
    this.readout.setAttribute('aria-live', 'polite');
    this.tip.hidden = true;
    this.root.append(this.canvas, this.tip, this.readout);
    this.canvas.addEventListener('wheel', (e) => {
      e.preventDefault();
      const x = this.timeAt(e.offsetX);
      this.zoom(e.deltaY > 0 ? 1.25 : 0.8, x);
    }, { passive: false });
    let drag: { x: number; t0: number; t1: number } | undefined;
    this.canvas.addEventListener('mousedown', (e) => (drag = { x: e.offsetX, t0: this.t0, t1: this.t1 }));
    window.addEventListener('mouseup', () => (drag = undefined));
    this.canvas.addEventListener('mousemove', (e) => {
      if (drag) {
        const dt = ((e.offsetX - drag.x) / this.plotWidth()) * (drag.t1 - drag.t0);
        this.setRange(drag.t0 - dt, drag.t1 - dt);
      }
      this.hover(e.offsetX, e.offsetY);
    });
    this.canvas.addEventListener('mouseleave', () => (this.tip.hidden = true));
    this.canvas.addEventListener('keydown', (e) => {
      const w = this.t1 - this.t0;
      const mid = (this.t0 + this.t1) / 2;
      if (e.key === '+' || e.key === '=') this.zoom(0.5, mid);
      else if (e.key === '-') this.zoom(2, mid);
      else if (e.key === 'ArrowLeft') this.setRange(this.t0 - w * 0.2, this.t1 - w * 0.2);
      else if (e.key === 'ArrowRight') this.setRange(this.t0 + w * 0.2, this.t1 + w * 0.2);
      else if (e.key === '0') this.setRange(0, this.span);
      else if (e.key === 'ArrowDown' || e.key === 'ArrowUp') this.pickLine(e.key === 'ArrowDown' ? 1 : -1);
      else if (e.key === ']' || e.key === '[') this.pickEvent(e.key === ']' ? 1 : -1);
      else if (e.key === 'Enter' && this.sel) this.zoomToPicked();
      else return;
      e.preventDefault();
    });
    new ResizeObserver(() => this.schedule()).observe(this.root);
  }

  set(summary: ProfileSummary): void {
    this.names = summary.timeline.names;
    this.colours = this.names.map(hashColour);
    let top = 0;
    this.bands = summary.timeline.lines.map((line) => {
      let rows = 1;
      let maxDur = 0;
      for (let i = 0; i < line.depth.length; i++) {
        rows = Math.max(rows, line.depth[i] + 1);
        maxDur = Math.max(maxDur, line.dur[i]);
      }
      rows = Math.min(rows, 12);
      const b = { line, top, rows, maxDur };
      top += rows * ROW + BAND_GAP + ROW;
      return b;
    });
    this.span = Math.max(summary.spanUs, 1);
    this.sel = undefined;
    this.readout.textContent = '';
    this.setRange(0, this.span);
  }

  /** Next/previous line that has events; its first event at or after the middle of the view. */
  private pickLine(dir: 1 | -1): void {
    if (this.bands.length === 0) return;
    let b = this.sel ? this.sel.band : dir > 0 ? -1 : this.bands.length;
    do b += dir;
    while (b >= 0 && b < this.bands.length && this.bands[b].line.start.length === 0);
    if (b < 0 || b >= this.bands.length) return;
    const { start } = this.bands[b].line;
    const i = Math.min(start.length - 1, lowerBound(start, (this.t0 + this.t1) / 2));
    this.select(b, i);
  }

  /** Next/previous event of the picked line, in start order (all depths). */
  private pickEvent(dir: 1 | -1): void {
    if (!this.sel) return this.pickLine(1);
    const n = this.bands[this.sel.band].line.start.length;
    this.select(this.sel.band, Math.max(0, Math.min(n - 1, this.sel.index + dir)));
  }

  private select(band: number, index: number): void {
    this.sel = { band, index };
    const { line } = this.bands[band];
    const s0 = line.start[index];
    const s1 = s0 + line.dur[index];
    // Keep it in view: pan (never zoom) when it lies outside.
    const w = this.t1 - this.t0;
    if (s1 < this.t0 || s0 > this.t1) this.setRange(s0 - w * 0.1, s0 - w * 0.1 + w);
    else this.schedule();
    this.readout.textContent = `${this.names[line.name_[index]]} — ${fmtUs(line.dur[index])} at ${fmtUs(s0)} · ${line.plane} · ${line.name} (event ${index + 1} of ${line.start.length})`;
  }

  private zoomToPicked(): void {
    const { line } = this.bands[this.sel!.band];
    const s0 = line.start[this.sel!.index];
    const d = Math.max(line.dur[this.sel!.index], 0.01);
    this.setRange(s0 - d * 0.25, s0 + d * 1.25);
  }

  private plotWidth(): number {
    return Math.max(1, this.root.clientWidth - LABEL_W);
  }

  private timeAt(x: number): number {
    return this.t0 + ((x - LABEL_W) / this.plotWidth()) * (this.t1 - this.t0);
  }

  private zoom(factor: number, at: number): void {
    const w = Math.max(0.01, (this.t1 - this.t0) * factor);
    const f = (at - this.t0) / (this.t1 - this.t0);
    this.setRange(at - f * w, at - f * w + w);
  }

  setRange(t0: number, t1: number): void {
    this.t0 = t0;
    this.t1 = Math.max(t1, t0 + 0.01);
    this.schedule();
  }

  private schedule(): void {
    if (!this.frame) this.frame = requestAnimationFrame(() => this.draw());
  }

  draw(): void {
    this.frame = 0;
    const last = this.bands.at(-1);
    const height = last ? last.top + last.rows * ROW + ROW + BAND_GAP : ROW;
    const width = this.root.clientWidth;
    if (width === 0) return;
    const dpr = window.devicePixelRatio || 1;
    this.canvas.width = width * dpr;
    this.canvas.height = height * dpr;
    this.canvas.style.width = `${width}px`;
    this.canvas.style.height = `${height}px`;
    const g = this.canvas.getContext('2d')!;
    g.scale(dpr, dpr);
    const css = getComputedStyle(document.body);
    const fg = css.getPropertyValue('--vscode-foreground').trim() || '#ccc';
    // High contrast: events are outlined in the theme's contrast border on its background, labels in its
    // foreground, instead of mid-tone fills that carry black text.
    const hc = document.body.classList.contains('vscode-high-contrast') || document.body.classList.contains('vscode-high-contrast-light');
    const border = css.getPropertyValue('--vscode-contrastBorder').trim() || fg;
    const bg = css.getPropertyValue('--vscode-editor-background').trim() || '#000';
    const focus = css.getPropertyValue('--vscode-focusBorder').trim() || fg;
    const font = css.getPropertyValue('--vscode-font-family').trim() || 'sans-serif';
    g.font = `11px ${font}`;
    g.textBaseline = 'middle';
    const pw = this.plotWidth();
    const scale = pw / (this.t1 - this.t0);
    this.drawn = 0;
    for (const b of this.bands) {
      g.fillStyle = fg;
      g.fillText(`${b.line.plane} · ${b.line.name}`.slice(0, 60), 4, b.top + ROW / 2, width - 8);
      const top = b.top + ROW;
      const { start, dur, name_, depth } = b.line;
      const lastPx = new Float64Array(b.rows).fill(-1);
      g.save();
      g.beginPath();
      g.rect(LABEL_W, top, pw, b.rows * ROW);
      g.clip();
      for (let i = lowerBound(start, this.t0 - b.maxDur); i < start.length && start[i] <= this.t1; i++) {
        const d = depth[i];
        if (d >= b.rows || start[i] + dur[i] < this.t0) continue;
        const x = LABEL_W + (start[i] - this.t0) * scale;
        const w = dur[i] * scale;
        // Sub-pixel events on a pixel already painted in this row add nothing visible.
        if (w < 1 && Math.floor(x) <= lastPx[d]) continue;
        lastPx[d] = Math.floor(x + Math.max(w, 1));
        if (hc) {
          g.fillStyle = w >= 3 ? bg : border;
          g.fillRect(x, top + d * ROW, Math.max(w, 1), ROW - 1);
          if (w >= 3) {
            g.strokeStyle = border;
            g.lineWidth = 1;
            g.strokeRect(x + 0.5, top + d * ROW + 0.5, w - 1, ROW - 2);
          }
        } else {
          g.fillStyle = this.colours[name_[i]];
          g.fillRect(x, top + d * ROW, Math.max(w, 1), ROW - 1);
        }
        this.drawn++;
        if (w > 40) {
          g.fillStyle = hc ? fg : '#000';
          g.fillText(this.names[name_[i]], Math.max(x, LABEL_W) + 2, top + d * ROW + ROW / 2, w - 4);
        }
      }
      if (this.sel && this.bands[this.sel.band] === b) {
        const i = this.sel.index;
        const x = LABEL_W + (start[i] - this.t0) * scale;
        g.strokeStyle = focus;
        g.lineWidth = 2;
        g.strokeRect(x - 1, top + Math.min(depth[i], b.rows - 1) * ROW - 1, Math.max(dur[i] * scale, 1) + 2, ROW + 1);
      }
      g.restore();
    }
    g.fillStyle = fg;
    g.fillText(`${fmtUs(this.t0)} – ${fmtUs(this.t1)}`, LABEL_W, height - ROW / 2);
  }

  private hover(x: number, y: number): void {
    const t = this.timeAt(x);
    const tol = (3 / this.plotWidth()) * (this.t1 - this.t0);
    for (const b of this.bands) {
      const row = Math.floor((y - b.top - ROW) / ROW);
      if (row < 0 || row >= b.rows) continue;
      const { start, dur, depth, name_ } = b.line;
      for (let i = lowerBound(start, t - b.maxDur); i < start.length && start[i] <= t + tol; i++) {
        if (depth[i] === row && start[i] <= t + tol && start[i] + dur[i] >= t - tol) {
          this.tip.textContent = `${this.names[name_[i]]} — ${fmtUs(dur[i])} at ${fmtUs(start[i])}`;
          this.tip.style.left = `${x + 12}px`;
          this.tip.style.top = `${y + 12}px`;
          this.tip.hidden = false;
          return;
        }
      }
    }
    this.tip.hidden = true;
  }
}
