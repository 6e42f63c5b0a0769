import type { Backend } from '../backend';
import { isTpwError, TpwError } from '../errors';
import type { TpuNode } from '../tpu/models';

/** A node and the zone it was found in. */
export interface FoundNode {
  node: TpuNode;
  zone: string;
}

/**
 * Finds a VM by its short name: in `zone` if given, else in every zone of the backend (a name is unique per
 * zone, not per project, so a name found in two zones is an error that asks for --zone).
 */
export async function findNode(backend: Backend, name: string, zone?: string, signal?: AbortSignal): Promise<FoundNode> {
  const zones = zone ? [zone] : backend.zones;
  const hits: FoundNode[] = [];
  for (const z of zones) {
    try {
      hits.push({ node: await backend.api.getNode({ project: backend.project, zone: z, node: name }, signal), zone: z });
    } catch (e) {
      if (!isTpwError(e, 'NOT_FOUND')) throw e;
    }
  }
  if (hits.length === 0) {
    throw new TpwError('NOT_FOUND', `TPU VM "${name}" not found in ${backend.project} (zones: ${zones.join(', ')}).`);
  }
  if (hits.length > 1) {
    throw new TpwError('INVALID_ARGUMENT', `TPU VM "${name}" exists in several zones (${hits.map((h) => h.zone).join(', ')}): pick one with --zone.`);
  }
  return hits[0];
}

/** Lists VMs in every zone of the backend, zone by zone, in parallel. */
export async function listAllNodes(backend: Backend, zone?: string, signal?: AbortSignal): Promise<FoundNode[]> {
  const zones = zone ? [zone] : backend.zones;
  const perZone = await Promise.all(zones.map(async (z) => (await backend.api.listNodes(backend.project, z, signal)).map((node) => ({ node, zone: z }))));
  return perZone.flat();
}
