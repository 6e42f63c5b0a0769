import type { OutputStream, RunListener, RunResult, WorkerResult } from './types';

/**
 * The end-of-run report: the one-line summary, and when the run failed, which worker failed first, why
 * (exit code, signal or error) and the last lines that worker printed — on a 64-host pod the user should not
 * have to scroll through every worker's interleaved output to find what went wrong.
 */

/** `[w3] line`: how every worker's output is shown in the CLI and the output channel. */
/** `[w3] line`; in a multislice run (`workersPerSlice` given) `[s1w3] line`, as the slice and its worker. */
export function prefixLine(worker: number, line: string, workersPerSlice?: number): string {
  if (!workersPerSlice || workersPerSlice <= 0) return `[w${worker}] ${line}`;
  return `[s${Math.floor(worker / workersPerSlice)}w${worker % workersPerSlice}] ${line}`;
}

function workerStatus(w: WorkerResult): string {
  if (w.error && !w.stopped) return 'error';
  if (w.stopped) return 'stopped';
  if (w.exitCode === 0) return '0';
  if (w.exitCode !== null) return `${w.exitCode} (failed)`;
  if (w.signal) return `${w.signal} (failed)`;
  return 'unknown';
}

/** One line: `run <id>: 4/4 workers ok in 12.3s — w0=0 w1=0 w2=1 (failed) w3=stopped`. */
export function formatRunSummary(result: RunResult): string {
  const n = result.workers.length;
  const okCount = result.workers.filter((w) => w.exitCode === 0 && !w.error && !w.stopped).length;
  const secs = (result.durationMs / 1000).toFixed(1);
  const head = result.preempted
    ? `run ${result.runId}: preempted after ${secs}s (${result.preemptedReason ?? 'VM preempted'})`
    : result.cancelled ? `run ${result.runId}: cancelled after ${secs}s` : `run ${result.runId}: ${okCount}/${n} workers ok in ${secs}s`;
  const parts = [...result.workers].sort((a, b) => a.index - b.index).map((w) => `w${w.index}=${workerStatus(w)}`);
  return `${head} — ${parts.join(' ')}`;
}

/** How many of the failing worker's last lines the report quotes. */
export const TAIL_LINES = 10;

/** The first worker that failed on its own (not one that was stopped), and why, in words. */
export interface FirstFailure {
  index: number;
  why: string;
}

function failedOnItsOwn(w: WorkerResult): boolean {
  return !w.stopped && (w.error !== undefined || (w.exitCode !== 0 && w.exitCode !== null) || w.signal !== undefined);
}

function whyOf(w: WorkerResult): string {
  return w.error ?? (w.exitCode !== null ? `exit code ${w.exitCode}` : `signal ${w.signal ?? '?'}`);
}

/**
 * Which worker failed first: `preferred` (the registry's verdict, decided when the run ended) if it failed,
 * else the result's own `firstFailed` (the order the watcher saw workers end in), else the lowest index.
 */
export function firstFailure(result: RunResult, preferred?: number): FirstFailure | undefined {
  if (result.cancelled || result.preempted) return undefined;
  const byIndex = (i: number | undefined) => (i === undefined ? undefined : result.workers.find((w) => w.index === i));
  // A reattached watch does not know which workers were stopped by fail-fast: trust the recorded verdict.
  const recorded = byIndex(preferred);
  if (recorded && (recorded.exitCode !== 0 || recorded.error !== undefined)) return { index: recorded.index, why: whyOf(recorded) };
  const seen = byIndex(result.firstFailed);
  const pick = seen && failedOnItsOwn(seen) ? seen : [...result.workers].sort((a, b) => a.index - b.index).find(failedOnItsOwn);
  return pick ? { index: pick.index, why: whyOf(pick) } : undefined;
}

/**
 * Keeps the last lines each worker printed (bounded, whatever the run's length). `wrap` puts it in front of a
 * listener, so the CLI and VS Code get the lines they show and the report from one stream.
 */
export class RunTails {
  private readonly lines = new Map<number, string[]>();

  constructor(private readonly keep = TAIL_LINES) {}

  push(worker: number, _stream: OutputStream, line: string): void {
    let list = this.lines.get(worker);
    if (!list) this.lines.set(worker, (list = []));
    list.push(line);
    if (list.length > this.keep) list.splice(0, list.length - this.keep);
  }

  /** The last lines of `worker`, oldest first, without the `[wN]` prefix. */
  last(worker: number): string[] {
    return [...(this.lines.get(worker) ?? [])];
  }

  wrap<L extends RunListener>(next: L): L {
    return {
      ...next,
      onLine: (worker: number, stream: OutputStream, line: string) => {
        this.push(worker, stream, line);
        next.onLine?.(worker, stream, line);
      },
    };
  }

  /**
   * The summary line, then for a failed run: `w2 failed first: exit code 3. Its last 10 lines:` and those lines,
   * prefixed `[w2]` as everywhere else. `preferredFirst` is the registry's `failedWorker` when reattaching.
   */
  report(result: RunResult, preferredFirst?: number): string[] {
    const out = [formatRunSummary(result)];
    if (result.ok || result.detached) return out;
    const first = firstFailure(result, preferredFirst);
    if (!first) return out;
    const tail = this.last(first.index);
    if (tail.length === 0) {
      out.push(`w${first.index} failed first: ${first.why}. It printed nothing.`);
      return out;
    }
    out.push(`w${first.index} failed first: ${first.why}. Its last ${tail.length === 1 ? 'line' : `${tail.length} lines`}:`);
    for (const line of tail) out.push(`  ${prefixLine(first.index, line)}`);
    return out;
  }
}
