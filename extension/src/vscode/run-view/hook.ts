import * as vscode from 'vscode';
import { describeError } from '../../core/errors';
import type { MetricRecord } from '../../../../protocol/metrics-record';
import { formatRunSummary, loadRun, type RunResult, type WorkerResult } from '../../core/run/engine';
import type { Ctx } from '../ctx';
import { openRunView, RunViewPanel } from './panel';
import { openRecordedRunView } from './recorded';
import { liveMetrics, loadGkeCaptures, loadRemoteArtifacts, type LiveMetrics, type RunSource } from './remote';
import { headerStatus, workerStatus } from './status';

/**
 * The run view's side of a run, as one object the run code calls into: kept here so the hook in run.ts
 * stays a few lines (runs are being reworked in parallel there).
 */
export interface RunViewFeed {
  /**
   * The run has its id (it started on every worker): live metrics begin, over the run's connections; without a
   * source (a GKE run) the metrics come with its output (onMetrics) and nothing is fetched from workers at its end.
   */
  started(runId: string, source?: RunSource): void;
  onLine(worker: number, line: string): void;
  onMetrics(worker: number, records: MetricRecord[]): void;
  onWorkerExit(w: WorkerResult): void;
  done(result: RunResult): void;
  failed(e: unknown, cancelled: boolean): void;
  /** Someone asked the run to stop: said at once, the workers take seconds. */
  stopping(): void;
  /** Brings the panel to the front (where "Show output" goes when there is no Output channel). */
  reveal(): void;
}

/**
 * `reuse`: the run this one repeats (Run Again): its panel shows this run once it has ended. `workersPerSlice`:
 * a run with slices (GKE, multislice), whose workers the view labels sNwM.
 */
export function runViewFeed(ctx: Ctx, title: string, workers: number, opts: { reuse?: string; workersPerSlice?: number } = {}): RunViewFeed {
  // Run ids are known only once the run started on every worker; the panel is keyed by the start time till then.
  // Without focus: the recipe stays where it was, and the run shows next to it.
  const info = { runId: `${title} @ ${new Date().toISOString().slice(11, 19)}`, title, workers, provisional: true, ...(opts.workersPerSlice ? { workersPerSlice: opts.workersPerSlice } : {}) };
  const view = RunViewPanel.show(ctx, info, true, undefined, opts.reuse);
  // "starting" until every worker runs the program (sync and start take seconds; a run that never starts never ran).
  let live: LiveMetrics | undefined;
  let runId: string | undefined;
  let overSsh = false;
  return {
    started: (id, source) => {
      runId = id;
      view.aliasRunId(id);
      view.setStatus('running');
      overSsh = source !== undefined;
      if (source) {
        live ??= liveMetrics(ctx, view, id, source);
        view.watchChips(source);
      }
    },
    stopping: () => view.setStatus('stopping'),
    reveal: () => {
      if (!view.isDisposed) view.panel.reveal(undefined, false);
      else if (runId) void openRecordedRunView(ctx, loadRun(runId)).catch((e: unknown) => ctx.showError('Open Run View failed', e));
    },
    onLine: (worker, line) => view.appendLines(worker, [line]),
    onMetrics: (_worker, records) => view.setMetrics(records),
    onWorkerExit: (w) => view.setWorkerStatus(w.index, workerStatus(w), w.exitCode),
    done: (result) => {
      if (result.preempted) for (const w of result.workers) view.setWorkerStatus(w.index, 'preempted', w.exitCode);
      view.setStatus(headerStatus(result), formatRunSummary(result));
      // metrics.jsonl (exact values, every worker), the metrics report (health) and the profile captures.
      // No last live read: the whole file is fetched next.
      void live?.stop(false);
      if (result.runId && !result.detached && overSsh) void loadRemoteArtifacts(ctx, view, result.runId);
      // A GKE run's profiles come back from its artifact folder in Cloud Storage.
      else if (result.runId && !result.detached) {
        const rec = loadRun(result.runId);
        if (rec.gke) void loadGkeCaptures(ctx, view, rec);
      }
    },
    failed: (e, cancelled) => {
      void live?.stop(false);
      view.setStatus(cancelled ? 'cancelled' : 'failed', describeError(e));
    },
  };
}

/** Registers "TPU: Open Run View". */
export function registerRunView(ctx: Ctx): void {
  ctx.own(vscode.commands.registerCommand('tpuWorkbench.openRunView', () => openRunView(ctx)));
}
