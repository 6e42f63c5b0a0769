import type { NodeState, QueuedResource, QueuedResourceStateName, TpuNode } from '../tpu/models';

/**
 * How the explorer reads a VM's or a queued resource's state: which states move on their own (so the tree
 * polls), which are good, bad or parked (so the icon gets a colour), and the short facts shown next to a VM.
 * Pure functions, so the tree, the CLI and the tests agree on them.
 */

/** The colour family of a state: READY is ok, CREATING is transitional, PREEMPTED is bad, STOPPED is parked. */
export type StateTone = 'ok' | 'transitional' | 'bad' | 'stopped' | 'unknown';

const NODE_TONES: Record<NodeState, StateTone> = {
  STATE_UNSPECIFIED: 'unknown',
  UNKNOWN: 'unknown',
  READY: 'ok',
  CREATING: 'transitional',
  STARTING: 'transitional',
  STOPPING: 'transitional',
  RESTARTING: 'transitional',
  REIMAGING: 'transitional',
  REPAIRING: 'transitional',
  DELETING: 'transitional',
  HIDING: 'transitional',
  UNHIDING: 'transitional',
  PREEMPTED: 'bad',
  TERMINATED: 'bad',
  STOPPED: 'stopped',
  HIDDEN: 'stopped',
};

const QUEUED_TONES: Record<QueuedResourceStateName, StateTone> = {
  STATE_UNSPECIFIED: 'unknown',
  CREATING: 'transitional',
  ACCEPTED: 'transitional',
  WAITING_FOR_RESOURCES: 'transitional',
  PROVISIONING: 'transitional',
  DELETING: 'transitional',
  SUSPENDING: 'transitional',
  ACTIVE: 'ok',
  FAILED: 'bad',
  SUSPENDED: 'stopped',
};

export function nodeStateTone(state: NodeState): StateTone {
  return NODE_TONES[state];
}

export function queuedStateTone(state: QueuedResourceStateName): StateTone {
  return QUEUED_TONES[state];
}

/** A state the VM leaves on its own (CREATING → READY): while one is shown, the tree refreshes. */
export function isNodeTransitional(state: NodeState): boolean {
  return NODE_TONES[state] === 'transitional';
}

/** ACCEPTED, WAITING_FOR_RESOURCES, PROVISIONING, …: the request is still on its way to ACTIVE or FAILED. */
export function isQueuedTransitional(state: QueuedResourceStateName): boolean {
  return QUEUED_TONES[state] === 'transitional';
}

/** Pricing tier of a VM, as the create wizard and the cost table name them. */
export type ProvisioningModel = 'on-demand' | 'spot' | 'reserved';

/** spot and the older preemptible are both billed at the spot price. */
export function provisioningOf(node: Pick<TpuNode, 'schedulingConfig'>): ProvisioningModel {
  const s = node.schedulingConfig;
  if (s?.spot || s?.preemptible) return 'spot';
  if (s?.reserved) return 'reserved';
  return 'on-demand';
}

/** The label shown in the tree: "preemptible" stays distinct from "spot" because the API reports it so. */
export function schedulingLabel(node: Pick<TpuNode, 'schedulingConfig'> & Partial<Pick<TpuNode, 'compute'>>): string {
  // Compute Engine names its own models; flex-start would otherwise read as "preemptible".
  if (node.compute) return node.compute.provisioning === 'reservation' ? 'reserved' : node.compute.provisioning;
  const s = node.schedulingConfig;
  if (s?.spot) return 'spot';
  if (s?.preemptible) return 'preemptible';
  if (s?.reserved) return 'reserved';
  return 'on-demand';
}

/**
 * A pod slice has several workers; Cloud TPU refuses to stop those ("stop is only supported for single-host
 * TPUs"), so the explorer hides Stop for them. A STOPPED node may report no endpoints: single-host then.
 */
export function isMultiHost(node: Pick<TpuNode, 'networkEndpoints'>): boolean {
  return node.networkEndpoints.length > 1;
}

/** Health worth showing: HEALTHY and the unspecified value say nothing a user needs. */
export function healthNote(node: Pick<TpuNode, 'health' | 'healthDescription'>): string | undefined {
  const h = node.health;
  if (!h || h === 'HEALTH_UNSPECIFIED' || h === 'HEALTHY') return node.healthDescription || undefined;
  return node.healthDescription ? `${h}: ${node.healthDescription}` : h;
}

/** "45s", "12m", "3h", "2d": the age of a resource from its RFC 3339 createTime; undefined without one. */
export function formatAge(createTime: string | undefined, now: Date = new Date()): string | undefined {
  if (!createTime) return undefined;
  const t = Date.parse(createTime);
  if (Number.isNaN(t)) return undefined;
  const s = Math.max(0, Math.floor((now.getTime() - t) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

/** The ids a queued resource creates, or its own id when the API did not say. */
export function queuedNodeIds(qr: Pick<QueuedResource, 'nodeIds' | 'name'>): string[] {
  return qr.nodeIds.length > 0 ? qr.nodeIds : [qr.name.slice(qr.name.lastIndexOf('/') + 1)];
}

/**
 * Compute Engine's status behind a slice's state: for a MIG, how many of its VMs run against the size asked for
 * and whether the group is stable (plus the error that keeps it from creating VMs); for one VM, the instance
 * status. `short` leaves out what the state already says (a RUNNING VM that is READY). undefined for Cloud TPU
 * API nodes.
 */
export function computeStatusNote(node: Pick<TpuNode, 'compute' | 'state'>, short = false): string | undefined {
  const c = node.compute;
  if (!c) return undefined;
  if (c.kind === 'instance') return short && c.status === 'RUNNING' && node.state === 'READY' ? undefined : `VM ${c.status}`;
  const running = c.workers.filter((w) => w.status === 'RUNNING').length;
  const target = c.targetSize ?? c.workers.length;
  const parts = [`${running}/${target} VMs running`];
  if (c.isStable === false) parts.push('MIG changing');
  else if (c.isStable === true && !short) parts.push('MIG stable');
  if (c.lastError) parts.push(c.lastError);
  return parts.join(', ');
}
