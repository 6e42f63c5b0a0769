import { z } from 'zod';

/**
 * Cloud TPU's resource names and states as the emulator serves them (google.cloud.tpu.v2): the emulator's own
 * model of the API, written from Google's reference, not shared with the product's client (which must be checked
 * against it, not agree with it by construction).
 */

/** Node.State, as the REST API spells it. */
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

/** QueuedResourceState.State. */
export type QueuedResourceStateName =
  | 'STATE_UNSPECIFIED'
  | 'CREATING'
  | 'ACCEPTED'
  | 'PROVISIONING'
  | 'FAILED'
  | 'DELETING'
  | 'ACTIVE'
  | 'SUSPENDING'
  | 'SUSPENDED'
  | 'WAITING_FOR_RESOURCES';

/**
 * Resource ids as Google accepts them (nodes, queued resources, Compute instances): an RFC 1035 label — a
 * lowercase letter, then up to 62 lowercase letters, digits or hyphens, not ending in a hyphen.
 */
export const RESOURCE_ID_PATTERN = /^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$/;

/** The last segment of a resource name (`projects/p/locations/z/nodes/n` → `n`). */
export function lastSegment(resourceName: string): string {
  const i = resourceName.lastIndexOf('/');
  return i < 0 ? resourceName : resourceName.slice(i + 1);
}

/**
 * Where a VM's workers live: their SSH servers, their sandboxes (`workers/<key>/w<i>`), their metadata server.
 * Google scopes a node's id and an instance's name to its project and zone, and a Cloud TPU node and a Compute
 * Engine instance are different resources even when named alike, so the key holds all of that: the same name
 * in two zones, or a node `ce-x` beside an instance `x`, never share (or delete) each other's sandbox.
 */
export function tpuNodeKey(nodeName: string): string {
  const { project, zone, node } = nodeNameParts(nodeName);
  return `tpu/${project}/${zone}/${node}`;
}

/** An instance's key from its selfLink (`…/projects/{p}/zones/{z}/instances/{name}`): `compute/{p}/{z}/{name}`. */
export function computeInstanceKey(selfLink: string): string {
  const m = /\/projects\/([^/]+)\/zones\/([^/]+)\/instances\/([^/]+)$/.exec(selfLink);
  if (!m) throw new Error(`not a Compute Engine instance link: ${selfLink}`);
  return `compute/${m[1]}/${m[2]}/${m[3]}`;
}

/** The parts of `projects/{project}/locations/{zone}/nodes/{node}`; throws on anything else. */
export function nodeNameParts(name: string): { project: string; zone: string; node: string } {
  const parts = name.split('/');
  if (parts.length !== 6 || parts[0] !== 'projects' || parts[2] !== 'locations' || parts[4] !== 'nodes') {
    throw new Error(`not a TPU node resource name: ${name}`);
  }
  return { project: parts[1], zone: parts[3], node: parts[5] };
}
