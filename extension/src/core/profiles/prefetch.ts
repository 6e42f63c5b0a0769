/**
 * Captures analyzed before the user opens them. Opening a capture used to mean fetching it and decoding it on the
 * click; even warm, that is tens of milliseconds for a 3 MB capture and a second for a 200 MB one, and process or
 * JIT start cannot be made faster than xprof-rs's whole answer. So the run view analyzes every capture it learns
 * of in the background, and a click only looks the analysis up.
 *
 * The rules: one background analysis at a time, smallest capture first, each after an idle pause (the run view's
 * log streaming and UI go first; the analysis itself runs off the extension host's thread, see ProfileParser);
 * analyses are cached by the capture's identity (where it is, its path, size and mtime: a capture rewritten in
 * place is analyzed again); the cache keeps summaries, never bytes, and stops prefetching once its summaries
 * reach a byte budget (a capture opened then still works: it evicts the least recently used). Opening a capture
 * whose analysis is under way waits for it; nothing is ever analyzed twice at once. No vscode here: tests drive it.
 */
import type { ProfileSummary } from '../../../../protocol/run-view-messages';

/** Where a capture is and which version of it: equal identities are the same bytes, as far as we can tell. */
export interface CaptureIdentity {
  /** 'local', or the worker it is on (host:port, so that two runs' workers never collide). */
  where: string;
  path: string;
  bytes: number;
  mtimeMs: number;
}

export function captureKey(c: CaptureIdentity): string {
  return JSON.stringify([c.where, c.path, c.bytes, c.mtimeMs]);
}

export interface CaptureJob {
  key: string;
  bytes: number;
  /** The capture as a local file (fetched from its worker when remote); aborting stops a fetch. */
  file(signal: AbortSignal): Promise<string>;
}

/** `background`: a prefetch (the parser keeps it off the calling thread); otherwise the user is waiting. */
export type AnalyzeFile = (file: string, background: boolean) => Promise<ProfileSummary>;

export interface Opened {
  summary: ProfileSummary;
  /** The analysis was done, or under way, before the capture was opened: the click did not start a parse. */
  prefetched: boolean;
}

export type AnalysisEvent =
  | { kind: 'analyzed'; key: string; background: boolean; ms: number }
  | { kind: 'failed'; key: string; background: boolean; error: unknown }
  | { kind: 'served'; key: string; prefetched: boolean }
  /** Dropped to stay within the budget: opening it analyzes it again. */
  | { kind: 'evicted'; key: string };

export interface CaptureAnalysesOptions {
  /** Summaries kept, in bytes (about: their timeline columns and strings). */
  budgetBytes?: number;
  /** Captures bigger than this are analyzed only when opened (a fetch of GBs is not done on speculation). */
  maxPrefetchBytes?: number;
  /** Pause before each background analysis. */
  idleMs?: number;
  onEvent?(e: AnalysisEvent): void;
}

export const DEFAULT_BUDGET_BYTES = 512 << 20;
export const DEFAULT_MAX_PREFETCH_BYTES = 1 << 30;

/** About how much memory a summary holds: its timeline columns (once per shared buffer), names and op rows. */
export function summaryBytes(s: ProfileSummary): number {
  const buffers = new Set<ArrayBufferLike>();
  for (const l of s.timeline.lines) for (const a of [l.start, l.dur, l.name_, l.depth]) buffers.add(a.buffer);
  let n = 0;
  for (const b of buffers) n += b.byteLength;
  for (const name of s.timeline.names) n += 2 * name.length + 32;
  for (const o of s.ops) n += 2 * (o.name.length + o.module.length + o.category.length) + 160;
  return n + 1024;
}

interface Running {
  promise: Promise<ProfileSummary>;
  background: boolean;
}

export class CaptureAnalyses {
  /** Finished analyses, least recently used first (a Map keeps insertion order; a use re-inserts). */
  private readonly done = new Map<string, { summary: ProfileSummary; bytes: number }>();
  private readonly running = new Map<string, Running>();
  private queue: CaptureJob[] = [];
  private timer: NodeJS.Timeout | undefined;
  private backgroundBusy = false;
  private readonly abort = new AbortController();
  private usedBytes = 0;
  private idleWaiters: (() => void)[] = [];
  /** Analyses started (background and on open): what a test counts to tell a cache hit from a parse. */
  analyses = 0;
  private readonly budget: number;
  private readonly maxPrefetch: number;
  private readonly idleMs: number;

  constructor(private readonly analyzeFile: AnalyzeFile, private readonly opts: CaptureAnalysesOptions = {}) {
    this.budget = opts.budgetBytes ?? DEFAULT_BUDGET_BYTES;
    this.maxPrefetch = opts.maxPrefetchBytes ?? DEFAULT_MAX_PREFETCH_BYTES;
    this.idleMs = opts.idleMs ?? 50;
  }

  get cancelled(): boolean {
    return this.abort.signal.aborted;
  }

  /** Whether the capture's analysis is in the cache (opening it costs a lookup). */
  isReady(key: string): boolean {
    return this.done.has(key);
  }

  /** Bytes of summaries kept. */
  get keptBytes(): number {
    return this.usedBytes;
  }

  /** Queues a background analysis of `job` (smallest first), unless it is known, too big, or over budget. */
  prefetch(job: CaptureJob): void {
    if (this.cancelled || job.bytes > this.maxPrefetch) return;
    if (this.done.has(job.key) || this.running.has(job.key) || this.queue.some((j) => j.key === job.key)) return;
    const at = this.queue.findIndex((j) => j.bytes > job.bytes);
    if (at < 0) this.queue.push(job);
    else this.queue.splice(at, 0, job);
    this.schedule();
  }

  /** The capture's analysis: from the cache, from the analysis under way, or (the user waits) made now. */
  async open(job: CaptureJob): Promise<Opened> {
    const hit = this.done.get(job.key);
    if (hit) {
      this.done.delete(job.key);
      this.done.set(job.key, hit);
      this.opts.onEvent?.({ kind: 'served', key: job.key, prefetched: true });
      return { summary: hit.summary, prefetched: true };
    }
    const under = this.running.get(job.key);
    if (under) {
      const summary = await under.promise;
      this.opts.onEvent?.({ kind: 'served', key: job.key, prefetched: under.background });
      return { summary, prefetched: under.background };
    }
    // Queued but not started: the user takes it now, the queue forgets it.
    this.queue = this.queue.filter((j) => j.key !== job.key);
    const summary = await this.run(job, false);
    this.opts.onEvent?.({ kind: 'served', key: job.key, prefetched: false });
    return { summary, prefetched: false };
  }

  /** Resolves once nothing is queued or under way in the background (tests, the benchmark). */
  whenIdle(): Promise<void> {
    if (!this.backgroundBusy && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stops prefetching: the queue is dropped, a fetch under way is aborted, and nothing more is kept. */
  cancel(): void {
    this.abort.abort();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.queue = [];
    this.done.clear();
    this.usedBytes = 0;
    this.settleIdle();
  }

  private schedule(): void {
    if (this.timer || this.backgroundBusy) return;
    if (this.cancelled) return this.settleIdle();
    if (this.queue.length === 0 || this.usedBytes >= this.budget) {
      this.queue = this.usedBytes >= this.budget ? [] : this.queue;
      this.settleIdle();
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const job = this.queue.shift();
      if (!job || this.cancelled) return this.settleIdle();
      this.backgroundBusy = true;
      // A failure is reported through onEvent and left for the user's open to show (it analyzes again then).
      void this.run(job, true).catch(() => undefined).finally(() => {
        this.backgroundBusy = false;
        this.schedule();
      });
    }, this.idleMs);
  }

  private settleIdle(): void {
    if (this.backgroundBusy || (this.queue.length > 0 && !this.cancelled && this.usedBytes < this.budget)) return;
    for (const w of this.idleWaiters.splice(0)) w();
  }

  private run(job: CaptureJob, background: boolean): Promise<ProfileSummary> {
    const started = performance.now();
    this.analyses++;
    const promise = (async () => {
      const file = await job.file(this.abort.signal);
      return this.analyzeFile(file, background);
    })();
    this.running.set(job.key, { promise, background });
    return promise.then(
      (summary) => {
        this.running.delete(job.key);
        this.opts.onEvent?.({ kind: 'analyzed', key: job.key, background, ms: performance.now() - started });
        if (!this.cancelled) this.keep(job.key, summary);
        return summary;
      },
      (error: unknown) => {
        this.running.delete(job.key);
        this.opts.onEvent?.({ kind: 'failed', key: job.key, background, error });
        throw error;
      },
    );
  }

  private keep(key: string, summary: ProfileSummary): void {
    const bytes = summaryBytes(summary);
    this.done.set(key, { summary, bytes });
    this.usedBytes += bytes;
    // The least recently used go first; the one just made stays even if it alone is over the budget.
    for (const [k, v] of this.done) {
      if (this.usedBytes <= this.budget || k === key) break;
      this.done.delete(k);
      this.usedBytes -= v.bytes;
      this.opts.onEvent?.({ kind: 'evicted', key: k });
    }
  }
}
