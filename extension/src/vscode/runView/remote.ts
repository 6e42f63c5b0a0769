import * as os from 'node:os';
import * as path from 'node:path';
import { MetricsTail } from '../../core/profiles/metrics-tail';
import { fetchCapture, fetchRunArtifacts } from '../../core/profiles/remote';
import { loadRun } from '../../core/run/registry';
import { workersOfRecord } from '../../core/run/session';
import { ConnectionManager } from '../../core/ssh/connection';
import { describeError } from '../../core/errors';
import type { Ctx } from '../ctx';
import { vscodeHostKeys } from '../hostKeys';
import type { MetricRecord } from '../../../../webview/src/protocol';
import type { RunViewPanel } from './panel';

/** Local cache of what was fetched from workers, per run. */
function cacheDir(runId: string): string {
  return path.join(os.tmpdir(), 'tpu-workbench-runview', runId);
}

/**
 * After a run (or when its panel opens for a recorded run): fetch every worker's metrics.jsonl and torch_xla
 * metrics report into the panel (metrics + health), and list the profile captures on the workers; a capture
 * is copied here only when the user opens it.
 */
export async function loadRemoteArtifacts(ctx: Ctx, view: RunViewPanel, runId: string): Promise<void> {
  const backend = await ctx.backend();
  const rec = loadRun(runId);
  const workers = await workersOfRecord(backend, rec);
  const conns = new ConnectionManager(vscodeHostKeys(backend.kind));
  try {
    const found = await fetchRunArtifacts(workers, conns, runId, cacheDir(runId));
    for (const a of found) {
      view.addLocalFolder(a.dir, a.worker);
      for (const c of a.captures) {
        const target = workers.find((w) => w.index === a.worker)!;
        const local = path.join(cacheDir(runId), `w${a.worker}`, 'captures', c.remotePath.replace(/^\/+/, '').replace(/\//g, '_'));
        const parts = c.remotePath.split('/');
        view.addRemoteCapture(`w${a.worker} · ${parts.at(-2) ?? ''} · ${parts.at(-1)?.replace(/\.xplane\.pb$/, '')}`, a.worker, c.remotePath, c.bytes, async () => {
          // Its own connection: the listing's may be closed by the time the user opens a capture.
          const fetchConns = new ConnectionManager(vscodeHostKeys(backend.kind));
          try {
            await fetchCapture(target, fetchConns, c.remotePath, local);
          } finally {
            fetchConns.dispose();
          }
          return local;
        });
      }
    }
  } catch (e) {
    ctx.log.warn(`run view: fetching metrics and profiles of ${runId}: ${describeError(e)}`);
  } finally {
    conns.dispose();
  }
}

/** How often a live run's metrics.jsonl is read on every worker (one short exec each). */
export const LIVE_METRICS_MS = 3000;

export interface LiveMetrics {
  /** One last read (what was written since the previous one), then no more. */
  stop(): Promise<void>;
}

/**
 * Live charts while a run goes on: every worker's metrics.jsonl read from where the last read stopped, every
 * LIVE_METRICS_MS, into the panel; it stops with the panel, or when stop() is called at the end of the run.
 */
export function liveMetrics(ctx: Ctx, view: RunViewPanel, runId: string, everyMs = LIVE_METRICS_MS): LiveMetrics {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let conns: ConnectionManager | undefined;
  const ready = (async () => {
    const backend = await ctx.backend();
    const workers = await workersOfRecord(backend, loadRun(runId));
    conns = new ConnectionManager(vscodeHostKeys(backend.kind));
    return new MetricsTail(runId, workers, conns);
  })();
  const poll = async (): Promise<void> => {
    const records = await (await ready).poll();
    if (records.length) view.setMetrics(records as MetricRecord[]);
  };
  const loop = (): void => {
    timer = setTimeout(() => {
      poll()
        .catch((e: unknown) => ctx.log.warn(`run view: live metrics of ${runId}: ${describeError(e)}`))
        .finally(() => {
          if (!stopped) loop();
        });
    }, everyMs);
  };
  const end = (): void => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
  const disposed = view.panel.onDidDispose(() => {
    end();
    conns?.dispose();
  });
  ready.then(loop, (e: unknown) => ctx.log.warn(`run view: live metrics of ${runId}: ${describeError(e)}`));
  return {
    async stop() {
      if (stopped) return;
      end();
      disposed.dispose();
      try {
        await poll();
      } catch (e) {
        ctx.log.warn(`run view: live metrics of ${runId}: ${describeError(e)}`);
      } finally {
        conns?.dispose();
      }
    },
  };
}
