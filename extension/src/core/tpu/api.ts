import type { AcceleratorType, NodeId, QueuedResource, QueuedResourceId, RuntimeVersion, TpuNode, Zone } from './models';

export interface CreateNodeRequest {
  project: string;
  zone: string;
  nodeId: string;
  acceleratorType: string;
  runtimeVersion: string;
  spot?: boolean;
  /** Use a reservation (schedulingConfig.reserved). Exclusive with spot. */
  reserved?: boolean;
  labels?: Record<string, string>;
  description?: string;
  /** Startup script (metadata `startup-script`). */
  startupScript?: string;
  /** Extra instance metadata (merged under startupScript). */
  metadata?: Record<string, string>;
  /** Data disks to attach: persistent disk resource names (projects/p/zones/z/disks/d). */
  dataDisks?: { sourceDisk: string; mode?: 'READ_WRITE' | 'READ_ONLY' }[];
  /** Who makes it: the Cloud TPU API (default) or Compute Engine (backend.api routes it; core/compute/slice-api.ts). */
  controlPlane?: 'tpu-api' | 'compute';
  /**
   * Compute Engine only: how the VMs are provisioned, when `spot` alone cannot say it (flex-start with its run
   * duration, a named reservation) and the slice's topology; what a recreate after a preemption must keep.
   */
  compute?: {
    provisioning: 'on-demand' | 'spot' | 'flex-start' | 'reservation';
    reservation?: string;
    maxRunDurationSeconds?: number;
    topology?: string;
  };
}

/** A queued resource request: one node spec, spot or guaranteed tier, optional valid-until. */
export interface CreateQueuedResourceRequest {
  project: string;
  zone: string;
  queuedResourceId: string;
  /** The node the queued resource will create once capacity is there. */
  node: Omit<CreateNodeRequest, 'project' | 'zone' | 'spot'>;
  tier: 'spot' | 'guaranteed';
  /** RFC 3339 time after which the request is given up (queueingPolicy.validUntilTime). */
  validUntil?: string;
  /**
   * Multislice: this many identical slices (multisliceParams.nodeCount, > 1), named `<node.nodeId>-0` … as
   * Cloud TPU names them.
   */
  slices?: number;
}

/** Progress of a long-running operation, reported while a caller waits for it. */
export interface OperationProgress {
  operationName: string;
  done: boolean;
}

export interface WaitOptions {
  signal?: AbortSignal;
  onProgress?: (p: OperationProgress) => void;
}

/**
 * Everything the extension and the CLI ask of Cloud TPU. One implementation (CloudTpuApi) over the real
 * `@google-cloud/tpu` v2 client serves both Google and the local emulator: only the endpoint differs.
 * Every method throws TpwError with a message naming the resource on failure.
 */
export interface TpuApi {
  /** A label for logs and the UI, e.g. "local emulator (127.0.0.1:8471)" or "project my-proj". */
  readonly description: string;
  listNodes(project: string, zone: string, signal?: AbortSignal): Promise<TpuNode[]>;
  getNode(id: NodeId, signal?: AbortSignal): Promise<TpuNode>;
  /** Starts creation and waits for the operation; resolves with the READY node. */
  createNode(req: CreateNodeRequest, opts?: WaitOptions): Promise<TpuNode>;
  deleteNode(id: NodeId, opts?: WaitOptions): Promise<void>;
  startNode(id: NodeId, opts?: WaitOptions): Promise<TpuNode>;
  stopNode(id: NodeId, opts?: WaitOptions): Promise<TpuNode>;
  /** Replaces the node's metadata (UpdateNode with updateMask=metadata); callers merge first. */
  updateNodeMetadata(id: NodeId, metadata: Record<string, string>, opts?: WaitOptions): Promise<TpuNode>;
  listAcceleratorTypes(project: string, zone: string, signal?: AbortSignal): Promise<AcceleratorType[]>;
  listRuntimeVersions(project: string, zone: string, signal?: AbortSignal): Promise<RuntimeVersion[]>;
  /** Zones (locations) of the project that offer Cloud TPU. */
  listZones(project: string, signal?: AbortSignal): Promise<Zone[]>;
  listQueuedResources(project: string, zone: string, signal?: AbortSignal): Promise<QueuedResource[]>;
  /** Starts the request and waits for the create operation (not for ACTIVE); resolves with the queued resource. */
  createQueuedResource(req: CreateQueuedResourceRequest, opts?: WaitOptions): Promise<QueuedResource>;
  /** Deletes the queued resource (force: also its node). */
  deleteQueuedResource(id: QueuedResourceId, opts?: WaitOptions & { force?: boolean }): Promise<void>;
  close(): Promise<void>;
}
