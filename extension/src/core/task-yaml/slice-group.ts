import type { Backend } from '../backend';
import { createSliceGroup } from '../compute/slice-group';
import type { CreateComputeSliceRequest } from '../compute/provider';
import { parseAcceleratorType, resolveSliceShape } from '../compute/tpu-machine-types';
import { acceleratorInfo } from '../../../../protocol/tpu-catalog';
import { isTpwError, TpwError } from '../errors';
import type { CreateQueuedResourceRequest } from '../tpu/api';
import { findNode } from '../slices/find';
import { shortName, type TpuNode } from '../tpu/models';
import { deleteSliceGroup, findSliceGroup, type SliceGroup } from '../slices/multislice';
import type { TaskSpec } from '../../../../protocol/task-yaml-spec';

/**
 * `num_nodes: N` (N > 1) with a TPU type: the task runs on a multislice group of N slices of that type, named
 * after the cluster (NAME-0 … NAME-<N-1>), made as `tpw vm create NAME --slices N` makes it: on the Cloud TPU API
 * one queued resource with a node count, on Compute Engine (types the Cloud TPU API does not offer, e.g. TPU7x)
 * N slices labelled with the group. Why a SkyPilot node of a TPU pod is a slice: MAX_NUM_NODES in
 * protocol/task-yaml-spec.ts.
 */

export type GroupStep =
  | { action: 'reuse-group'; group: SliceGroup; zone: string }
  | { action: 'create-group'; plane: 'tpu-api'; request: CreateQueuedResourceRequest; slices: number; zone: string }
  | { action: 'create-group'; plane: 'compute'; request: CreateComputeSliceRequest; slices: number; zone: string };

/** Where a new group goes, worked out by the caller as for one VM (plan.ts). */
export interface GroupCreateTarget {
  zone: string;
  /** Cloud TPU API only: resolved the way a single VM's is. */
  runtimeVersion(): Promise<string>;
}

/** Which control plane makes a group of `type`: Compute Engine for types the Cloud TPU API does not offer, as `tpw vm create` chooses. */
export function groupPlaneOf(type: string): 'tpu-api' | 'compute' {
  const parsed = parseAcceleratorType(type);
  return parsed && !parsed.family.tpuApi ? 'compute' : 'tpu-api';
}

/** The group to reuse, or how to create it; a single VM of that name, or a group of another shape, is refused. */
export async function resolveGroup(backend: Backend, mode: 'launch' | 'exec', task: TaskSpec, cluster: string, zone: string | undefined, target: () => Promise<GroupCreateTarget>, signal?: AbortSignal): Promise<GroupStep> {
  const n = task.numNodes;
  const group = await findSliceGroup(backend, cluster, zone, signal);
  if (group) {
    const type = group.slices[0].acceleratorType;
    if (group.slices.length !== n || type !== task.acceleratorType) {
      throw new TpwError('FAILED_PRECONDITION', `Multislice group "${cluster}" has ${group.slices.length} slices of ${type}, but the task asks for num_nodes: ${n} of tpu-${task.acceleratorType}: \`tpw down ${cluster}\` first, or launch with another -c NAME.`);
    }
    const notReady = group.slices.find((s) => s.state !== 'READY');
    if (notReady) throw new TpwError('FAILED_PRECONDITION', `Slice ${shortName(notReady.name)} of multislice group "${cluster}" is ${notReady.state}, not READY: \`tpw down ${cluster}\`, then launch again.`);
    return { action: 'reuse-group', group, zone: group.zone };
  }
  try {
    const vm = await findNode(backend, cluster, zone, signal);
    throw new TpwError('FAILED_PRECONDITION', `TPU VM "${cluster}" is a single ${vm.node.acceleratorType}, but the task asks for num_nodes: ${n} (a multislice group): \`tpw down ${cluster}\` first, or launch with another -c NAME.`);
  } catch (e) {
    if (!isTpwError(e, 'NOT_FOUND')) throw e;
  }
  if (mode === 'exec') throw new TpwError('NOT_FOUND', `Multislice group "${cluster}" does not exist: \`tpw launch\` creates it (exec runs on an existing group only).`);
  const t = await target();
  const labels = Object.keys(task.labels).length > 0 ? { labels: task.labels } : {};
  if (groupPlaneOf(task.acceleratorType) === 'compute') {
    const shape = resolveSliceShape(task.acceleratorType);
    const request: CreateComputeSliceRequest = {
      project: backend.project,
      zone: t.zone,
      name: cluster,
      acceleratorType: shape.acceleratorType,
      topology: shape.topology,
      provisioning: task.spot ? 'spot' : 'on-demand',
      ...labels,
    };
    return { action: 'create-group', plane: 'compute', request, slices: n, zone: t.zone };
  }
  const request: CreateQueuedResourceRequest = {
    project: backend.project,
    zone: t.zone,
    queuedResourceId: cluster,
    node: { nodeId: cluster, acceleratorType: task.acceleratorType, runtimeVersion: await t.runtimeVersion(), ...labels },
    tier: task.spot ? 'spot' : 'guaranteed',
    slices: n,
  };
  return { action: 'create-group', plane: 'tpu-api', request, slices: n, zone: t.zone };
}

/** Hosts per slice: from the group when it exists, else from the type's published shape. */
export function hostsPerSlice(step: GroupStep, type: string): number | undefined {
  return step.action === 'reuse-group' ? step.group.slices[0].networkEndpoints.length : acceleratorInfo(type)?.workers;
}

export interface GroupProvisionOptions {
  backend: Backend;
  signal?: AbortSignal;
  say(line: string): void;
}

/** Reuses or creates the group; resolves with its slices, every one READY, in slice order. */
export async function provisionGroup(cluster: string, step: GroupStep, o: GroupProvisionOptions): Promise<TpuNode[]> {
  if (step.action === 'reuse-group') {
    o.say(`Multislice group ${cluster} exists (${step.group.slices.length} slices of ${step.group.slices[0].acceleratorType}, READY in ${step.zone}): reusing it.`);
    return step.group.slices;
  }
  const started = Date.now();
  const took = () => `${((Date.now() - started) / 1000).toFixed(1)}s`;
  if (step.plane === 'compute') {
    const r = step.request;
    o.say(`Multislice group ${cluster} does not exist: creating ${step.slices} slices of tpu-${r.acceleratorType} on Compute Engine (${r.provisioning}) in ${step.zone}…`);
    await createSliceGroup(o.backend.compute, r, step.slices, { signal: o.signal });
  } else {
    const r = step.request;
    o.say(`Multislice group ${cluster} does not exist: queueing ${step.slices} slices of tpu-${r.node.acceleratorType} (${r.node.runtimeVersion}, ${r.tier}) in ${step.zone}…`);
    await o.backend.api.createQueuedResource(r, { signal: o.signal });
    await waitActive(o.backend, step.zone, cluster, o);
  }
  const group = await findSliceGroup(o.backend, cluster, step.zone, o.signal);
  if (!group || group.slices.length !== step.slices) throw new TpwError('INTERNAL', `Multislice group "${cluster}" was created, but ${group ? `has ${group.slices.length} slices` : 'cannot be found'}.`);
  o.say(`Multislice group ${cluster}: ${step.slices} slices READY in ${took()}.`);
  return group.slices;
}

/** Until the queued resource is ACTIVE (every slice READY); a queued resource that fails or is suspended fails the launch. */
async function waitActive(backend: Backend, zone: string, id: string, o: GroupProvisionOptions): Promise<void> {
  const pollMs = backend.kind === 'emulator' ? 200 : 10_000;
  let last = '';
  for (;;) {
    if (o.signal?.aborted) throw new TpwError('CANCELLED', `Stopped waiting for queued resource ${id}; it stays queued (\`tpw down ${id}\` removes it).`);
    const qr = (await backend.api.listQueuedResources(backend.project, zone, o.signal)).find((q) => shortName(q.name) === id);
    if (!qr) throw new TpwError('NOT_FOUND', `Queued resource ${id} in ${zone} went away while waiting for it.`);
    if (qr.state === 'ACTIVE') return;
    if (qr.state === 'FAILED' || qr.state === 'SUSPENDED' || qr.state === 'SUSPENDING') {
      throw new TpwError('UNAVAILABLE', `Queued resource ${id} is ${qr.state}${qr.stateMessage ? ` (${qr.stateMessage})` : ''}: \`tpw down ${id}\`, then launch again.`);
    }
    if (qr.state !== last) o.say(`Queued resource ${id}: ${qr.state}…`);
    last = qr.state;
    await new Promise((res) => setTimeout(res, pollMs));
  }
}

/**
 * `tpw down NAME` on a multislice group: a Compute Engine group's slices are deleted together; a Cloud TPU
 * group's queued resource is deleted with its slices (force). Returns the slices removed, or undefined when
 * NAME is no group.
 */
export async function downGroup(backend: Backend, name: string, zone: string | undefined, say: (l: string) => void): Promise<string[] | undefined> {
  const group = await findSliceGroup(backend, name, zone).catch((e: unknown) => {
    // A group with a slice missing is still the user's to remove.
    if (isTpwError(e, 'FAILED_PRECONDITION')) return undefined;
    throw e;
  });
  if (group?.queuedResource) {
    const names = group.slices.map((s) => shortName(s.name));
    say(`Deleting multislice group ${name}: queued resource ${shortName(group.queuedResource)} and its slices ${names.join(', ')} in ${group.zone}…`);
    await backend.api.deleteQueuedResource({ project: backend.project, zone: group.zone, queuedResource: shortName(group.queuedResource) }, { force: true });
    return names;
  }
  const deleted = await deleteSliceGroup(backend, name, zone);
  if (deleted) say(`Deleted multislice group ${name} on Compute Engine (slices ${deleted.join(', ')}).`);
  return deleted;
}
