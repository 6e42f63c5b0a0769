import * as crypto from 'node:crypto';
import { checkLabels, checkMetadataMap } from './labels-metadata';
import { RESOURCE_ID_PATTERN } from './names';
import { acceleratorInfo, acceleratorTypeNames, runtimeVersionProblem, WORKER_ENDPOINT_PORT, type AcceleratorInfo } from './catalog';
import { acceleratorConfigOf, networkConfigFor } from './node-config';
import { ApiError, type CreateNodeInput, type NodeJson } from './types';

/**
 * A CreateNode request's node spec on its own: the checks that need nothing but the request (id, type,
 * runtime, scheduling) and the node it becomes. What depends on the other nodes (a clashing id, free worker
 * addresses) is state.ts's to check.
 */

/** The id, accelerator type, runtime version and scheduling of a spec, as CreateNode rejects them (400). */
export function checkNodeSpec(nodeId: string | undefined, input: CreateNodeInput): { nodeId: string; accel: AcceleratorInfo } {
  if (!nodeId) throw new ApiError('INVALID_ARGUMENT', 'Request is missing required parameter "nodeId".');
  if (!RESOURCE_ID_PATTERN.test(nodeId)) {
    throw new ApiError(
      'INVALID_ARGUMENT',
      `Invalid node id "${nodeId}": it must be 1-63 characters of lowercase letters, digits and hyphens, start with a letter and not end with a hyphen.`,
    );
  }
  const accel = acceleratorInfo(input.acceleratorType ?? '');
  if (!accel) {
    throw new ApiError('INVALID_ARGUMENT', `Invalid accelerator type "${input.acceleratorType ?? ''}". Valid types: ${acceleratorTypeNames().join(', ')}.`);
  }
  const runtimeProblem = runtimeVersionProblem(accel, input.runtimeVersion ?? '');
  if (runtimeProblem) throw new ApiError('INVALID_ARGUMENT', runtimeProblem);
  checkLabels(input.labels, 'labels');
  checkMetadataMap(input.metadata, 'metadata');
  const sc = input.schedulingConfig ?? {};
  if (sc.reserved && (sc.spot || sc.preemptible)) {
    throw new ApiError('INVALID_ARGUMENT', 'schedulingConfig: "reserved" cannot be combined with "spot" or "preemptible".');
  }
  return { nodeId, accel };
}

/** The node a checked spec makes, CREATING, its workers at `addresses`. */
export function newNode(name: string, parent: string, accel: AcceleratorInfo, input: CreateNodeInput, addresses: string[]): NodeJson {
  const networkConfig = networkConfigFor(parent, input.networkConfig);
  const node: NodeJson = {
    name,
    id: randomNodeId(),
    ...(input.description ? { description: input.description } : {}),
    acceleratorType: accel.type,
    runtimeVersion: input.runtimeVersion as string,
    state: 'CREATING',
    networkEndpoints: addresses.map((ip) => ({ ipAddress: ip, port: WORKER_ENDPOINT_PORT, ...(networkConfig.enableExternalIps ? { accessConfig: { externalIp: ip } } : {}) })),
    acceleratorConfig: acceleratorConfigOf(accel),
    networkConfig,
    schedulingConfig: {
      preemptible: input.schedulingConfig?.preemptible ?? false,
      reserved: input.schedulingConfig?.reserved ?? false,
      spot: input.schedulingConfig?.spot ?? false,
    },
    labels: { ...(input.labels ?? {}) },
    ...(input.metadata && Object.keys(input.metadata).length > 0 ? { metadata: { ...input.metadata } } : {}),
    ...(input.dataDisks && input.dataDisks.length > 0 ? { dataDisks: input.dataDisks.map((d) => ({ ...d })) } : {}),
    ...(input.queuedResource ? { queuedResource: input.queuedResource } : {}),
    ...(input.multisliceNode ? { multisliceNode: true } : {}),
    createTime: new Date().toISOString(),
    apiVersion: 'V2',
  };
  return node;
}

function randomNodeId(): string {
  // int64 ids, as the API returns them (a decimal string in JSON).
  return (BigInt.asUintN(63, crypto.randomBytes(8).readBigUInt64BE()) || 1n).toString();
}
