import { TpwError } from '../errors';
import type { KubeClient } from './kube';
import { SLICE_JOB } from './manifest';
import type { GkeClusterQueue, GkeLocalQueue, GkePod, GkeWorkload, WorkloadPhase } from './models';
import {
  condition,
  JOBSET,
  KUEUE_GROUP,
  KUEUE_VERSION,
  type ClusterQueueObject,
  type JobSetObject,
  type KueueWorkloadObject,
  type LocalQueueObject,
  type ObjectList,
} from './resources';
import { tpuTypeOfNodePool } from './tpu-types';

/**
 * What is queued and running on a cluster: Kueue's ClusterQueues and LocalQueues, JobSet workloads (a page at a
 * time: a cluster may hold thousands) joined with their Kueue Workloads for why one waits, and a workload's pods.
 */

/** The main container of xpk's pods (its --docker-name default). */
export const POD_CONTAINER = 'jax-tpu';

/** The label tpw puts on its JobSets and their pods: the run id. */
export const RUN_LABEL = 'tpu-workbench.dev/run';

export interface QueueListing {
  clusterQueues: GkeClusterQueue[];
  localQueues: GkeLocalQueue[];
  /** Kueue's API is not served: the cluster has no Kueue (workloads then start without queueing). */
  noKueue?: boolean;
}

export async function listQueues(kube: KubeClient): Promise<QueueListing> {
  let cqs: ObjectList<ClusterQueueObject>;
  try {
    cqs = (await kube.call('list the Kueue ClusterQueues', () =>
      kube.custom.listClusterCustomObject({ group: KUEUE_GROUP, version: KUEUE_VERSION, plural: 'clusterqueues' }),
    )) as ObjectList<ClusterQueueObject>;
  } catch (e) {
    if (e instanceof TpwError && e.code === 'NOT_FOUND') return { clusterQueues: [], localQueues: [], noKueue: true };
    throw e;
  }
  const lqs = (await kube.call('list the Kueue LocalQueues', () =>
    kube.custom.listClusterCustomObject({ group: KUEUE_GROUP, version: KUEUE_VERSION, plural: 'localqueues' }),
  )) as ObjectList<LocalQueueObject>;
  return {
    clusterQueues: (cqs.items ?? []).map(toClusterQueue),
    localQueues: (lqs.items ?? []).map((q) => ({
      namespace: q.metadata?.namespace ?? 'default',
      name: q.metadata?.name ?? '',
      clusterQueue: q.spec?.clusterQueue ?? '',
      pending: q.status?.pendingWorkloads ?? 0,
      admitted: q.status?.admittedWorkloads ?? 0,
    })),
  };
}

function toClusterQueue(q: ClusterQueueObject): GkeClusterQueue {
  const used = new Map<string, string>();
  for (const f of q.status?.flavorsReservation ?? q.status?.flavorsUsage ?? []) for (const r of f.resources ?? []) used.set(`${f.name}/${r.name}`, String(r.total ?? 0));
  const resources: GkeClusterQueue['resources'] = [];
  for (const g of q.spec?.resourceGroups ?? []) {
    for (const f of g.flavors ?? []) {
      for (const r of f.resources ?? []) {
        resources.push({ flavor: f.name ?? '', resource: r.name ?? '', nominal: String(r.nominalQuota ?? 0), used: used.get(`${f.name}/${r.name}`) ?? '0' });
      }
    }
  }
  const active = condition(q.status?.conditions, 'Active');
  return {
    name: q.metadata?.name ?? '',
    resources,
    pending: q.status?.pendingWorkloads ?? 0,
    admitted: q.status?.admittedWorkloads ?? 0,
    ...(active && active.status !== 'True' ? { inactiveReason: active.message ?? active.reason ?? 'inactive' } : {}),
  };
}

export interface WorkloadPage {
  items: GkeWorkload[];
  /** Pass back for the next page; absent on the last one. */
  continue?: string;
  /** What the API server says is left after this page, when it says. */
  remaining?: number;
}

/**
 * One page of the namespace's JobSets (the API server's own pagination: `limit` and `continue`), each joined with its
 * Kueue Workload (found by the JobSet's uid, in one list call per page). Newest first within the page is left to the
 * caller: the API server returns them by name.
 */
export async function listWorkloads(kube: KubeClient, opts: { namespace?: string; limit?: number; continue?: string; runId?: string } = {}): Promise<WorkloadPage> {
  const namespace = opts.namespace ?? 'default';
  const page = (await kube.call(`list the JobSets in namespace ${namespace}`, () =>
    kube.custom.listNamespacedCustomObject({
      ...JOBSET,
      namespace,
      limit: opts.limit ?? 100,
      ...(opts.continue ? { _continue: opts.continue } : {}),
      ...(opts.runId ? { labelSelector: `${RUN_LABEL}=${opts.runId}` } : {}),
    }),
  )) as ObjectList<JobSetObject>;
  const jobsets = page.items ?? [];
  const byOwner = await kueueWorkloadsOf(kube, namespace, jobsets);
  return {
    items: jobsets.map((js) => toWorkload(js, byOwner.get(js.metadata?.uid ?? ''))),
    ...(page.metadata?.continue ? { continue: page.metadata.continue } : {}),
    ...(page.metadata?.remainingItemCount !== undefined ? { remaining: page.metadata.remainingItemCount } : {}),
  };
}

/** Kueue Workloads of these JobSets, by the JobSet's uid (Kueue labels each with `kueue.x-k8s.io/job-uid`). */
async function kueueWorkloadsOf(kube: KubeClient, namespace: string, jobsets: JobSetObject[]): Promise<Map<string, KueueWorkloadObject>> {
  const uids = jobsets.map((j) => j.metadata?.uid).filter((u): u is string => !!u);
  const out = new Map<string, KueueWorkloadObject>();
  if (uids.length === 0) return out;
  let list: ObjectList<KueueWorkloadObject>;
  try {
    list = (await kube.call('list the Kueue Workloads', () =>
      kube.custom.listNamespacedCustomObject({ group: KUEUE_GROUP, version: KUEUE_VERSION, namespace, plural: 'workloads', labelSelector: `kueue.x-k8s.io/job-uid in (${uids.join(',')})` }),
    )) as ObjectList<KueueWorkloadObject>;
  } catch (e) {
    if (e instanceof TpwError && e.code === 'NOT_FOUND') return out; // no Kueue on this cluster
    throw e;
  }
  for (const w of list.items ?? []) {
    const owner = w.metadata?.ownerReferences?.find((o) => o.kind === 'JobSet')?.uid ?? w.metadata?.labels?.['kueue.x-k8s.io/job-uid'];
    if (owner) out.set(owner, w);
  }
  return out;
}

/** A JobSet (and its Kueue Workload) as the sidebar and `tpw gke workloads` show it. */
export function toWorkload(js: JobSetObject, kw?: KueueWorkloadObject): GkeWorkload {
  const rj = js.spec?.replicatedJobs?.find((r) => r.name === SLICE_JOB) ?? js.spec?.replicatedJobs?.[0];
  const sel = rj?.template?.spec?.template?.spec?.nodeSelector ?? {};
  const tpuType = tpuTypeOfNodePool(sel['cloud.google.com/gke-tpu-accelerator'], sel['cloud.google.com/gke-tpu-topology'])?.name;
  const { phase, message } = phaseOf(js, kw);
  const runId = js.metadata?.labels?.[RUN_LABEL];
  return {
    namespace: js.metadata?.namespace ?? 'default',
    name: js.metadata?.name ?? '',
    phase,
    ...(message ? { message } : {}),
    ...(js.metadata?.labels?.['kueue.x-k8s.io/queue-name'] ? { queue: js.metadata.labels['kueue.x-k8s.io/queue-name'] } : {}),
    ...(tpuType ? { tpuType } : {}),
    slices: rj?.replicas ?? 1,
    podsPerSlice: rj?.template?.spec?.parallelism ?? 1,
    restarts: js.status?.restarts ?? 0,
    ...(js.metadata?.creationTimestamp ? { createdAt: js.metadata.creationTimestamp } : {}),
    ...(runId ? { runId } : {}),
  };
}

/** Finished, failed, running, admitted (pods not all up yet), or queued with Kueue's reason. */
export function phaseOf(js: JobSetObject, kw?: KueueWorkloadObject): { phase: WorkloadPhase; message?: string } {
  const conds = js.status?.conditions;
  const completed = condition(conds, 'Completed');
  if (js.status?.terminalState === 'Completed' || completed?.status === 'True') return { phase: 'succeeded' };
  const failed = condition(conds, 'Failed');
  if (js.status?.terminalState === 'Failed' || failed?.status === 'True') return { phase: 'failed', message: failed?.message ?? failed?.reason };
  if (js.spec?.suspend) {
    const reserved = condition(kw?.status?.conditions, 'QuotaReserved');
    const admitted = condition(kw?.status?.conditions, 'Admitted');
    if (admitted?.status === 'True') return { phase: 'admitted' };
    if (kw) return { phase: 'queued', message: reserved?.message ?? reserved?.reason ?? 'waiting for Kueue to look at it' };
    return { phase: js.metadata?.labels?.['kueue.x-k8s.io/queue-name'] ? 'queued' : 'suspended', message: 'no Kueue Workload for it yet' };
  }
  const ready = (js.status?.replicatedJobsStatus ?? []).reduce((n, r) => n + (r.ready ?? 0) + (r.active ?? 0), 0);
  return { phase: ready > 0 ? 'running' : 'admitted' };
}

interface PodLike {
  metadata?: { name?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: { nodeName?: string };
  status?: {
    phase?: string;
    reason?: string;
    message?: string;
    conditions?: Array<{ type?: string; status?: string; reason?: string; message?: string }>;
    containerStatuses?: Array<{ name?: string; restartCount?: number; state?: { terminated?: { exitCode?: number; reason?: string; message?: string }; waiting?: { reason?: string; message?: string } } }>;
    initContainerStatuses?: Array<{ name?: string; state?: { terminated?: { exitCode?: number; reason?: string; message?: string }; waiting?: { reason?: string; message?: string } } }>;
  };
}

/** A pod of a JobSet: where it sits in the workload (slice, host, restart attempt) and how it is doing. */
export function toPod(p: PodLike, container = 'jax-tpu'): GkePod {
  const labels = p.metadata?.labels ?? {};
  const ann = p.metadata?.annotations ?? {};
  const num = (v: string | undefined) => (v !== undefined && /^\d+$/.test(v) ? Number(v) : 0);
  const main = p.status?.containerStatuses?.find((c) => c.name === container) ?? p.status?.containerStatuses?.[0];
  const term = main?.state?.terminated;
  const initFailed = p.status?.initContainerStatuses?.find((c) => c.state?.terminated && c.state.terminated.exitCode !== 0);
  const disruption = p.status?.conditions?.find((c) => c.type === 'DisruptionTarget' && c.status === 'True');
  const unsched = p.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');
  const waiting = main?.state?.waiting;
  const reason = disruption
    ? `${disruption.reason ?? 'DisruptionTarget'}: ${disruption.message ?? p.status?.message ?? ''}`.trim()
    : p.status?.reason
      ? `${p.status.reason}: ${p.status.message ?? ''}`.trim()
      : initFailed
        ? `init container ${initFailed.name} exited ${initFailed.state?.terminated?.exitCode}${initFailed.state?.terminated?.message ? `: ${initFailed.state.terminated.message}` : ''}`
        : unsched
          ? `${unsched.reason ?? 'Unschedulable'}: ${unsched.message ?? ''}`.trim()
          : waiting?.reason && waiting.reason !== 'ContainerCreating' && waiting.reason !== 'PodInitializing'
            ? `${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}`
            : term && term.exitCode !== 0
              ? `${term.reason ?? 'Error'} (exit ${term.exitCode})`
              : undefined;
  return {
    name: p.metadata?.name ?? '',
    slice: num(labels['jobset.sigs.k8s.io/job-index'] ?? ann['jobset.sigs.k8s.io/job-index']),
    host: num(labels['batch.kubernetes.io/job-completion-index'] ?? ann['batch.kubernetes.io/job-completion-index']),
    restartAttempt: num(labels['jobset.sigs.k8s.io/restart-attempt'] ?? ann['jobset.sigs.k8s.io/restart-attempt']),
    phase: p.status?.phase ?? 'Unknown',
    containerRestarts: main?.restartCount ?? 0,
    ...(p.spec?.nodeName ? { node: p.spec.nodeName } : {}),
    ...(term?.exitCode !== undefined ? { exitCode: term.exitCode } : {}),
    ...(reason ? { reason } : {}),
    // A node shutdown (spot reclaim) marks the pod; a Terminated/Shutdown/NodeLost reason says the same without it.
    disrupted: disruption !== undefined || /^(Terminated|Shutdown|NodeShutdown|NodeLost|Evicted)$/.test(p.status?.reason ?? ''),
  };
}

/** The pods of a workload, slice-major and host-minor, of every restart attempt (newest attempt last). */
export async function listPods(kube: KubeClient, namespace: string, jobset: string): Promise<GkePod[]> {
  const list = await kube.call(`list the pods of workload ${jobset}`, () => kube.core.listNamespacedPod({ namespace, labelSelector: `jobset.sigs.k8s.io/jobset-name=${jobset}` }));
  return list.items.map((p) => toPod(p as PodLike)).sort((a, b) => a.restartAttempt - b.restartAttempt || a.slice - b.slice || a.host - b.host);
}

/** Which workloads have pods on which node pool (by the nodes' `cloud.google.com/gke-nodepool` label). */
export async function workloadsByNodePool(kube: KubeClient, namespace: string): Promise<Map<string, string[]>> {
  const [pods, nodes] = await Promise.all([
    kube.call('list the workloads’ pods', () => kube.core.listNamespacedPod({ namespace, labelSelector: 'jobset.sigs.k8s.io/jobset-name' })),
    kube.call('list the nodes', () => kube.core.listNode({})),
  ]);
  const poolOf = new Map(nodes.items.map((n) => [n.metadata?.name ?? '', n.metadata?.labels?.['cloud.google.com/gke-nodepool'] ?? '']));
  const out = new Map<string, Set<string>>();
  for (const p of pods.items) {
    const pool = poolOf.get(p.spec?.nodeName ?? '');
    const js = p.metadata?.labels?.['jobset.sigs.k8s.io/jobset-name'];
    if (!pool || !js) continue;
    if (!out.has(pool)) out.set(pool, new Set());
    out.get(pool)!.add(js);
  }
  return new Map([...out].map(([k, v]) => [k, [...v].sort()]));
}

/** One workload by name, with its Kueue Workload. */
export async function getWorkload(kube: KubeClient, namespace: string, name: string): Promise<GkeWorkload> {
  const js = (await kube.call(`get workload ${name}`, () => kube.custom.getNamespacedCustomObject({ ...JOBSET, namespace, name }))) as JobSetObject;
  const byOwner = await kueueWorkloadsOf(kube, namespace, [js]);
  return toWorkload(js, byOwner.get(js.metadata?.uid ?? ''));
}

/** A container's whole log as the API server has it now (no following). */
export async function readPodLog(kube: KubeClient, namespace: string, pod: string, container: string): Promise<string> {
  const res = await kube.openLog(namespace, pod, { container }, new AbortController().signal);
  res.setEncoding('utf8');
  let text = '';
  for await (const chunk of res) text += chunk as string;
  return text;
}
