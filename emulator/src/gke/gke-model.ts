import * as crypto from 'node:crypto';
import { ApiError } from '../types';
import { nodePoolSlice, type NodePoolSlice } from './tpu-shapes';

/**
 * The GKE API's resources as the emulator keeps them (google.container.v1 Cluster, NodePool, Operation in REST
 * JSON, enums by name), and the checks GKE makes on a request before it starts anything. No I/O here: the
 * service (gke-service.ts) runs the clusters and saves this model.
 */

export type ClusterStatus = 'PROVISIONING' | 'RUNNING' | 'RECONCILING' | 'STOPPING' | 'ERROR';
export type PoolStatus = 'PROVISIONING' | 'RUNNING' | 'RECONCILING' | 'STOPPING' | 'ERROR';
export type OperationType = 'CREATE_CLUSTER' | 'DELETE_CLUSTER' | 'CREATE_NODE_POOL' | 'DELETE_NODE_POOL';

export interface NodePoolRecord {
  name: string;
  machineType: string;
  topology?: string;
  policyName?: string;
  spot: boolean;
  reservationAffinity?: Record<string, unknown>;
  labels: Record<string, string>;
  initialNodeCount: number;
  zone: string;
  status: PoolStatus;
  statusMessage?: string;
  /** The nodes GKE made for it (names as GKE makes them, addresses on loopback). */
  nodes: { name: string; address: string }[];
  createTime: string;
}

export interface ClusterRecord {
  name: string;
  project: string;
  /** A zone (zonal cluster) or a region (regional). */
  location: string;
  id: string;
  description?: string;
  resourceLabels: Record<string, string>;
  status: ClusterStatus;
  statusMessage?: string;
  createTime: string;
  /** The cluster's own loopback address, on which its control plane listens. */
  address: string;
  /** The API server's port, kept across emulator restarts (kubeconfigs name it). */
  apiserverPort?: number;
  nodePools: NodePoolRecord[];
}

export interface OperationRecord {
  name: string;
  project: string;
  location: string;
  operationType: OperationType;
  status: 'PENDING' | 'RUNNING' | 'DONE' | 'ABORTING';
  statusMessage?: string;
  targetLink: string;
  startTime: string;
  endTime?: string;
  error?: { code: number; message: string };
}

export const API = 'https://container.googleapis.com/v1';
const NAME = /^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$/;

export function clusterPath(c: { project: string; location: string; name: string }): string {
  return `projects/${c.project}/locations/${c.location}/clusters/${c.name}`;
}

export function checkName(kind: 'cluster' | 'node pool', name: unknown): string {
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new ApiError('INVALID_ARGUMENT', `Invalid ${kind} name "${String(name ?? '')}": it must start with a lowercase letter, hold only lowercase letters, digits and hyphens, end with a letter or digit, and be at most 40 characters.`);
  }
  return name;
}

/** A node pool request body (`nodePool`) → its record, after GKE's checks; nodes are filled in by the service. */
export function nodePoolFrom(body: Record<string, unknown>, zone: string): { pool: NodePoolRecord; slice: NodePoolSlice | undefined } {
  const name = checkName('node pool', body.name);
  const config = (body.config ?? {}) as Record<string, unknown>;
  const machineType = typeof config.machineType === 'string' && config.machineType ? config.machineType : 'e2-medium';
  const placement = (body.placementPolicy ?? {}) as Record<string, unknown>;
  const topology = typeof placement.tpuTopology === 'string' && placement.tpuTopology ? placement.tpuTopology : undefined;
  let slice: NodePoolSlice | undefined;
  let count = Number(body.initialNodeCount ?? (isTpuMachine(machineType) ? 0 : 3));
  if (isTpuMachine(machineType)) {
    try {
      slice = nodePoolSlice(machineType, topology);
    } catch (e) {
      throw new ApiError('INVALID_ARGUMENT', `Node pool "${name}": ${(e as Error).message}`);
    }
    if (slice.nodes > 1) {
      // A multi-host slice is made whole or not at all; GKE refuses any other count.
      if (body.initialNodeCount !== undefined && count !== slice.nodes) {
        throw new ApiError('INVALID_ARGUMENT', `Node pool "${name}": a TPU slice of topology ${slice.topology} on ${machineType} has ${slice.nodes} nodes, so initialNodeCount must be ${slice.nodes}, not ${count}.`);
      }
      count = slice.nodes;
    } else if (body.initialNodeCount === undefined) count = 1;
  }
  if (!Number.isInteger(count) || count < 0 || count > 254) throw new ApiError('INVALID_ARGUMENT', `Node pool "${name}": initialNodeCount ${String(body.initialNodeCount)} is not a node count from 0 to 254.`);
  const labels = (config.labels ?? {}) as Record<string, string>;
  const locations = Array.isArray(body.locations) ? (body.locations as string[]) : [];
  return {
    slice,
    pool: {
      name, machineType, topology: slice?.topology, policyName: typeof placement.policyName === 'string' ? placement.policyName : undefined,
      spot: config.spot === true || config.preemptible === true,
      reservationAffinity: config.reservationAffinity as Record<string, unknown> | undefined,
      labels, initialNodeCount: count, zone: locations[0] ?? zone, status: 'PROVISIONING', nodes: [], createTime: new Date().toISOString(),
    },
  };
}

export function isTpuMachine(machineType: string): boolean {
  return /^(ct4p|ct5lp|ct5p|ct6e|tpu7x)-/.test(machineType);
}

/** GKE's node names: gke-<cluster>-<pool>-<8 hex of the pool>-<4 characters of the node>. */
export function nodeNames(cluster: string, pool: string, count: number): string[] {
  const hash = crypto.createHash('sha256').update(`${cluster}/${pool}/${Date.now()}/${Math.random()}`).digest('hex').slice(0, 8);
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const seen = new Set<string>();
  while (seen.size < count) {
    const id = Array.from(crypto.randomBytes(4), (b) => alphabet[b % alphabet.length]).join('');
    seen.add(`gke-${cluster.slice(0, 20)}-${pool.slice(0, 20)}-${hash}-${id}`);
  }
  return [...seen];
}

export function poolJson(c: ClusterRecord, p: NodePoolRecord, version: string): Record<string, unknown> {
  return {
    name: p.name,
    config: {
      machineType: p.machineType, diskSizeGb: 100, diskType: 'pd-balanced', imageType: 'COS_CONTAINERD', labels: p.labels,
      ...(p.spot ? { spot: true } : {}), ...(p.reservationAffinity ? { reservationAffinity: p.reservationAffinity } : {}),
      oauthScopes: ['https://www.googleapis.com/auth/cloud-platform'], serviceAccount: 'default',
    },
    initialNodeCount: p.initialNodeCount,
    locations: [p.zone],
    ...(p.topology || p.policyName ? { placementPolicy: { type: 'COMPACT', ...(p.topology ? { tpuTopology: p.topology } : {}), ...(p.policyName ? { policyName: p.policyName } : {}) } } : {}),
    selfLink: `${API}/${clusterPath(c)}/nodePools/${p.name}`,
    version,
    instanceGroupUrls: [],
    status: p.status,
    ...(p.statusMessage ? { statusMessage: p.statusMessage } : {}),
    management: { autoUpgrade: true, autoRepair: true },
    podIpv4CidrSize: 24,
    etag: etag(p),
  };
}

export function clusterJson(c: ClusterRecord, extra: { endpoint?: string; caPem?: string; version: string }): Record<string, unknown> {
  const zones = [...new Set(c.nodePools.map((p) => p.zone))];
  return {
    name: c.name,
    ...(c.description ? { description: c.description } : {}),
    nodePools: c.nodePools.map((p) => poolJson(c, p, extra.version)),
    locations: zones.length > 0 ? zones : [c.location],
    network: 'default',
    subnetwork: 'default',
    clusterIpv4Cidr: '10.4.0.0/14',
    servicesIpv4Cidr: '10.96.0.0/16',
    resourceLabels: c.resourceLabels,
    ...(extra.endpoint ? { endpoint: extra.endpoint } : {}),
    masterAuth: extra.caPem ? { clusterCaCertificate: Buffer.from(extra.caPem).toString('base64') } : {},
    initialClusterVersion: extra.version,
    currentMasterVersion: extra.version,
    currentNodeVersion: extra.version,
    createTime: c.createTime,
    status: c.status,
    ...(c.statusMessage ? { statusMessage: c.statusMessage } : {}),
    selfLink: `${API}/${clusterPath(c)}`,
    zone: c.location,
    location: c.location,
    id: c.id,
    autopilot: { enabled: false },
    releaseChannel: { channel: 'REGULAR' },
    currentNodeCount: c.nodePools.reduce((n, p) => n + p.nodes.length, 0),
    etag: etag(c),
  };
}

export function operationJson(op: OperationRecord): Record<string, unknown> {
  return {
    name: op.name,
    zone: op.location,
    operationType: op.operationType,
    status: op.status,
    ...(op.statusMessage ? { statusMessage: op.statusMessage } : {}),
    selfLink: `${API}/projects/${op.project}/locations/${op.location}/operations/${op.name}`,
    targetLink: op.targetLink,
    location: op.location,
    startTime: op.startTime,
    ...(op.endTime ? { endTime: op.endTime } : {}),
    ...(op.error ? { error: { ...op.error, details: [] } } : {}),
  };
}

function etag(o: unknown): string {
  return crypto.createHash('sha1').update(JSON.stringify(o)).digest('hex').slice(0, 8);
}
