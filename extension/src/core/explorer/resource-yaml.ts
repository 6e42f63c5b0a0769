import { stringify } from 'yaml';
import type { QueuedResource, TpuNode } from '../tpu/models';

/**
 * "Show Details": a node or queued resource as YAML, keys in the order a person reads them (identity and
 * state first, then hardware, then the rest) rather than the API's order. Metadata values such as
 * startup scripts become block scalars, which stay readable.
 */
const NODE_KEY_ORDER = ['name', 'state', 'health', 'healthDescription', 'acceleratorType', 'runtimeVersion', 'schedulingConfig', 'createTime', 'description', 'labels', 'networkEndpoints', 'metadata'];

function ordered(obj: Record<string, unknown>, order: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of order) if (obj[k] !== undefined) out[k] = obj[k];
  for (const k of Object.keys(obj).sort()) if (!(k in out) && obj[k] !== undefined) out[k] = obj[k];
  return out;
}

export function nodeToYaml(node: TpuNode): string {
  const withoutEmpty = { ...node } as Record<string, unknown>;
  // Empty maps say nothing; leave them out rather than print `labels: {}`.
  for (const k of ['labels', 'metadata'] as const) if (Object.keys(node[k]).length === 0) delete withoutEmpty[k];
  return stringify(ordered(withoutEmpty, NODE_KEY_ORDER), { lineWidth: 0 });
}

export function queuedResourceToYaml(qr: QueuedResource): string {
  return stringify(ordered({ ...qr }, ['name', 'state', 'stateMessage', 'tier', 'nodeIds', 'acceleratorType', 'runtimeVersion', 'validUntil', 'createTime']), { lineWidth: 0 });
}
