import * as fs from 'node:fs';
import * as path from 'node:path';
import { isTpwError, TpwError } from '../errors';
import { readRecipe, type Recipe } from '../recipes/recipe';
import { newRunId } from './pipeline';
import type { RunPhase } from './pipeline-types';
import { isActive, loadRun, saveRun, updateRun, type RunRecord } from './registry';
import { recordResult } from './session';
import type { RunListener, RunResult } from './types';
import { kubernetesLibrary, type KubeClient } from '../gke/kube';
import { LOCAL_QUEUE, type KubeObject, type Priority } from '../gke/manifest';
import type { GkeCluster } from '../gke/models';
import { parseClusterName } from '../gke/models';
import { poolsFor, type GkeProvider } from '../gke/provider';
import { JOBSET } from '../gke/resources';
import { planGkeRun, planYaml, type GkeRunPlan } from './gke-plan';
import { archiveWorkspace } from '../gke/workspace-archive';
import { deleteWorkload, followWorkload } from './gke-follow';
import { listPods, listQueues, POD_CONTAINER, readPodLog } from '../gke/workloads';

/**
 * "Run on TPU" on GKE, on the one run engine: the same recipe, record, listener and result as a run on VMs
 * (run/pipeline.ts), with a JobSet for the workers. Resolve (recipe, cluster, node pools, queue and quota) → submit
 * (Secret, workspace ConfigMaps, JobSet; the first two then owned by the JobSet) → follow (gke-follow.ts) → end,
 * recorded in the run registry with `gke` so `tpw logs`, `tpw stop`, the Runs view and a restarted VS Code find it.
 */

export interface GkeRunRequest {
  gke: GkeProvider;
  cluster: GkeCluster;
  namespace?: string;
  tpuType: string;
  numSlices: number;
  image: string;
  /** The JobSet's name (default tpw-<run id>). */
  workload?: string;
  priority?: Priority;
  maxRestarts?: number;
  recipePath: string;
  /** The recipe already read (a Python script run as it is: recipes/recipe.ts scriptRecipe); else read from recipePath. */
  recipe?: Recipe;
  workspaceRoot: string;
  /** gs://… (`tpw gke use --artifact-dir`): where each pod copies its output and profiles at its end. */
  artifactDir?: string;
  extraOverrides?: string[];
  passEnv?: Record<string, string>;
  resume?: boolean;
  /** Return once submitted. */
  detach?: boolean;
  /** Aborting deletes the JobSet. */
  signal?: AbortSignal;
  /** Aborting stops watching only. */
  detachSignal?: AbortSignal;
  tpwHome?: string;
  pollMs?: number;
  onStarted?(runId: string, plan: GkeRunPlan): void;
  listener: RunListener & { onPhase?(phase: RunPhase, detail: string): void };
}

/** The checks and the plan shared by a run and its dry run. */
async function prepare(req: GkeRunRequest, runId: string): Promise<{ plan: GkeRunPlan; parts: Buffer[]; files: number; bytes: number }> {
  const recipe = req.recipe ?? readRecipe(req.recipePath);
  poolsFor(req.cluster, req.tpuType, req.numSlices);
  const archive = await archiveWorkspace(req.workspaceRoot);
  const plan = planGkeRun({
    runId,
    recipe,
    workspaceParts: archive.parts.length,
    tpuType: req.tpuType,
    numSlices: req.numSlices,
    image: req.image,
    ...(req.namespace ? { namespace: req.namespace } : {}),
    ...(req.workload ? { workload: req.workload } : {}),
    extraOverrides: req.extraOverrides ?? [],
    passEnv: req.passEnv ?? {},
    ...(req.resume ? { resume: true } : {}),
    ...(req.priority ? { priority: req.priority } : {}),
    ...(req.maxRestarts !== undefined ? { maxRestarts: req.maxRestarts } : {}),
    ...(req.artifactDir ? { artifactDir: req.artifactDir } : {}),
  });
  return { plan, parts: archive.parts, files: archive.listing.files.length, bytes: archive.bytes };
}

/** `tpw run --cluster C --dry-run`: the manifests as YAML (no secret values, no workspace bytes), nothing created. */
export async function gkeRunManifest(req: GkeRunRequest): Promise<string> {
  const { plan, parts } = await prepare(req, newRunId());
  await checkQueue(req.gke.kube(req.cluster), req.cluster, plan);
  return planYaml(
    plan,
    parts.map((p) => p.length),
  );
}

/**
 * Kueue must be able to admit the workload some day: the LocalQueue xpk's manifests name must exist, and its
 * ClusterQueue's nominal quota must hold the run's chips (a workload that asks for more than the quota waits
 * forever). A cluster without Kueue runs JobSets at once; that is said, not refused.
 */
async function checkQueue(kube: KubeClient, cluster: GkeCluster, plan: GkeRunPlan, notice?: (m: string) => void): Promise<void> {
  const q = await listQueues(kube);
  if (q.noKueue) {
    notice?.(`GKE cluster "${cluster.cluster}" has no Kueue: the workload starts without queueing.`);
    return;
  }
  const lq = q.localQueues.find((l) => l.name === LOCAL_QUEUE && l.namespace === plan.namespace);
  if (!lq) {
    throw new TpwError('FAILED_PRECONDITION', `GKE cluster "${cluster.cluster}" has no Kueue LocalQueue "${LOCAL_QUEUE}" in namespace ${plan.namespace} (\`xpk cluster create\` makes it; see \`tpw gke queues --cluster ${cluster.cluster}\`).`);
  }
  const cq = q.clusterQueues.find((c) => c.name === lq.clusterQueue);
  if (!cq) throw new TpwError('FAILED_PRECONDITION', `Kueue LocalQueue "${LOCAL_QUEUE}" of GKE cluster "${cluster.cluster}" points at ClusterQueue "${lq.clusterQueue}", which does not exist.`);
  const need = plan.tpu.chips * plan.numSlices;
  const tpuQuota = cq.resources.filter((r) => r.resource === 'google.com/tpu');
  const have = Math.max(0, ...tpuQuota.map((r) => Number(r.nominal) || 0));
  if (tpuQuota.length > 0 && have < need) {
    throw new TpwError(
      'RESOURCE_EXHAUSTED',
      `Kueue ClusterQueue "${cq.name}" of GKE cluster "${cluster.cluster}" has a quota of ${have} google.com/tpu; the run needs ${need} (${plan.numSlices} × ${plan.tpu.name}), so it could never start.`,
    );
  }
}

async function createObjects(kube: KubeClient, plan: GkeRunPlan, parts: Buffer[]): Promise<void> {
  const ns = plan.namespace;
  const created: Array<{ kind: 'Secret' | 'ConfigMap'; name: string }> = [];
  try {
    if (plan.secret) {
      await kube.call(`create Secret ${plan.secret.metadata.name}`, () => kube.core.createNamespacedSecret({ namespace: ns, body: plan.secret as never }));
      created.push({ kind: 'Secret', name: plan.secret.metadata.name });
    }
    for (const [i, name] of plan.configMaps.entries()) {
      const body = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, labels: plan.jobset.metadata.labels }, binaryData: { part: parts[i].toString('base64') } };
      await kube.call(`create ConfigMap ${name}`, () => kube.core.createNamespacedConfigMap({ namespace: ns, body: body as never }));
      created.push({ kind: 'ConfigMap', name });
    }
    const js = (await kube.call(`create JobSet ${plan.workload}`, () => kube.custom.createNamespacedCustomObject({ ...JOBSET, namespace: ns, body: plan.jobset }))) as KubeObject & { metadata: { uid?: string } };
    // Owned by the JobSet from now on: deleting the workload deletes them (the garbage collector's work).
    const owner = { ownerReferences: [{ apiVersion: JOBSET_API_VERSION, kind: 'JobSet', name: plan.workload, uid: js.metadata.uid ?? '', blockOwnerDeletion: true }] };
    const { setHeaderOptions, PatchStrategy } = kubernetesLibrary();
    const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
    for (const o of created) {
      if (o.kind === 'Secret') await kube.call(`own Secret ${o.name}`, () => kube.core.patchNamespacedSecret({ namespace: ns, name: o.name, body: { metadata: owner } }, merge));
      else await kube.call(`own ConfigMap ${o.name}`, () => kube.core.patchNamespacedConfigMap({ namespace: ns, name: o.name, body: { metadata: owner } }, merge));
    }
  } catch (e) {
    // Nothing half-made stays behind: the JobSet (if any) and what was made for it.
    await deleteWorkload(kube, ns, plan.workload).catch(() => undefined);
    for (const o of created) {
      await (o.kind === 'Secret' ? kube.core.deleteNamespacedSecret({ namespace: ns, name: o.name }) : kube.core.deleteNamespacedConfigMap({ namespace: ns, name: o.name })).catch(() => undefined);
    }
    if (isTpwError(e, 'ALREADY_EXISTS')) throw new TpwError('ALREADY_EXISTS', `A workload named "${plan.workload}" already exists on ${kube.endpoint.label}: pick another name, or delete it first.`, { cause: e });
    throw e;
  }
}

const JOBSET_API_VERSION = `${JOBSET.group}/${JOBSET.version}`;

export async function runRecipeOnGke(req: GkeRunRequest): Promise<RunResult> {
  const phase = req.listener.onPhase?.bind(req.listener) ?? (() => undefined);
  const runId = newRunId();
  const kube = req.gke.kube(req.cluster);
  const { plan, parts, files, bytes } = await prepare(req, runId);
  const where = `${req.numSlices} × ${plan.tpu.name} on GKE cluster ${req.cluster.cluster}`;
  phase('resolve', `Run ${runId}: ${path.basename(req.recipePath)} on ${where} (${plan.numSlices * plan.tpu.vmsPerSlice} pods)`);
  await checkQueue(kube, req.cluster, plan, (m) => phase('resolve', m));
  if (req.signal?.aborted) throw new TpwError('CANCELLED', 'The run was cancelled before it started.');
  phase('sync', `Packing ${files} files (${(bytes / 1024).toFixed(1)} KiB) into ${parts.length} ConfigMap${parts.length === 1 ? '' : 's'}`);
  phase('start', `Submitting workload ${plan.workload} to queue ${LOCAL_QUEUE}`);
  const perSlice = plan.tpu.vmsPerSlice;
  const record: RunRecord = {
    runId,
    node: req.cluster.fullName,
    vm: `${req.cluster.cluster}/${plan.workload}`,
    recipe: req.recipePath,
    workspaceRoot: req.workspaceRoot,
    extraOverrides: req.extraOverrides ?? [],
    workers: Array.from({ length: plan.numSlices * perSlice }, (_, i) => ({ index: i, host: `${plan.workload}-slice-job-${Math.floor(i / perSlice)}-${i % perSlice}`, port: 0 })),
    slices: Array.from({ length: plan.numSlices }, (_, s) => `${plan.workload}/slice-job-${s}`),
    workersPerSlice: perSlice,
    gke: {
      cluster: req.cluster.fullName,
      namespace: plan.namespace,
      jobset: plan.workload,
      tpuType: plan.tpu.name,
      slices: plan.numSlices,
      podsPerSlice: perSlice,
      image: req.image,
      ...(req.gke.api.emulator ? { emulator: true } : {}),
      ...(req.artifactDir ? { artifactDir: req.artifactDir } : {}),
    },
    startedAt: new Date().toISOString(),
    status: 'starting',
  };
  saveRun(record, req.tpwHome);
  try {
    await createObjects(kube, plan, parts);
  } catch (e) {
    updateRun(runId, { status: 'failed', endedAt: new Date().toISOString(), reason: (e as Error).message }, req.tpwHome);
    throw e;
  }
  req.onStarted?.(runId, plan);
  if (req.detach) {
    phase('done', `Workload ${plan.workload} submitted; follow it with \`tpw logs ${runId} --follow\``);
    return { runId, workers: record.workers.map((w) => ({ index: w.index, host: w.host, exitCode: null, stopped: false })), durationMs: 0, cancelled: false, ok: true, detached: true };
  }
  phase('run', 'Queued');
  const result = await followRecordedGke(kube, record, req.listener, { signal: req.signal, detachSignal: req.detachSignal, pollMs: req.pollMs, home: req.tpwHome, onRunning: () => phase('run', 'Running') });
  phase('done', result.ok ? 'Run finished' : result.preempted ? `Preempted: ${result.preemptedReason ?? ''}` : result.cancelled ? 'Run cancelled' : result.detached ? 'Detached; the workload goes on' : 'Run failed');
  return result;
}

/** Follows a recorded GKE run to its end (or until detached) and records the outcome, as followRecorded does for VMs. */
export async function followRecordedGke(
  kube: KubeClient,
  rec: RunRecord,
  listener: RunListener,
  opts: { signal?: AbortSignal; detachSignal?: AbortSignal; follow?: boolean; pollMs?: number; home?: string; onRunning?: () => void },
): Promise<RunResult> {
  const ref = rec.gke!;
  let marked = rec.status !== 'starting';
  const watch = followWorkload(
    kube,
    {
      ...listener,
      onLine: (w, s, line) => {
        if (!marked) {
          marked = true;
          updateRun(rec.runId, { status: 'running' }, opts.home);
          opts.onRunning?.();
        }
        listener.onLine?.(w, s, line);
      },
    },
    {
      namespace: ref.namespace,
      jobset: ref.jobset,
      slices: ref.slices,
      perSlice: ref.podsPerSlice,
      follow: opts.follow,
      signal: opts.detachSignal,
      pollMs: opts.pollMs,
      // The Runs view and `tpw runs` say how often it restarted: the record keeps the highest attempt seen.
      onRestart: (attempt) => {
        const now = loadRun(rec.runId, opts.home);
        if (now.gke && (now.gke.restarts ?? 0) < attempt) updateRun(rec.runId, { gke: { ...now.gke, restarts: attempt } }, opts.home);
      },
    },
  );
  const onAbort = () => void watch.cancel();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  if (opts.signal?.aborted) onAbort();
  try {
    const result = { ...(await watch.result), runId: rec.runId };
    if (opts.follow !== false) recordResult(rec.runId, result, opts.home);
    return result;
  } finally {
    opts.signal?.removeEventListener('abort', onAbort);
  }
}

/** The Kubernetes client of a recorded GKE run's cluster. */
export async function kubeOfRecord(gke: GkeProvider, rec: RunRecord): Promise<KubeClient> {
  const id = parseClusterName(rec.gke!.cluster);
  return gke.kube(await gke.api.getCluster(id));
}

/** `tpw stop RUN` on GKE: the JobSet deleted (its pods stopped, its ConfigMaps and Secret with it), recorded as cancelled. */
export async function stopGkeRun(gke: GkeProvider, runId: string, home?: string): Promise<RunRecord> {
  const rec = loadRun(runId, home);
  const kube = await kubeOfRecord(gke, rec);
  await deleteWorkload(kube, rec.gke!.namespace, rec.gke!.jobset);
  if (!isActive(rec.status)) return rec;
  return updateRun(runId, { status: 'cancelled', endedAt: new Date().toISOString(), reason: 'stopped by the user (workload deleted)' }, home);
}

/** Every pod's log of a GKE run (its newest attempt) into `<destDir>/s<slice>w<host>.log`; returns the files. */
export async function downloadGkeRunLogs(gke: GkeProvider, rec: RunRecord, destDir: string): Promise<string[]> {
  const kube = await kubeOfRecord(gke, rec);
  const pods = await listPods(kube, rec.gke!.namespace, rec.gke!.jobset);
  if (pods.length === 0) throw new TpwError('NOT_FOUND', `Run ${rec.runId}: workload ${rec.gke!.jobset} has no pods any more (deleted, or its TTL after finishing ran out).`);
  const newest = Math.max(...pods.map((p) => p.restartAttempt));
  fs.mkdirSync(destDir, { recursive: true });
  return Promise.all(
    pods
      .filter((p) => p.restartAttempt === newest)
      .map(async (p) => {
        const file = path.join(destDir, `s${p.slice}w${p.host}.log`);
        fs.writeFileSync(file, await readPodLog(kube, rec.gke!.namespace, p.name, POD_CONTAINER));
        return file;
      }),
  );
}
