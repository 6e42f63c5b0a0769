import { TpwError } from '../errors';

/**
 * What the GKE target shows and works with, independent of the client library's message types: clusters and
 * node pools from the GKE API, Kueue queues and JobSet workloads from each cluster's Kubernetes API.
 */

export interface ClusterId {
  project: string;
  /** A zone (zonal cluster) or a region (regional cluster). */
  location: string;
  cluster: string;
}

export interface GkeCluster extends ClusterId {
  /** projects/P/locations/L/clusters/C */
  fullName: string;
  /** PROVISIONING, RUNNING, RECONCILING, STOPPING, ERROR, DEGRADED */
  status: string;
  statusMessage?: string;
  /** The API server's address, used as https://ENDPOINT (an IP on Google; host:port on the emulator). */
  endpoint: string;
  /** The cluster CA, PEM. */
  caCertificate: string;
  version?: string;
  autopilot: boolean;
  nodePools: GkeNodePool[];
}

export interface GkeNodePool {
  name: string;
  /** PROVISIONING, RUNNING, RUNNING_WITH_ERROR, RECONCILING, STOPPING, ERROR */
  status: string;
  statusMessage?: string;
  machineType: string;
  /** TPU pools only: `cloud.google.com/gke-tpu-accelerator` and `-topology`, and the type's name (v5litepod-16). */
  tpu?: { accelerator: string; topology: string; type: string; chipsPerNode: number };
  /** Nodes the pool is meant to have (a multi-host TPU slice: its hosts). */
  nodeCount: number;
  spot: boolean;
  /** The reservation the pool consumes, when it names one. */
  reservation?: string;
  locations: string[];
}

export function clusterFullName(id: ClusterId): string {
  return `projects/${id.project}/locations/${id.location}/clusters/${id.cluster}`;
}

export function parseClusterName(name: string): ClusterId {
  const m = /^projects\/([^/]+)\/locations\/([^/]+)\/clusters\/([^/]+)$/.exec(name);
  if (!m) throw new TpwError('INVALID_ARGUMENT', `"${name}" is not a GKE cluster name (projects/P/locations/L/clusters/C).`);
  return { project: m[1], location: m[2], cluster: m[3] };
}

/** The region of a zone (us-central2-b → us-central2); a region stays as it is. */
export function regionOf(location: string): string {
  return /^[a-z]+-[a-z]+\d+-[a-z]$/.test(location) ? location.slice(0, -2) : location;
}

/** A Kueue ClusterQueue with its TPU quota and what is used and waiting. */
export interface GkeClusterQueue {
  name: string;
  /** By flavor and resource: nominal quota, and what admitted workloads use. */
  resources: Array<{ flavor: string; resource: string; nominal: string; used: string }>;
  pending: number;
  admitted: number;
  /** Why it admits nothing, when it says (e.g. a missing flavor), from its Active condition. */
  inactiveReason?: string;
}

export interface GkeLocalQueue {
  namespace: string;
  name: string;
  clusterQueue: string;
  pending: number;
  admitted: number;
}

/** Where a workload is, as the sidebar groups them. */
export type WorkloadPhase = 'queued' | 'admitted' | 'running' | 'succeeded' | 'failed' | 'suspended';

export interface GkeWorkload {
  namespace: string;
  /** The JobSet's name. */
  name: string;
  phase: WorkloadPhase;
  /** Why it waits (Kueue's "couldn't assign flavors…: insufficient quota…"), or why it failed. */
  message?: string;
  queue?: string;
  tpuType?: string;
  slices: number;
  podsPerSlice: number;
  restarts: number;
  createdAt?: string;
  /** The tpw run it belongs to (label), when tpw started it. */
  runId?: string;
}

export interface GkePod {
  name: string;
  /** Slice (job index) and host (completion index) within the workload. */
  slice: number;
  host: number;
  restartAttempt: number;
  /** How often the kubelet restarted its main container in place (xpk's pods have restartPolicy Never: 0 there). */
  containerRestarts: number;
  /** Pending, Running, Succeeded, Failed, Unknown */
  phase: string;
  node?: string;
  exitCode?: number;
  /** A one-line reason: `Terminated: Pod was terminated in response to imminent node shutdown.`, `Unschedulable: …` */
  reason?: string;
  /** The node it ran on was taken away (DisruptionTarget, node shutdown): not the program's failure. */
  disrupted: boolean;
}
