import type { GkeCluster, GkeClusterQueue, GkeNodePool, GkePod, GkeWorkload, WorkloadPhase } from '../gke/models';
import type { StateTone } from './node-status';

/**
 * The GKE view's rows as text and tone, apart from VS Code (the tree in vscode/gke-tree.ts draws them):
 * cluster → TPU node pools (nodes, topology, state) → the workloads on each → pods; and per cluster its queues and
 * every workload, by phase, with why a queued one waits.
 */

export interface Row {
  label: string;
  description: string;
  tooltip: string;
  tone: StateTone;
}

function tone(status: string): StateTone {
  if (status === 'RUNNING') return 'ok';
  if (/PROVISIONING|RECONCILING|STOPPING/.test(status)) return 'transitional';
  if (/ERROR|DEGRADED/.test(status)) return 'bad';
  return 'unknown';
}

export function clusterRow(c: GkeCluster): Row {
  const tpuPools = c.nodePools.filter((p) => p.tpu);
  return {
    label: c.cluster,
    description: `${c.location} · ${c.status === 'RUNNING' ? `${tpuPools.length} TPU node pool${tpuPools.length === 1 ? '' : 's'}` : c.status}`,
    tooltip: [`GKE cluster ${c.cluster} (${c.location})`, `Status: ${c.status}${c.statusMessage ? ` — ${c.statusMessage}` : ''}`, c.version && `Version: ${c.version}`, `API server: https://${c.endpoint}`].filter(Boolean).join('\n'),
    tone: tone(c.status),
  };
}

export function nodePoolRow(p: GkeNodePool & { nodes?: { ready: number; total: number } }): Row {
  const nodes = p.nodes ? `${p.nodes.ready}/${p.nodeCount} nodes ready` : `${p.nodeCount} nodes`;
  const capacity = [p.spot ? 'spot' : '', p.reservation ? `reservation ${p.reservation}` : ''].filter(Boolean).join(', ');
  const state = p.status === 'RUNNING' && p.nodes && p.nodes.ready < p.nodeCount ? 'NODES NOT READY' : p.status;
  return {
    label: p.name,
    description: [p.tpu ? `${p.tpu.type} · ${p.tpu.topology}` : p.machineType, nodes, state !== 'RUNNING' ? state : '', capacity].filter(Boolean).join(' · '),
    tooltip: [
      `Node pool ${p.name}: ${p.machineType}`,
      p.tpu && `TPU ${p.tpu.type}: accelerator ${p.tpu.accelerator}, topology ${p.tpu.topology}, ${p.tpu.chipsPerNode} chips per node`,
      `Nodes: ${nodes}`,
      `Status: ${p.status}${p.statusMessage ? ` — ${p.statusMessage}` : ''}`,
      capacity && `Capacity: ${capacity}`,
    ]
      .filter(Boolean)
      .join('\n'),
    tone: state === 'NODES NOT READY' ? 'transitional' : tone(p.status),
  };
}

const PHASE_TONE: Record<WorkloadPhase, StateTone> = {
  queued: 'transitional',
  admitted: 'transitional',
  running: 'ok',
  succeeded: 'stopped',
  failed: 'bad',
  suspended: 'stopped',
};

export function workloadRow(w: GkeWorkload): Row {
  const shape = w.tpuType ? `${w.slices} × ${w.tpuType}` : `${w.slices} slice${w.slices === 1 ? '' : 's'}`;
  const why = w.phase === 'queued' || w.phase === 'failed' ? w.message : undefined;
  return {
    label: w.name,
    description: [w.phase, shape, w.restarts > 0 ? `${w.restarts} restart${w.restarts === 1 ? '' : 's'}` : '', why ?? ''].filter(Boolean).join(' · '),
    tooltip: [`Workload ${w.name} (${w.namespace}): ${w.phase}`, why && `Why: ${why}`, `${shape}, ${w.podsPerSlice} pods per slice`, w.queue && `Queue: ${w.queue}`, w.runId && `tpw run ${w.runId}`, w.createdAt && `Created ${w.createdAt}`]
      .filter(Boolean)
      .join('\n'),
    tone: PHASE_TONE[w.phase],
  };
}

export function podRow(p: GkePod, perSlice: number): Row {
  const where = `s${p.slice}w${p.host}`;
  const restarts = [p.restartAttempt > 0 ? `attempt ${p.restartAttempt}` : '', p.containerRestarts > 0 ? `${p.containerRestarts} container restart${p.containerRestarts === 1 ? '' : 's'}` : ''].filter(Boolean).join(', ');
  return {
    label: `${where} ${p.name}`,
    description: [p.phase, p.exitCode !== undefined ? `exit ${p.exitCode}` : '', p.node ?? '', restarts, p.disrupted ? 'preempted' : ''].filter(Boolean).join(' · '),
    tooltip: [
      `Pod ${p.name}: slice ${p.slice}, host ${p.host} (worker ${p.slice * perSlice + p.host})`,
      `Phase: ${p.phase}`,
      p.node && `Node: ${p.node}`,
      p.reason && `Why: ${p.reason}`,
      `Restarts: JobSet attempt ${p.restartAttempt}, container restarted ${p.containerRestarts} time${p.containerRestarts === 1 ? '' : 's'}`,
      'Click to read its log.',
    ]
      .filter(Boolean)
      .join('\n'),
    tone: p.disrupted ? 'bad' : p.phase === 'Running' ? 'ok' : p.phase === 'Succeeded' ? 'stopped' : p.phase === 'Failed' ? 'bad' : 'transitional',
  };
}

/**
 * A workload's children in the GKE view: the pods of its newest restart attempt (those of earlier attempts are gone
 * or going), slice-major; without pods, one line saying why (queued, with Kueue's reason).
 */
export function workloadChildren(w: GkeWorkload, pods: readonly GkePod[]): { pods: Array<{ pod: GkePod; row: Row }> } | { message: string } {
  if (pods.length === 0) return { message: w.phase === 'queued' ? `Queued: ${w.message ?? 'waiting for Kueue'}` : w.phase === 'admitted' ? 'Admitted: the pods are being made.' : 'No pods.' };
  const newest = Math.max(...pods.map((p) => p.restartAttempt));
  const current = pods.filter((p) => p.restartAttempt === newest).sort((a, b) => a.slice - b.slice || a.host - b.host);
  return { pods: current.map((pod) => ({ pod, row: podRow(pod, w.podsPerSlice) })) };
}

export function queueRow(q: GkeClusterQueue): Row {
  const tpu = q.resources.filter((r) => r.resource === 'google.com/tpu');
  const quota = tpu.map((r) => `${r.used}/${r.nominal} chips (${r.flavor})`).join(', ');
  return {
    label: q.name,
    description: [quota, `${q.admitted} admitted`, `${q.pending} pending`, q.inactiveReason ? `inactive: ${q.inactiveReason}` : ''].filter(Boolean).join(' · '),
    tooltip: [`Kueue ClusterQueue ${q.name}`, ...q.resources.map((r) => `${r.flavor} ${r.resource}: ${r.used} used of ${r.nominal}`), `${q.admitted} admitted, ${q.pending} pending`, q.inactiveReason && `Inactive: ${q.inactiveReason}`]
      .filter(Boolean)
      .join('\n'),
    tone: q.inactiveReason ? 'bad' : 'ok',
  };
}

/** Workloads in the order the sidebar lists them: running and admitted first, then queued, then the finished. */
export function sortWorkloads(ws: readonly GkeWorkload[]): GkeWorkload[] {
  const rank: Record<WorkloadPhase, number> = { running: 0, admitted: 1, queued: 2, suspended: 3, failed: 4, succeeded: 5 };
  return [...ws].sort((a, b) => rank[a.phase] - rank[b.phase] || (b.createdAt ?? '').localeCompare(a.createdAt ?? '') || a.name.localeCompare(b.name));
}
