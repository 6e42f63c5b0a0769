import * as fs from 'node:fs';
import * as path from 'node:path';
import { fetchRunCaptures } from '../core/profiles/remote';
import { fetchGkeCaptures, isGkeRun, loadRun, resolveRunId, workersOfRecord, type RunRecord } from '../core/run/engine';
import { TpwError } from '../core/errors';
import { tpwHome } from '../core/paths';
import type { Backend } from '../core/backend';
import { openCliBackend } from './backend-from-args';
import { connectionsFor } from './connections';
import type { CommandContext } from './context';
import { gkeGlobalsForRun } from './gke-commands';
import { profileCommand } from './profile-command';

/**
 * `tpw profile --run RUN`: the run's captures, fetched into `<TPW_HOME>/profiles/<run>/` one folder per worker
 * (`w3`) or pod (`s0w3`), then analyzed as `tpw profile DIR` analyzes a folder. A VM run's come over SSH from its
 * workers (profiles/remote.ts), a GKE run's from its artifact dir in Cloud Storage (run/gke-captures.ts).
 */
export async function profileRunCommand(ctx: CommandContext): Promise<number> {
  const runId = resolveRunId(String(ctx.values.run));
  const rec = loadRun(runId);
  const dest = path.join(tpwHome(), 'profiles', runId);
  const backend = await openCliBackend(gkeGlobalsForRun(ctx.globals, rec));
  let files: string[];
  try {
    files = isGkeRun(rec) ? await gkeCaptures(backend, rec, dest) : await vmCaptures(ctx, backend, rec, dest);
  } finally {
    await backend.close();
  }
  if (files.length === 0) throw new TpwError('NOT_FOUND', `Run ${runId} left no profile captures${isGkeRun(rec) ? ` in ${rec.gke!.artifactDir}` : ' on its workers'}.`);
  ctx.err(`Fetched ${files.length} capture${files.length === 1 ? '' : 's'} of run ${runId} into ${dest}`);
  return profileCommand({ ...ctx, positionals: [dest] });
}

function gkeCaptures(backend: Backend, rec: RunRecord, dest: string): Promise<string[]> {
  if (!rec.gke?.artifactDir) {
    throw new TpwError('FAILED_PRECONDITION', `GKE run ${rec.runId} has no artifact dir, so its captures stayed in its pods (run with --artifact-dir gs://…, or \`tpw gke use --artifact-dir\`).`);
  }
  return fetchGkeCaptures(backend.gke.storage, rec.gke, dest);
}

async function vmCaptures(ctx: CommandContext, backend: Backend, rec: RunRecord, dest: string): Promise<string[]> {
  fs.mkdirSync(path.dirname(dest), { recursive: true });
  return fetchRunCaptures(await workersOfRecord(backend, rec), connectionsFor(ctx, backend), rec.runId, dest);
}
