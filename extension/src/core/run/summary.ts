import { formatRunSummary, prefixLine } from './runner';
import type { OutputStream, RunListener, RunResult, WorkerResult } from './types';

/**
 * The end-of-run report: the one-line summary, and when the run failed, which worker failed first, why
 * (exit code, signal or error) and the last lines that worker printed — on a 64-host pod the user should not
 * have to scroll through every worker's interleaved output to find what went wrong.
 */

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
