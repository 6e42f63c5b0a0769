import type { Backend } from '../backend';
import { isTpwError, TpwError } from '../errors';
import { groupOf, sliceNamesOf } from '../compute/slice-group';
import { findNode } from './find';
import type { WaitOptions } from '../tpu/api';
import { parseNodeName, shortName, type QueuedResource, type TpuNode } from '../tpu/models';

/**
 * Multislice on the Cloud TPU API: one queued resource whose node spec carries `multisliceParams` makes N
 * identical slices (`<prefix>-0` … `<prefix>-<N-1>`); the group is named by its queued resource's id or by the
 * slices' prefix. On Compute Engine: N slices NAME-0 … labelled with the group (core/compute/slice-group.ts).
 * A run on the group runs on every worker of every slice.
 */
export interface SliceGroup {
  /** The group's full name, as TpuNode.sliceGroup has it (the queued resource on the Cloud TPU API). */
  group: string;
  controlPlane: 'tpu-api' | 'compute';
  /** The queued resource's full name (Cloud TPU API only). */
  queuedResource?: string;
  zone: string;
  /** Every slice, in slice order (MEGASCALE_SLICE_ID). */
  slices: TpuNode[];
}

/** What a run goes to: one VM, or every slice of a group (then `node` is slice 0). */
export interface RunTarget {
  node: TpuNode;
  zone: string;
  /** Set for a multislice group only. */
  slices?: TpuNode[];
}

/** Finds the multislice group `name` (queued resource id or node prefix); undefined if there is none. */
export async function findSliceGroup(backend: Backend, name: string, zone?: string, signal?: AbortSignal): Promise<SliceGroup | undefined> {
  const zones = zone ? [zone] : backend.zones;
  const hits: { qr: QueuedResource; zone: string }[] = [];
  for (const z of zones) {
    let qrs: QueuedResource[];
    try {
      qrs = await backend.api.listQueuedResources(backend.project, z, signal);
    } catch (e) {
      // A backend or zone without queued resources has no groups either.
      if (isTpwError(e, 'NOT_FOUND')) continue;
      throw e;
    }
    for (const qr of qrs) if (qr.multislice && (shortName(qr.name) === name || qr.multislice.nodeIdPrefix === name)) hits.push({ qr, zone: z });
  }
  if (hits.length === 0) return findComputeGroup(backend, name, zones, signal);
  if (hits.length > 1) throw new TpwError('INVALID_ARGUMENT', `Multislice group "${name}" exists in several zones (${hits.map((h) => h.zone).join(', ')}): pick one with --zone.`);
  const { qr, zone: z } = hits[0];
  const slices: TpuNode[] = [];
  for (const id of qr.nodeIds) {
    try {
      slices.push(await backend.api.getNode({ project: backend.project, zone: z, node: id }, signal));
    } catch (e) {
      if (!isTpwError(e, 'NOT_FOUND')) throw e;
      throw new TpwError('FAILED_PRECONDITION', `Slice ${id} of multislice group "${name}" does not exist (queued resource ${shortName(qr.name)} is ${qr.state}): resume recreates it, or reset the queued resource.`, { cause: e });
    }
  }
  return { group: qr.name, controlPlane: 'tpu-api', queuedResource: qr.name, zone: z, slices };
}

/** A Compute Engine group: the slices labelled with `name`; every one of its N slices must be there. */
async function findComputeGroup(backend: Backend, name: string, zones: readonly string[], signal?: AbortSignal): Promise<SliceGroup | undefined> {
  const found: { zone: string; slices: TpuNode[] }[] = [];
  for (const z of zones) {
    const nodes = await backend.api.listNodes(backend.project, z, signal);
    const slices = nodes.filter((n) => n.controlPlane === 'compute' && groupOf(n.labels)?.group === name);
    if (slices.length > 0) found.push({ zone: z, slices });
  }
  if (found.length === 0) return undefined;
  if (found.length > 1) throw new TpwError('INVALID_ARGUMENT', `Multislice group "${name}" exists in several zones (${found.map((f) => f.zone).join(', ')}): pick one with --zone.`);
  const { zone: z, slices } = found[0];
  const count = Math.max(...slices.map((s) => groupOf(s.labels)?.count ?? 0));
  const byName = new Map(slices.map((s) => [shortName(s.name), s]));
  const missing = sliceNamesOf(name, count).filter((n) => !byName.has(n));
  if (missing.length > 0) {
    throw new TpwError(
      'FAILED_PRECONDITION',
      `Multislice group "${name}" on Compute Engine has ${count} slices, but ${missing.join(', ')} ${missing.length > 1 ? 'do' : 'does'} not exist: delete the group (tpw vm delete ${name}) and create it again.`,
    );
  }
  return { group: slices[0].sliceGroup ?? name, controlPlane: 'compute', zone: z, slices: sliceNamesOf(name, count).map((n) => byName.get(n) as TpuNode) };
}

/** A VM by name, else a multislice group by name; NOT_FOUND names both places looked in. */
export async function findRunTarget(backend: Backend, name: string, zone?: string, signal?: AbortSignal): Promise<RunTarget> {
  try {
    return await findNode(backend, name, zone, signal);
  } catch (e) {
    if (!isTpwError(e, 'NOT_FOUND')) throw e;
    const group = await findSliceGroup(backend, name, zone, signal);
    if (!group) throw new TpwError('NOT_FOUND', `${e.message.replace(/\.$/, '')}; no multislice group has that name either.`, { cause: e });
    return { node: group.slices[0], zone: group.zone, slices: group.slices };
  }
}

/** The slice nodes of a recorded run (its `slices`, else its one node), as full names. */
export function sliceNames(rec: { node: string; slices?: string[] }): string[] {
  return rec.slices && rec.slices.length > 0 ? rec.slices : [rec.node];
}

/**
 * `tpw vm delete NAME` on a group: a Compute Engine group's slices (those still there) are deleted together; a
 * Cloud TPU group is its queued resource's to delete, so that is refused with the command that does it.
 * Returns the slices deleted, or undefined when `name` is no group.
 */
export async function deleteSliceGroup(backend: Backend, name: string, zone?: string, opts: WaitOptions = {}): Promise<string[] | undefined> {
  const zones = zone ? [zone] : backend.zones;
  const slices: TpuNode[] = [];
  for (const z of zones) {
    for (const n of await backend.api.listNodes(backend.project, z, opts.signal)) if (n.controlPlane === 'compute' && groupOf(n.labels)?.group === name) slices.push(n);
  }
  if (slices.length === 0) {
    const qr = await findSliceGroup(backend, name, zone, opts.signal).catch(() => undefined);
    if (qr?.queuedResource) throw new TpwError('FAILED_PRECONDITION', `"${name}" is a multislice group made by queued resource ${shortName(qr.queuedResource)}: delete it with tpw qr delete ${shortName(qr.queuedResource)} --force.`);
    return undefined;
  }
  const settled = await Promise.allSettled(slices.map((s) => backend.api.deleteNode(parseNodeName(s.name), opts)));
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  return slices.map((s) => shortName(s.name)).sort();
}
