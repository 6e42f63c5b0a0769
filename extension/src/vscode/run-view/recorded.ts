import * as path from 'node:path';
import { describeError } from '../../core/errors';
import { attachRun, formatRunSummary, isActive, isGkeRun, loadRun, watchRecordedRun, type RunRecord } from '../../core/run/engine';
import type { Ctx } from '../ctx';
import { RunViewPanel } from './panel';
import { liveMetrics, loadGkeCaptures, loadRemoteArtifacts, openRunSource, type RunSource } from './remote';
import { headerStatus, workerStatus } from './status';

/**
 * "Open Run View" on a run of the Runs view — one started in an earlier VS Code session, reattached after a
 * restart, or long finished: the panel follows every worker's log from its first byte (its own read-only
 * watch: closing the panel never stops the run, and a viewer never fails the run fast), charts metrics.jsonl
 * live while the run goes on, and once the run has ended lists its profiles and health findings.
 */
export async function openRecordedRunView(ctx: Ctx, rec: RunRecord): Promise<void> {
  const existing = RunViewPanel.get(rec.runId);
  if (existing) {
    existing.panel.reveal(undefined, false);
    return;
  }
  const view = RunViewPanel.show(
    ctx,
    { runId: rec.runId, title: `${path.basename(rec.recipe)} on ${rec.vm}`, workers: rec.workers.length, ...(rec.workersPerSlice ? { workersPerSlice: rec.workersPerSlice } : {}) },
    false,
  );
  const active = isActive(rec.status);
  view.setStatus(active ? 'running' : rec.status, active ? undefined : rec.reason);
  const closed = new AbortController();
  view.panel.onDidDispose(() => closed.abort());
  if (isGkeRun(rec)) return followGkeRun();
  let source: RunSource;
  try {
    source = await openRunSource(ctx, rec.runId);
  } catch (e) {
    view.setStatus('failed', `Cannot follow run ${rec.runId}: ${describeError(e)}`);
    return;
  }
  // The extension's connections (one per worker) for everything this panel reads: the log watch, live
  // metrics, then artifacts.
  const live = active ? liveMetrics(ctx, view, rec.runId, source) : undefined;
  view.watchChips(source);
  await follow();
  await live?.stop();
  if (!closed.signal.aborted) await loadRemoteArtifacts(ctx, view, rec.runId, source);

  /** A GKE run: its pods' logs from the API server, metrics from the lines the trainer echoes into them. */
  async function followGkeRun(): Promise<void> {
    try {
      const backend = await ctx.backend();
      const result = await watchRecordedRun(
        backend,
        ctx.connections(backend),
        rec.runId,
        {
          onLine: (w, _stream, line) => view.appendLines(w, [line]),
          onWorkerExit: (w) => view.setWorkerStatus(w.index, workerStatus(w), w.exitCode),
          onMetrics: (_w, records) => view.setMetrics(records),
          onNotice: (m) => ctx.log.info(`run view ${rec.runId}: ${m}`),
        },
        { follow: active, signal: closed.signal },
      );
      if (result.detached) return;
      const now = loadRun(rec.runId);
      if (now.status === 'preempted' || result.preempted) for (const w of result.workers) view.setWorkerStatus(w.index, 'preempted', w.exitCode);
      view.setStatus(headerStatus(result, now), now.reason ?? formatRunSummary(result));
      // The pods copy their profiles to the artifact folder as they end: listed once the run has.
      if (!closed.signal.aborted) await loadGkeCaptures(ctx, view, now);
    } catch (e) {
      view.setStatus('failed', `Cannot follow run ${rec.runId}: ${describeError(e)}`);
    }
  }

  async function follow(): Promise<void> {
    try {
      const handle = attachRun(rec.runId, source.workers, source.conns, {
        onLine: (w, _stream, line) => view.appendLines(w, [line]),
        onWorkerExit: (w) => view.setWorkerStatus(w.index, workerStatus(w), w.exitCode),
      }, { follow: active, failFast: false, signal: closed.signal });
      const result = await handle.result;
      if (result.detached) return; // the panel was closed
      // The registry knows how a run that ended before this watch ended (who failed first, preemption).
      const now = loadRun(rec.runId);
      if (now.status === 'preempted' || result.preempted) for (const w of result.workers) view.setWorkerStatus(w.index, 'preempted', w.exitCode);
      view.setStatus(headerStatus(result, now), now.reason ?? formatRunSummary(result));
    } catch (e) {
      view.setStatus('failed', `Cannot follow run ${rec.runId}: ${describeError(e)}`);
    }
  }
}

