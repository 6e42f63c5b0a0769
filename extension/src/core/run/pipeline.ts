import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { buffer } from 'node:stream/consumers';
import { describeError, TpwError } from '../errors';
import { readRecipe, recipeArgv, runsTpuTrainer } from '../recipes/recipe';
import { ConnectionManager } from '../ssh/connection';
import { execCollect } from '../ssh/exec';
import { shPath } from '../ssh/quote';
import type { WorkerTarget } from '../ssh/types';
import { tarStream } from '../sync/tar';
import { listWorkspaceFiles } from '../sync/workspace-files';
import { shortName } from '../tpu/models';
import type { RecipeRunRequest } from './pipeline-types';
import { bashCommand } from './remote-script';
import { startRun } from './runner';
import type { EnvValue, RunResult } from './types';

export type { RecipeRunRequest, RunPhase } from './pipeline-types';

/** Where a workspace lands on every worker, relative to the login's home. */
export function remoteWorkspaceDir(workspaceRoot: string): string {
  const name = path.basename(path.resolve(workspaceRoot)).replace(/[^A-Za-z0-9._-]/g, '_') || 'workspace';
  return `~/.tpw/workspaces/${name}`;
}

/** Sortable and unique enough across a team: 20261122-031500-a1b2. */
export function newRunId(now = new Date()): string {
  const p = (n: number) => String(n).padStart(2, '0');
  const stamp = `${now.getUTCFullYear()}${p(now.getUTCMonth() + 1)}${p(now.getUTCDate())}-${p(now.getUTCHours())}${p(now.getUTCMinutes())}${p(now.getUTCSeconds())}`;
  return `${stamp}-${randomBytes(2).toString('hex')}`;
}

/**
 * The whole "Run on TPU": parse the recipe (bad recipes fail before anything touches a worker), sync the
 * workspace to every worker in parallel, start the command on all of them at once and stream their output.
 * Cancelling `req.signal` stops the process group on every worker. Resolves with per-worker exit codes.
 */
export async function runRecipe(req: RecipeRunRequest): Promise<RunResult> {
  const { listener } = req;
  const phase = listener.onPhase?.bind(listener) ?? (() => undefined);
  const recipe = readRecipe(req.recipePath);
  const workers = await req.backend.workersOf(req.node);
  const vm = shortName(req.node.name);
  const runId = newRunId();
  const remoteRoot = remoteWorkspaceDir(req.workspaceRoot);
  const conns = new ConnectionManager({ hostKeyPolicy: 'accept-new' });
  try {
    phase('resolve', `Run ${runId}: ${path.basename(recipe.path)} on ${vm} (${workers.length} worker${workers.length === 1 ? '' : 's'})`);
    if (req.signal?.aborted) throw new TpwError('CANCELLED', 'The run was cancelled before it started.');

    const listing = listWorkspaceFiles(req.workspaceRoot);
    const archive = await buffer(tarStream(listing.files));
    phase('sync', `Syncing ${listing.files.length} files (${formatBytes(archive.length)}) to ${workers.length} workers…`);
    const t0 = Date.now();
    await Promise.all(workers.map((w) => syncWorker(conns, w, remoteRoot, archive, req.signal)));
    phase('sync', `Synced in ${((Date.now() - t0) / 1000).toFixed(1)}s${listing.skipped.length ? ` (skipped, outside the workspace: ${listing.skipped.join(', ')})` : ''}`);
    if (req.signal?.aborted) throw new TpwError('CANCELLED', 'The run was cancelled before it started.');

    // The trainer writes metrics.jsonl, logs and profiles into the run folder; `oc.env` makes hydra read the
    // folder from the environment the wrapper exports, so the override itself stays a literal string.
    const extra = [...(req.extraOverrides ?? [])];
    if (runsTpuTrainer(recipe)) extra.push('output_dir=${oc.env:TPW_RUN_DIR}/output', 'profile_dir=${oc.env:TPW_RUN_DIR}/profile');
    const env: Record<string, EnvValue> = {};
    for (const e of recipe.env) env[e.name] = e.expands ? { shell: e.raw } : e.value;
    const cwd = recipe.cwd === '.' ? remoteRoot : `${remoteRoot}/${recipe.cwd}`;
    phase('start', `Starting on ${workers.map((w) => `w${w.index}`).join(' ')}`);
    const handle = startRun({ runId, workers, argv: recipeArgv(recipe, extra), cwd, env, failFast: req.failFast ?? true }, listener, conns);
    const onAbort = () => void handle.cancel();
    req.signal?.addEventListener('abort', onAbort, { once: true });
    if (req.signal?.aborted) onAbort();
    phase('run', 'Running');
    try {
      const result = await handle.result;
      phase('done', result.ok ? 'Run finished' : result.cancelled ? 'Run cancelled' : 'Run failed');
      return result;
    } finally {
      req.signal?.removeEventListener('abort', onAbort);
    }
  } finally {
    conns.dispose();
  }
}

/** Replaces the worker's copy of the workspace with the archive (extracted aside, then swapped in). */
async function syncWorker(conns: ConnectionManager, w: WorkerTarget, remoteRoot: string, archive: Buffer, signal?: AbortSignal): Promise<void> {
  const conn = await conns.get(w);
  const dest = shPath(remoteRoot);
  const script = [
    'set -eu',
    `dest=${dest}`,
    'rm -rf -- "$dest.incoming" && mkdir -p -- "$dest.incoming"',
    'tar -xf - -C "$dest.incoming" --no-same-owner',
    'rm -rf -- "$dest" && mv -- "$dest.incoming" "$dest"',
  ].join('\n');
  const out = await execCollect(conn, bashCommand(script), { stdin: archive, signal });
  if (out.code !== 0) {
    throw new TpwError('UNAVAILABLE', `Sync to worker ${w.index} (${w.host}) failed${out.code === null ? '' : ` (exit ${out.code})`}: ${out.stderr.trim().split('\n').pop() ?? describeError(out)}`);
  }
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
