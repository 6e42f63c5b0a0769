import { TpwError } from '../errors';
import type { WaitOptions } from '../tpu/api';
import type { ComputeSlice, ComputeTpuProvider, CreateComputeSliceRequest } from './provider';

/**
 * Multislice on Compute Engine: Compute Engine has no resource for a group of slices (the Cloud TPU API's queued
 * resource with multisliceParams has no counterpart), so a group NAME is N ordinary slices NAME-0 … NAME-<N-1>
 * (each one VM or one MIG, as createSlice makes them) carrying two labels that let them be found again: the
 * group's name and its slice count (so a slice that went missing is noticed, not silently dropped from a run).
 */

export const GROUP_LABEL = 'tpw-slice-group';
export const COUNT_LABEL = 'tpw-slice-count';

/** `NAME-0` … `NAME-<n-1>`, the names Cloud TPU gives a multislice queued resource's nodes too. */
export function sliceNamesOf(group: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${group}-${i}`);
}

/** The group's full name as TpuNode.sliceGroup carries it (its last segment is the group's name). */
export function sliceGroupName(project: string, zone: string, group: string): string {
  return `projects/${project}/locations/${zone}/sliceGroups/${group}`;
}

/** The group a slice's labels put it in, if any. */
export function groupOf(labels: Record<string, string> | undefined): { group: string; count: number } | undefined {
  const group = labels?.[GROUP_LABEL];
  const count = Number(labels?.[COUNT_LABEL] ?? NaN);
  return group && Number.isInteger(count) && count > 0 ? { group, count } : undefined;
}

/** One slice's create request: the group's request with the slice's name and the group labels. */
export function sliceRequest(req: CreateComputeSliceRequest, count: number, index: number): CreateComputeSliceRequest {
  return { ...req, name: `${req.name}-${index}`, labels: { ...(req.labels ?? {}), [GROUP_LABEL]: req.name, [COUNT_LABEL]: String(count) } };
}

/**
 * Creates `count` slices of `req` (named from `req.name`) in parallel and waits for all of them. All or nothing:
 * if one fails, the slices this call made are deleted before the first failure is thrown (a slice that already
 * existed and made its create fail is left alone).
 */
export async function createSliceGroup(provider: ComputeTpuProvider, req: CreateComputeSliceRequest, count: number, opts: WaitOptions = {}): Promise<ComputeSlice[]> {
  if (!Number.isInteger(count) || count < 2) throw new TpwError('INVALID_ARGUMENT', `A multislice group needs at least 2 slices ("${req.name}" asked for ${count}).`);
  const settled = await Promise.allSettled(sliceNamesOf(req.name, count).map((_, i) => provider.createSlice(sliceRequest(req, count, i), opts)));
  const made = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (!failed) return made;
  await Promise.allSettled(made.map((s) => provider.deleteSlice(s.project, s.zone, s.name)));
  throw failed.reason;
}
