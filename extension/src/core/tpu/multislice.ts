import type { Backend } from '../backend';
import { isTpwError, TpwError } from '../errors';
import { findNode } from './find';
import { shortName, type QueuedResource, type TpuNode } from './models';

/**
 * Multislice on the Cloud TPU API: one queued resource whose node spec carries `multisliceParams` makes N
 * identical slices (`<prefix>-0` … `<prefix>-<N-1>`). A run on the group runs on every worker of every slice;
 * the group is named by its queued resource's id or by the slices' prefix.
 */
export interface SliceGroup {
  /** The queued resource's full name. */
  queuedResource: string;
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
  if (hits.length === 0) return undefined;
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
  return { queuedResource: qr.name, zone: z, slices };
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
