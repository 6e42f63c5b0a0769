import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Backend } from '../backend';
import { describeError, isTpwError, TpwError } from '../errors';
import { newRunId, runProgram, sliceWorkers, type RunListener, type RunPhase, type RunResult } from '../run/engine';
import type { ConnectionManager } from '../ssh/connection';
import { targetLabel } from '../ssh/connection';
import { execCollect } from '../ssh/exec';
import { bashCommand, shPath, shQuote } from '../ssh/quote';
import type { WorkerTarget } from '../ssh/types';
import { buildManifest, deltaSync, digestOf, manifestText } from '../sync/delta';
import { listWorkspaceFiles, skippedNotice, type WorkspaceFile } from '../sync/workspace-files';
import { findNode } from '../slices/find';
import { shortName, type TpuNode } from '../tpu/models';
import type { LaunchPlan, LocalMount } from './plan';
import { downGroup, provisionGroup } from './slice-group';
import { skypilotTaskId, taskEnv, type HostsInfo } from './task-env';
import { REMOTE_WORKDIR } from '../../../../protocol/task-yaml-spec';

/**
 * Carries out a launch plan (plan.ts): the VM created, started or reused through the backend; workdir and
 * file_mounts synced to every host (the delta sync runs use); setup on every host unless the hash it left
 * there says nothing changed; then run on every host. Setup and run are runs of the one run engine
 * (run/program.ts): detached, recorded, followed, stoppable with `tpw stop`.
 */

export interface LaunchOptions {
  backend: Backend;
  conns: ConnectionManager;
  signal?: AbortSignal;
  statePollMs?: number;
  tpwHome?: string;
  /** Progress for a human (stderr in the CLI). */
  say(line: string): void;
  /** A line of setup or run output from one host. */
  onLine(stage: 'setup' | 'run', worker: number, line: string): void;
  onStarted?(stage: 'setup' | 'run', runId: string): void;
  /** The hosts of every slice together, once known (log prefixes depend on how many there are). */
  onHosts?(hosts: number): void;
}

export interface LaunchResult {
  /** The VM, or slice 0 of a multislice group. */
  node: TpuNode;
  /** Every slice (one for a single VM), in slice order. */
  slices: TpuNode[];
  /** Hosts of every slice together. */
  hosts: number;
  /** Undefined when setup was skipped (unchanged) or the task has none (or exec). */
  setup?: RunResult;
  setupSkipped: boolean;
  run?: RunResult;
}

/** Where the hash of the last setup that succeeded on a host is kept, per VM name. */
function setupHashPath(cluster: string): string {
  return `~/.tpw/tasks/${cluster}/setup.sha256`;
}

export async function executeLaunch(plan: LaunchPlan, o: LaunchOptions): Promise<LaunchResult> {
  const slices = plan.vm.action === 'reuse-group' || plan.vm.action === 'create-group' ? await provisionGroup(plan.cluster, plan.vm, o) : [await provision(plan, o)];
  const node = slices[0];
  // Slice-major global indexes (slice s, host w is s * perSlice + w): SKYPILOT_NODE_RANK on a group.
  const group = await sliceWorkers(o.backend, slices);
  const { workers } = group;
  const hosts = workers.length;
  o.onHosts?.(hosts);
  const multi = slices.length > 1;
  const label = (index: number) => (multi ? `s${Math.floor(index / group.perSlice)}w${index % group.perSlice}` : `w${index}`);
  o.say(`${plan.cluster}: ${hosts} host${hosts === 1 ? '' : 's'}${multi ? ` on ${slices.length} slices` : ''} (${workers.map((w) => `${label(w.index)}=${w.host}`).join(' ')})`);

  const inputs: string[] = [];
  if (plan.workdir) inputs.push(`workdir ${await syncFolder(plan.workdir, REMOTE_WORKDIR, workers, o, 'workdir')}`);
  for (const m of plan.localMounts) inputs.push(`mount ${m.dest} ${await syncMount(plan.cluster, m, workers, o)}`);
  // A bucket's content, not its name, is what setup depends on: an object that changed runs setup again.
  for (const m of plan.bucketMounts) inputs.push(`bucket ${m.dest} ${m.source} ${await copyBucket(m, workers, o)}`);

  const ips = slices.flatMap((s) => s.networkEndpoints.map((e) => e.ipAddress));
  const hostsInfo = (runLabel: string): HostsInfo => ({
    cluster: plan.cluster,
    ips,
    ...(multi ? { sliceNames: slices.map((s) => shortName(s.name)) } : {}),
    acceleratorType: plan.task.acceleratorType,
    zone: plan.vm.zone,
    user: os.userInfo().username,
    taskId: skypilotTaskId(plan.cluster, runLabel),
  });
  const values = { ...plan.env, ...plan.secrets };
  const cwd = plan.workdir ? REMOTE_WORKDIR : '.';
  const result: LaunchResult = { node, slices, hosts, setupSkipped: false };

  if (plan.mode === 'launch' && plan.task.setup !== undefined) {
    const hash = setupHash(plan, inputs);
    const file = setupHashPath(plan.cluster);
    if (await allHostsHave(workers, file, hash, o.conns)) {
      result.setupSkipped = true;
      o.say('Setup: unchanged since it last ran on every host (setup, envs, secrets, workdir and file_mounts alike): skipped.');
    } else {
      o.say(`Setup on ${hosts} host${hosts === 1 ? '' : 's'}${multi ? ` of ${slices.length} slices` : ''}…`);
      // The old hash goes first: a setup that fails halfway must run again next time.
      // `command -p` and /bin/bash: the system's tools whatever the task's envs did to PATH (SkyPilot runs
      // /bin/bash too).
      const wrapper = `command -p rm -f -- ${shPath(file)}; /bin/bash -c "$1" && command -p mkdir -p -- ${shPath(path.posix.dirname(file))} && printf '%s\\n' "$2" > ${shPath(file)}`;
      const runId = newRunId();
      result.setup = await stage(runId, 'setup', ['/bin/bash', '-c', wrapper, 'tpw-setup', plan.task.setup, hash], taskEnv('setup', values, hostsInfo(runId)));
      if (!result.setup.ok) return result;
    }
  }
  if (plan.task.run !== undefined) {
    o.say(`Run on ${hosts} host${hosts === 1 ? '' : 's'}${multi ? ` of ${slices.length} slices` : ''}…`);
    const runId = newRunId();
    result.run = await stage(runId, 'run', ['/bin/bash', '-c', plan.task.run], taskEnv('run', values, hostsInfo(runId)));
  }
  return result;

  function stage(runId: string, which: 'setup' | 'run', argv: string[], taskVars: ReturnType<typeof taskEnv>): Promise<RunResult> {
    // The multislice variables after the task's own, as the TPU runtime's are: a task cannot fake its slice.
    const env = { ...taskVars, ...group.env };
    return runProgram({
      runId,
      backend: o.backend,
      node,
      ...(multi ? { slices } : {}),
      workers,
      label: plan.yamlPath,
      workspaceRoot: plan.workdir ?? path.dirname(plan.yamlPath),
      argv,
      cwd,
      env,
      signal: o.signal,
      statePollMs: o.statePollMs,
      conns: o.conns,
      tpwHome: o.tpwHome,
      onStarted: (runId) => o.onStarted?.(which, runId),
      listener: {
        onLine: (w, _s, line) => o.onLine(which, w, line),
        onPhase: (_p: RunPhase, detail: string) => o.say(detail),
      } satisfies RunListener & { onPhase(p: RunPhase, d: string): void },
    });
  }
}

async function provision(plan: LaunchPlan, o: LaunchOptions): Promise<TpuNode> {
  const { vm } = plan;
  const started = Date.now();
  const took = () => `${((Date.now() - started) / 1000).toFixed(1)}s`;
  if (vm.action === 'reuse') {
    o.say(`VM ${plan.cluster} exists (${vm.node.acceleratorType}, READY in ${vm.zone}): reusing it.`);
    return vm.node;
  }
  const api = o.backend.api;
  if (vm.action === 'start') {
    o.say(`VM ${plan.cluster} is STOPPED: starting it…`);
    const node = await api.startNode({ project: o.backend.project, zone: vm.zone, node: plan.cluster }, { signal: o.signal });
    o.say(`VM ${plan.cluster} READY in ${took()}.`);
    return node;
  }
  if (vm.action !== 'create') throw new TpwError('INTERNAL', `provision got a multislice group step for ${plan.cluster}.`);
  const r = vm.request;
  o.say(`VM ${plan.cluster} does not exist: creating it (tpu-${r.acceleratorType}, ${r.runtimeVersion}${r.spot ? ', spot' : ''}) in ${vm.zone}…`);
  const node = await api.createNode(r, { signal: o.signal });
  o.say(`VM ${plan.cluster} READY in ${took()}.`);
  return node;
}

/** Delta-syncs a local folder to `dest` on every host; returns the digest of what was sent (for the setup hash). */
async function syncFolder(local: string, dest: string, workers: WorkerTarget[], o: LaunchOptions, what: string): Promise<string> {
  const listing = listWorkspaceFiles(local);
  const left = skippedNotice(listing, local);
  if (left) o.say(left);
  return syncFiles(local, listing.files, dest, workers, o, `${what} ${local} → ${dest}`);
}

async function syncFiles(root: string, files: WorkspaceFile[], dest: string, workers: WorkerTarget[], o: LaunchOptions, what: string): Promise<string> {
  const digest = digestOf(manifestText(await buildManifest(root, files, o.tpwHome)));
  const t0 = Date.now();
  const results = await deltaSync({ root, files, dest, workers, conns: o.conns, signal: o.signal, home: o.tpwHome });
  const sent = results.filter((r) => !r.upToDate);
  o.say(`Synced ${what} in ${((Date.now() - t0) / 1000).toFixed(1)}s (${sent.length === 0 ? 'no changes' : `${Math.max(...sent.map((r) => r.sentFiles))} changed files to ${sent.length} hosts`}).`);
  return digest;
}

/** A folder syncs straight to its destination; a file goes through a staging folder, then is copied into place. */
async function syncMount(cluster: string, m: LocalMount, workers: WorkerTarget[], o: LaunchOptions): Promise<string> {
  if (m.isDir) return syncFolder(m.source, m.dest, workers, o, 'file_mounts');
  const st = fs.statSync(m.source);
  const rel = path.basename(m.source);
  const staging = `~/.tpw/tasks/${cluster}/mounts/${createHash('sha256').update(m.dest).digest('hex').slice(0, 16)}`;
  const digest = await syncFiles(path.dirname(m.source), [{ rel, abs: m.source, size: st.size, mtimeMs: st.mtimeMs, mode: st.mode }], staging, workers, o, `file_mounts ${m.source} → ${m.dest}`);
  const dest = shPath(m.dest);
  const script = `set -e\nmkdir -p -- "$(dirname -- ${dest})"\ncp -f -- ${shPath(`${staging}/${rel}`)} ${dest}`;
  await onEveryHost(workers, o.conns, script, `copying ${m.source} to ${m.dest}`);
  return digest;
}

/**
 * gs:// paths are copied on each host with the tools a TPU VM image has, under the VM's service account. As
 * SkyPilot does (sky/cloud_stores.py: `ls -d`, then cp or rsync), an object is copied to the destination path and
 * anything else is synced as a folder into it.
 */
/** Copies a gs:// mount on every host; returns a digest of what each host got (one digest when all agree). */
async function copyBucket(m: { dest: string; source: string }, workers: WorkerTarget[], o: LaunchOptions): Promise<string> {
  const src = shQuote(m.source);
  const dest = shPath(m.dest);
  const script = [
    'set -e',
    'if command -v gcloud >/dev/null 2>&1; then',
    `  if gcloud storage objects describe ${src} >/dev/null 2>&1; then mkdir -p -- "$(dirname -- ${dest})"; gcloud storage cp ${src} ${dest}`,
    `  else mkdir -p -- ${dest}; gcloud storage rsync -r ${src} ${dest}; fi`,
    'elif command -v gsutil >/dev/null 2>&1; then',
    `  if gsutil -q stat ${src}; then mkdir -p -- "$(dirname -- ${dest})"; gsutil cp ${src} ${dest}`,
    `  else mkdir -p -- ${dest}; gsutil -m rsync -r ${src} ${dest}; fi`,
    `else echo "tpw: neither gcloud nor gsutil on this host, so ${m.source.replace(/[^\w:/.-]/g, '_')} cannot be copied" >&2; exit 3; fi`,
    // Every file's name and content, in a fixed order, as one digest.
    `if [ -d ${dest} ]; then (cd -- ${dest} && find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum); else sha256sum < ${dest}; fi | sha256sum | cut -d' ' -f1`,
  ].join('\n');
  o.say(`Copying ${m.source} → ${m.dest} on every host…`);
  const digests = await onEveryHost(workers, o.conns, script, `copying ${m.source} to ${m.dest}`);
  return [...new Set(digests.map((d) => d.trim().split('\n').pop() ?? ''))].join(',');
}

/** Runs `script` on every host; their stdouts, or an error naming each host that failed. */
async function onEveryHost(workers: WorkerTarget[], conns: ConnectionManager, script: string, what: string): Promise<string[]> {
  const results = await Promise.all(
    workers.map(async (w) => {
      try {
        const out = await execCollect(await conns.get(w), bashCommand(script));
        return out.code === 0 ? { stdout: out.stdout } : { failed: `${targetLabel(w)}: ${out.stderr.trim() || `exit ${out.code ?? out.signal}`}` };
      } catch (e) {
        return { failed: describeError(e) };
      }
    }),
  );
  const failed = results.flatMap((r) => (r.failed !== undefined ? [r.failed] : []));
  if (failed.length > 0) throw new TpwError('UNAVAILABLE', `Failed ${what}: ${failed.join('; ')}`);
  return results.map((r) => r.stdout ?? '');
}

async function allHostsHave(workers: WorkerTarget[], file: string, hash: string, conns: ConnectionManager): Promise<boolean> {
  const seen = await Promise.all(workers.map(async (w) => (await execCollect(await conns.get(w), bashCommand(`cat -- ${shPath(file)} 2>/dev/null || true`))).stdout.trim()));
  return seen.every((s) => s === hash);
}

/**
 * What setup depends on: its text, the VM's type, envs and secrets (their values enter only through a hash:
 * the worker keeps a digest, never a value), and the digests of the workdir and every file mount.
 */
function setupHash(plan: LaunchPlan, inputs: string[]): string {
  const h = createHash('sha256');
  const secretDigest = (v: string) => createHash('sha256').update(v).digest('hex');
  const sorted = (o: Record<string, string>, f: (v: string) => string) => Object.keys(o).sort().map((k) => `${k}=${f(o[k])}`);
  h.update(JSON.stringify({ setup: plan.task.setup, type: plan.task.acceleratorType, env: sorted(plan.env, (v) => v), secrets: sorted(plan.secrets, secretDigest), inputs }));
  return h.digest('hex');
}

/** `tpw down NAME`: deletes the VM, or every slice of the multislice group NAME (and with them everything on their hosts). */
export async function downVm(backend: Backend, name: string, zone: string | undefined, say: (l: string) => void): Promise<void> {
  let found;
  try {
    found = await findNode(backend, name, zone);
  } catch (e) {
    if (!isTpwError(e, 'NOT_FOUND')) throw e;
    if (await downGroup(backend, name, zone, say)) return;
    throw new TpwError('NOT_FOUND', `${e.message.replace(/\.$/, '')}; no multislice group has that name either.`, { cause: e });
  }
  say(`Deleting ${name} (${found.node.acceleratorType} in ${found.zone})…`);
  await backend.api.deleteNode({ project: backend.project, zone: found.zone, node: name });
}

/** A recorded run that was a task YAML's setup or run (the registry keeps the YAML where a recipe would be). */
export function isTaskYamlRun(rec: { recipe: string }): boolean {
  return /\.ya?ml$/i.test(rec.recipe);
}

/** Why `tpw resume` does not take a task YAML's run, and what does. */
export function relaunchInstead(rec: { runId: string; recipe: string; vm: string; node: string; slices?: string[] }): TpwError {
  // A group's run is recorded on slice 0 (NAME-0); the group, and the cluster the task was launched as, is NAME.
  const cluster = rec.slices && rec.slices.length > 1 ? shortName(rec.node).replace(/-\d+$/, '') : rec.vm;
  return new TpwError('FAILED_PRECONDITION', `Run ${rec.runId} ran the task YAML ${rec.recipe}, not a recipe: launch it again with \`tpw launch ${rec.recipe} -c ${cluster}\` (it creates the VM again if it is gone, and skips an unchanged setup).`);
}
