import { z } from 'zod';

/**
 * The subset of Cloud TPU v2 resources that TPU Workbench reads, in the JSON shape of the REST API
 * (google.cloud.tpu.v2). Field names follow the API; enums arrive as their string names.
 */
export const NodeStateSchema = z.enum([
  'STATE_UNSPECIFIED',
  'CREATING',
  'READY',
  'RESTARTING',
  'REIMAGING',
  'DELETING',
  'REPAIRING',
  'STOPPED',
  'STOPPING',
  'STARTING',
  'PREEMPTED',
  'TERMINATED',
  'HIDING',
  'HIDDEN',
  'UNHIDING',
  'UNKNOWN',
]);
export type NodeState = z.infer<typeof NodeStateSchema>;

export const NetworkEndpointSchema = z.object({
  ipAddress: z.string(),
  port: z.number().int().optional(),
  accessConfig: z.object({ externalIp: z.string().optional() }).optional(),
});
export type NetworkEndpoint = z.infer<typeof NetworkEndpointSchema>;

export const TpuNodeSchema = z.object({
  /** projects/{project}/locations/{zone}/nodes/{node} */
  name: z.string(),
  acceleratorType: z.string(),
  runtimeVersion: z.string(),
  state: NodeStateSchema,
  health: z.string().optional(),
  healthDescription: z.string().optional(),
  description: z.string().optional(),
  networkEndpoints: z.array(NetworkEndpointSchema).default([]),
  schedulingConfig: z.object({ preemptible: z.boolean().optional(), spot: z.boolean().optional(), reserved: z.boolean().optional() }).optional(),
  labels: z.record(z.string()).default({}),
  /** Instance metadata (e.g. `ssh-keys`: `user:ssh-ed25519 AAAA… comment` lines). */
  metadata: z.record(z.string()).default({}),
  createTime: z.string().optional(),
  /** The queued resource that created the node (output only). */
  queuedResource: z.string().optional(),
  /** One slice of a multislice queued resource (output only). */
  multisliceNode: z.boolean().optional(),
  /**
   * The multislice group the node is a slice of, as a full name whose last segment is the group's name: the
   * queued resource (Cloud TPU API) or `projects/P/locations/Z/sliceGroups/NAME` (Compute Engine, from the
   * slices' `tpw-slice-group` label). Set by the client, never sent.
   */
  sliceGroup: z.string().optional(),
  /** Which control plane made the VM: the Cloud TPU API (the default) or Compute Engine (core/compute/). */
  controlPlane: z.enum(['tpu-api', 'compute']).optional(),
  /** Compute Engine's own view of a slice (controlPlane 'compute' only): what the explorer shows beside the state. */
  compute: z
    .object({
      kind: z.enum(['instance', 'mig']),
      /** Instance status (RUNNING, STAGING, …), or "running/target" for a MIG. */
      status: z.string(),
      machineType: z.string(),
      topology: z.string().optional(),
      provisioning: z.enum(['on-demand', 'spot', 'flex-start', 'reservation']),
      /** The reservation the VMs consume (provisioning 'reservation'). */
      reservation: z.string().optional(),
      /** flex-start: how long the VMs may run, in seconds. */
      maxRunDurationSeconds: z.number().optional(),
      targetSize: z.number().int().optional(),
      isStable: z.boolean().optional(),
      lastError: z.string().optional(),
      /** One per worker, in worker-id order: the VM instance behind it (what `gcloud compute ssh` takes). */
      workers: z.array(z.object({ instance: z.string(), status: z.string() })),
    })
    .optional(),
});
export type TpuNode = z.infer<typeof TpuNodeSchema>;

export interface AcceleratorType {
  /** projects/{project}/locations/{zone}/acceleratorTypes/{type} */
  name: string;
  /** e.g. "v5litepod-16" */
  type: string;
}

export interface RuntimeVersion {
  name: string;
  /** e.g. "v2-alpha-tpuv6e" */
  version: string;
}

export interface NodeId {
  project: string;
  zone: string;
  node: string;
}

export function nodeResourceName(id: NodeId): string {
  return `projects/${id.project}/locations/${id.zone}/nodes/${id.node}`;
}

/** Splits `projects/p/locations/z/nodes/n`; throws on anything else. */
export function parseNodeName(name: string): NodeId {
  const m = /^projects\/([^/]+)\/locations\/([^/]+)\/nodes\/([^/]+)$/.exec(name);
  if (!m) throw new Error(`not a TPU node resource name: ${name}`);
  return { project: m[1], zone: m[2], node: m[3] };
}

/** Short name shown to users: the last path segment. */
export function shortName(resourceName: string): string {
  return resourceName.slice(resourceName.lastIndexOf('/') + 1);
}

/**
 * Node IDs as the API accepts them: lowercase letters, digits and hyphens, starting with a letter,
 * at most 63 characters, not ending in a hyphen (RFC 1035 labels).
 */
export const NODE_ID_PATTERN = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** A zone that offers Cloud TPU (google.cloud.location.Location, trimmed). */
export interface Zone {
  /** projects/{project}/locations/{zone} */
  name: string;
  /** e.g. "us-central2-b" */
  locationId: string;
}

/** google.cloud.tpu.v2.QueuedResourceState.State names. */
export const QueuedResourceStateSchema = z.enum([
  'STATE_UNSPECIFIED',
  'CREATING',
  'ACCEPTED',
  'PROVISIONING',
  'FAILED',
  'DELETING',
  'ACTIVE',
  'SUSPENDING',
  'SUSPENDED',
  'WAITING_FOR_RESOURCES',
]);
export type QueuedResourceStateName = z.infer<typeof QueuedResourceStateSchema>;

export interface QueuedResource {
  /** projects/{project}/locations/{zone}/queuedResources/{id} */
  name: string;
  state: QueuedResourceStateName;
  /** Node ids the request creates (tpu.nodeSpec[].nodeId, or `<prefix>-<i>` for a multislice request), in slice order. */
  nodeIds: string[];
  /** A multislice request: this many slices, named `<nodeIdPrefix>-<i>`. */
  multislice?: { nodeCount: number; nodeIdPrefix: string };
  acceleratorType?: string;
  runtimeVersion?: string;
  tier: 'spot' | 'guaranteed' | 'unspecified';
  validUntil?: string;
  createTime?: string;
  /** Why it failed or is waiting, when the API says. */
  stateMessage?: string;
}

export interface QueuedResourceId {
  project: string;
  zone: string;
  queuedResource: string;
}

export function queuedResourceName(id: QueuedResourceId): string {
  return `projects/${id.project}/locations/${id.zone}/queuedResources/${id.queuedResource}`;
}
