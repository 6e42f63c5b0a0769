import * as os from 'node:os';
import * as path from 'node:path';
import { fetchCapture, fetchRunArtifacts } from '../../core/profiles/remote';
import { loadRun } from '../../core/run/registry';
import { workersOfRecord } from '../../core/run/session';
import { ConnectionManager } from '../../core/ssh/connection';
import { describeError } from '../../core/errors';
import type { Ctx } from '../ctx';
import { vscodeHostKeys } from '../hostKeys';
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
