import { workerLabel } from '../../../protocol/run-view-messages';

/**
 * All log lines of a run, columnar: the text (ANSI stripped, for search) plus raw text only where it had
 * escapes, and worker and level in typed arrays. The view is an index (Int32Array) of the lines that pass the
 * worker and level filters, kept up to date on append, so filtering 1,000,000 lines is one linear pass.
 */
import { hasAnsi, stripAnsi } from './ansi';

export const enum Level {
  Info = 0,
  Warn = 1,
  Error = 2,
}

const ERROR_RE = /\b(ERROR|FATAL|CRITICAL|Traceback \(most recent call last\)|[A-Z][A-Za-z]*(Error|Exception)\b)|\bF\d{4} /;
const WARN_RE = /\b(WARN|WARNING|Warning)\b|\bW\d{4} /;

export function levelOf(text: string): Level {
  if (ERROR_RE.test(text)) return Level.Error;
  if (WARN_RE.test(text)) return Level.Warn;
  return Level.Info;
}

export class LogStore {
  readonly text: string[] = [];
  /** Lines with ANSI escapes keep their raw form here (by line index) for colouring. */
  readonly raw = new Map<number, string>();
  worker = new Uint16Array(1024);
  level = new Uint8Array(1024);
  /** Filtered view: indices into text. */
  view = new Int32Array(1024);
  viewLength = 0;
  hiddenWorkers = new Set<number>();
  minLevel: Level = Level.Info;
  readonly workers = new Set<number>();
  /** Lines per worker, for the chips. */
  readonly perWorker = new Map<number, number>();
  /** Workers per slice, once the run says (labels read sNwM then). */
  perSlice: number | undefined;

  get length(): number {
    return this.text.length;
  }

  private grow(n: number): void {
    if (n <= this.worker.length) return;
    let cap = this.worker.length;
    while (cap < n) cap *= 2;
    const w = new Uint16Array(cap);
    w.set(this.worker);
    this.worker = w;
    const l = new Uint8Array(cap);
    l.set(this.level);
    this.level = l;
  }

  private growView(n: number): void {
    if (n <= this.view.length) return;
    let cap = this.view.length;
    while (cap < n) cap *= 2;
    const v = new Int32Array(cap);
    v.set(this.view.subarray(0, this.viewLength));
    this.view = v;
  }

  private passes(i: number): boolean {
    return !this.hiddenWorkers.has(this.worker[i]) && this.level[i] >= this.minLevel;
  }

  /** Appends lines; returns how many of them entered the filtered view. */
  append(worker: number, lines: readonly string[]): number {
    const start = this.text.length;
    this.grow(start + lines.length);
    this.growView(this.viewLength + lines.length);
    this.workers.add(worker);
    this.perWorker.set(worker, (this.perWorker.get(worker) ?? 0) + lines.length);
    let added = 0;
    for (let k = 0; k < lines.length; k++) {
      const i = start + k;
      const line = lines[k];
      let plain = line;
      if (hasAnsi(line)) {
        this.raw.set(i, line);
        plain = stripAnsi(line);
      }
      this.text.push(plain);
      this.worker[i] = worker;
      this.level[i] = levelOf(plain);
      if (this.passes(i)) {
        this.view[this.viewLength++] = i;
        added++;
      }
    }
    return added;
  }

  refilter(): void {
    this.growView(this.text.length);
    let n = 0;
    for (let i = 0; i < this.text.length; i++) if (this.passes(i)) this.view[n++] = i;
    this.viewLength = n;
  }

  /** Position in the view of the first error line, or -1. */
  firstError(): number {
    for (let r = 0; r < this.viewLength; r++) if (this.level[this.view[r]] === Level.Error) return r;
    return -1;
  }

  /** View rows whose text matches `re`. */
  search(re: RegExp): Int32Array {
    const hits: number[] = [];
    for (let r = 0; r < this.viewLength; r++) {
      re.lastIndex = 0;
      if (re.test(this.text[this.view[r]])) hits.push(r);
    }
    return Int32Array.from(hits);
  }

  /** The filtered lines as `[wN] text`, for copy and save. */
  viewText(from = 0, to = this.viewLength): string {
    const out: string[] = [];
    for (let r = from; r < to; r++) {
      const i = this.view[r];
      out.push(`[${workerLabel(this.worker[i], this.perSlice)}] ${this.text[i]}`);
    }
    return out.join('\n');
  }
}
