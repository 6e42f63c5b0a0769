import { createHash, randomBytes } from 'node:crypto';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Backend } from '../backend';
import { TpwError } from '../errors';
import { readRecipe, recipeArgv, runsTpuTrainer } from '../recipes/recipe';
import { deltaSync } from '../sync/delta';
import { listWorkspaceFiles, skippedNotice } from '../sync/workspace-files';
import { shQuote } from '../ssh/quote';
import type { WorkerTarget } from '../ssh/types';
import { shortName, type TpuNode } from '../tpu/models';
import type { RecipeRunRequest } from './pipeline-types';
import type { RunRecord } from './registry';
import { followRecorded, startRecorded } from './recorded-run';
import { recreateRequest, withResume } from './preemption';
import { passthroughEnv } from './secrets';
import type { EnvValue, RunResult } from './types';

export type { RecipeRunRequest, RunPhase } from './pipeline-types';

/**
 * Where a workspace lands on every worker, relative to the login's home: `~/.tpw/workspaces/<name>-<id>`, the
 * folder's name for people and an id of this machine and the folder's absolute path, because the name alone is
 * not the project: two checkouts called `trainer` (or two team members' on one VM) running at once would sync
 * into one tree and read each other's files. One path component, as the problem matchers in package.json expect.
 */
export function remoteWorkspaceDir(workspaceRoot: string): string {
  const abs = path.resolve(workspaceRoot);
  const name = path.basename(abs).replace(/[^A-Za-z0-9._-]/g, '_') || 'workspace';
  const id = createHash('sha256').update(`${os.hostname()}\0${abs}`).digest('hex').slice(0, 10);
  return `~/.tpw/workspaces/${name}-${id}`;
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
  const group = await sliceWorkers(req.backend, req.slices && req.slices.length > 1 ? req.slices : [req.node]);
  const { workers } = group;
  const vm = group.slices.length > 1 ? `${shortName(req.node.name)} (+${group.slices.length - 1} slices)` : shortName(req.node.name);
  const runId = newRunId();
  const remoteRoot = remoteWorkspaceDir(req.workspaceRoot);
  const { conns } = req;
  phase('resolve', `Run ${runId}: ${path.basename(recipe.path)} on ${vm} (${workers.length} worker${workers.length === 1 ? '' : 's'})`);
  if (req.signal?.aborted) throw new TpwError('CANCELLED', 'The run was cancelled before it started.');

  const listing = listWorkspaceFiles(req.workspaceRoot);
  const left = skippedNotice(listing, req.workspaceRoot);
  if (left) phase('sync', left);
  const total = listing.files.reduce((n, f) => n + f.size, 0);
  phase('sync', `Syncing ${listing.files.length} files (${formatBytes(total)}) to ${workers.length} workers…`);
  const t0 = Date.now();
  const synced = await deltaSync({
    root: req.workspaceRoot,
    files: listing.files,
    dest: remoteRoot,
    workers,
    conns,
    signal: req.signal,
    home: req.tpwHome,
    onProgress: (p) => {
      if (p.phase === 'sending') phase('sync', `w${p.worker}: sending ${p.files} changed files (${formatBytes(p.bytes)})`);
    },
  });
  const sent = synced.filter((r) => !r.upToDate);
  const what = sent.length === 0 ? 'no changes' : `${Math.max(...sent.map((r) => r.sentFiles))} changed, ${Math.max(...sent.map((r) => r.deletedFiles))} deleted files to ${sent.length} workers`;
  phase('sync', `Synced in ${((Date.now() - t0) / 1000).toFixed(1)}s (${what})${listing.skipped.length ? ` (skipped, outside the workspace: ${listing.skipped.join(', ')})` : ''}`);
  if (req.signal?.aborted) throw new TpwError('CANCELLED', 'The run was cancelled before it started.');

  // The trainer writes metrics.jsonl, logs and profiles into the run folder; `oc.env` makes hydra read the
  // folder from the environment the wrapper exports, so the override itself stays a literal string.
  const extra = [...(req.extraOverrides ?? [])];
  if (req.resume && runsTpuTrainer(recipe)) extra.splice(0, extra.length, ...withResume(extra));
  if (runsTpuTrainer(recipe)) extra.push('output_dir=${oc.env:TPW_RUN_DIR}/output', 'profile_dir=${oc.env:TPW_RUN_DIR}/profile');
  const env: Record<string, EnvValue> = { ...passthroughEnv(req.passEnv ?? {}), ...group.env };
  for (const e of recipe.env) env[e.name] = e.expands ? { shell: e.raw } : e.value;
  for (const [k, v] of Object.entries(req.extraEnv ?? {})) env[k] = v;
  // In front of the recipe's own value, which stays as the recipe wrote it (one line per name in the env file).
  for (const [k, word] of Object.entries(req.envPrepend ?? {})) {
    const cur = env[k];
    const rest = cur === undefined ? `\${${k}:+:$${k}}` : typeof cur === 'string' ? `:${shQuote(cur)}` : `:${cur.shell}`;
    env[k] = { shell: `${word}${rest}` };
  }
  const cwd = recipe.cwd === '.' ? remoteRoot : `${remoteRoot}/${recipe.cwd}`;
  phase('start', `Starting on ${workers.map((w) => `w${w.index}`).join(' ')}`);
  const spec = { runId, workers, argv: recipeArgv(recipe, extra), cwd, env, failFast: req.failFast ?? true };
  const record: RunRecord = {
    runId,
    node: req.node.name,
    vm,
    recipe: recipe.path,
    workspaceRoot: req.workspaceRoot,
    extraOverrides: req.extraOverrides ?? [],
    workers: workers.map((w) => ({ index: w.index, host: w.host, port: w.port })),
    ...(group.slices.length > 1 ? { slices: group.slices.map((s) => s.name), workersPerSlice: group.perSlice } : {}),
    ...(group.slices.some((s) => s.compute?.provisioning === 'flex-start') ? { recreate: group.slices.map(recreateRequest) } : {}),
    startedAt: new Date().toISOString(),
    status: 'starting',
  };
  await startRecorded(record, spec, conns, req.tpwHome);
  req.onStarted?.(runId, { workers, conns });
  if (req.detach) {
    phase('done', `Run ${runId} started on every worker; follow it with \`tpw logs ${runId} --follow\``);
    return { runId, workers: workers.map((w) => ({ index: w.index, host: w.host, exitCode: null, stopped: false })), durationMs: 0, cancelled: false, ok: true, detached: true };
  }
  // Watching ends when the run ends (or is stopped, or the VM is preempted); req.detachSignal stops watching only.
  phase('run', 'Running');
  const result = await followRecorded(req.backend.api, group.slices.map((s) => s.name), runId, workers, conns, listener, {
    failFast: spec.failFast,
    signal: req.signal,
    detachSignal: req.detachSignal,
    statePollMs: req.statePollMs,
    onNotice: (w, m) => phase('run', `w${w}: ${m}`),
    home: req.tpwHome,
  });
  phase('done', result.ok ? 'Run finished' : result.preempted ? `Preempted: ${result.preemptedReason ?? ''}` : result.cancelled ? 'Run cancelled' : result.detached ? 'Detached; the run goes on' : 'Run failed');
  return result;
}

/** The port libtpu's megascale coordinator listens on (MEGASCALE_PORT's default). */
const MEGASCALE_PORT = '8080';

/** What a run on one VM or on every slice of a group works with (sliceWorkers). */
export interface SliceWorkers {
  slices: TpuNode[];
  /** Every slice's workers in slice order, with global indexes (slice s, worker w is s * perSlice + w). */
  workers: WorkerTarget[];
  perSlice: number;
  /** The multislice variables the TPU runtime sets (empty for one slice). */
  env: Record<string, EnvValue>;
}

/**
 * The workers a run goes to: one VM's, or every slice's in slice order with global indexes, plus the multislice
 * variables the TPU runtime sets. MEGASCALE_SLICE_ID is computed on each worker from TPW_WORKER_INDEX, which the
 * wrapper exports before it reads the env file, so one env file serves every worker.
 */
export async function sliceWorkers(backend: Backend, slices: TpuNode[]): Promise<SliceWorkers> {
  const perSliceWorkers = await Promise.all(slices.map((s) => backend.workersOf(s)));
  const perSlice = perSliceWorkers[0].length;
  const odd = perSliceWorkers.findIndex((ws) => ws.length !== perSlice);
  if (odd >= 0) {
    throw new TpwError('FAILED_PRECONDITION', `Slice ${shortName(slices[odd].name)} has ${perSliceWorkers[odd].length} workers and slice ${shortName(slices[0].name)} ${perSlice}: the slices of a multislice run must be alike.`);
  }
  const workers = perSliceWorkers.flatMap((ws, s) => ws.map((w) => ({ ...w, index: s * perSlice + w.index })));
  if (slices.length === 1) return { slices, workers, perSlice, env: {} };
  const coordinator = slices[0].networkEndpoints[0]?.ipAddress ?? perSliceWorkers[0][0].host;
  const env: Record<string, EnvValue> = {
    MEGASCALE_NUM_SLICES: String(slices.length),
    MEGASCALE_SLICE_ID: { shell: `$((TPW_WORKER_INDEX / ${perSlice}))` },
    MEGASCALE_COORDINATOR_ADDRESS: `${coordinator}:${MEGASCALE_PORT}`,
    MEGASCALE_PORT,
  };
  return { slices, workers, perSlice, env };
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
