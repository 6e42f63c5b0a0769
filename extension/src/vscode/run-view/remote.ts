import * as os from 'node:os';
import * as path from 'node:path';
import { captureHost } from '../../core/profiles/capture-names';
import { MetricsTail } from '../../core/profiles/metrics-tail';
import { fetchCapture, fetchRunArtifacts } from '../../core/profiles/remote';
import { listGkeCaptures, loadRun, localCapturePath, workersOfRecord, type RunConnections, type RunRecord } from '../../core/run/engine';
import { describeError } from '../../core/errors';
import type { Ctx } from '../ctx';
import type { RunViewPanel } from './panel';

/** Local cache of what was fetched from workers, per run. */
function cacheDir(runId: string): string {
  return path.join(os.tmpdir(), 'tpu-workbench-runview', runId);
}

/** A run's workers and the SSH connections to reach them, resolved once and shared by what a panel reads. */
export type RunSource = RunConnections;

/** Resolves a recorded run's workers (one API call), reached over the extension's connection owner. */
export async function openRunSource(ctx: Ctx, runId: string): Promise<RunSource> {
  const backend = await ctx.backend();
  const workers = await workersOfRecord(backend, loadRun(runId));
  return { workers, conns: ctx.connections(backend) };
}

/**
 * After a run (or when its panel opens for a recorded run): fetch every worker's metrics.jsonl and torch_xla
 * metrics report into the panel (metrics + health), and list the profile captures on the workers; the panel
 * copies each here and analyzes it in the background, smallest first (CaptureAnalyses). `source`: the caller's workers (else resolved from the record).
 */
export async function loadRemoteArtifacts(ctx: Ctx, view: RunViewPanel, runId: string, source?: RunSource): Promise<void> {
  try {
    const { workers, conns } = source ?? (await openRunSource(ctx, runId));
    const found = await fetchRunArtifacts(workers, conns, runId, cacheDir(runId));
    for (const a of found) {
      view.addLocalFolder(a.dir, a.worker);
      for (const c of a.captures) {
        const target = workers.find((w) => w.index === a.worker)!;
        const local = path.join(cacheDir(runId), `w${a.worker}`, 'captures', c.remotePath.replace(/^\/+/, '').replace(/\//g, '_'));
        const parts = c.remotePath.split('/');
        const identity = { where: `${target.host}:${target.port}`, path: c.remotePath, bytes: c.bytes, mtimeMs: c.mtimeMs };
        view.addRemoteCapture(`w${a.worker} · ${parts.at(-2) ?? ''} · ${captureHost(parts.at(-1) ?? '')}`, a.worker, identity, async (signal) => {
          // The shared owner reconnects if the connection idled out before the capture was fetched.
          await fetchCapture(target, conns, c.remotePath, local, signal);
          return local;
        });
      }
    }
  } catch (e) {
    ctx.log.warn(`run view: fetching metrics and profiles of ${runId}: ${describeError(e)}`);
  }
}

/**
 * A GKE run's captures, from its artifact folder in Cloud Storage (where each pod copied them at its end):
 * listed into the panel per pod (`s0w1`), each fetched on demand into the run's cache and analyzed as a VM
 * run's are.
 */
export async function loadGkeCaptures(ctx: Ctx, view: RunViewPanel, rec: RunRecord): Promise<void> {
  if (!rec.gke?.artifactDir) return;
  try {
    const backend = await ctx.backend();
    for (const c of await listGkeCaptures(backend.gke.storage, rec.gke)) {
      const local = localCapturePath(path.join(cacheDir(rec.runId), 'gke'), c);
      const identity = { where: `gs://${c.bucket}`, path: c.object, bytes: c.bytes, mtimeMs: c.updatedMs };
      view.addRemoteCapture(`${c.pod} · ${path.basename(path.dirname(c.relative))} · ${captureHost(path.basename(c.relative))}`, c.worker, identity, async (signal) => {
        await backend.gke.storage.download(c.bucket, c.object, local, signal);
        return local;
      });
    }
  } catch (e) {
    ctx.log.warn(`run view: profiles of ${rec.runId} in ${rec.gke.artifactDir}: ${describeError(e)}`);
  }
}

/** How often a live run's metrics.jsonl is read on every worker (one short exec each). */
export const LIVE_METRICS_MS = 3000;

export interface LiveMetrics {
  /** No more reads; `finalRead` (default true): one last read first, of what was written since the previous one. */
  stop(finalRead?: boolean): Promise<void>;
}

/**
 * Live charts while a run goes on: every worker's metrics.jsonl read from where the last read stopped, every
 * LIVE_METRICS_MS, into the panel; it stops with the panel, or when stop() is called at the end of the run.
 * `source`: the caller's workers (shared with its log watch); else they are resolved from the record.
 */
export function liveMetrics(ctx: Ctx, view: RunViewPanel, runId: string, source?: RunSource, everyMs = LIVE_METRICS_MS): LiveMetrics {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const tail = (source ? Promise.resolve(source) : openRunSource(ctx, runId)).then((s) => new MetricsTail(runId, s.workers, s.conns));
  const poll = async (): Promise<void> => {
    const records = await (await tail).poll();
    if (records.length) view.setMetrics(records);
  };
  const warn = (e: unknown): void => ctx.log.warn(`run view: live metrics of ${runId}: ${describeError(e)}`);
  const loop = (): void => {
    if (stopped) return;
    timer = setTimeout(() => void poll().catch(warn).finally(loop), everyMs);
  };
  const end = (): void => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
  const disposed = view.panel.onDidDispose(end);
  tail.then(loop, warn);
  return {
    async stop(finalRead = true) {
      if (stopped) return;
      end();
      disposed.dispose();
      if (finalRead) await poll().catch(warn);
    },
  };
}
