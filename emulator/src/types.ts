import type { NodeState } from './names';
import type { TpuGeneration } from './catalog';

/**
 * The emulator's wire types (google.cloud.tpu.v2 resources and google.longrunning.Operation in REST JSON)
 * and its error type: shared by state.ts (nodes), queued.ts (queued resources), faults.ts and rest.ts.
 */

/** Google API status names used by the emulator, with their HTTP status and gRPC code. */
export const GOOGLE_STATUS = {
  INVALID_ARGUMENT: { http: 400, grpc: 3 },
  FAILED_PRECONDITION: { http: 400, grpc: 9 },
  UNAUTHENTICATED: { http: 401, grpc: 16 },
  PERMISSION_DENIED: { http: 403, grpc: 7 },
  NOT_FOUND: { http: 404, grpc: 5 },
  ALREADY_EXISTS: { http: 409, grpc: 6 },
  ABORTED: { http: 409, grpc: 10 },
  RESOURCE_EXHAUSTED: { http: 429, grpc: 8 },
  CANCELLED: { http: 499, grpc: 1 },
  INTERNAL: { http: 500, grpc: 13 },
  UNAVAILABLE: { http: 503, grpc: 14 },
  DEADLINE_EXCEEDED: { http: 504, grpc: 4 },
} as const;
export type GoogleStatus = keyof typeof GOOGLE_STATUS;

/**
 * An error the API returns to the client: rest.ts turns it into `{"error":{code,message,status,details}}`.
 * `details` are google.protobuf.Any objects in JSON (`@type` plus fields), e.g. google.rpc.ErrorInfo;
 * `http` overrides the status's usual HTTP code (an injected 429 stays 429).
 */
export class ApiError extends Error {
  readonly details?: Record<string, unknown>[];
  readonly http?: number;
  /** Compute Engine's `errors[].reason` (e.g. notFound, resourceInUseByAnotherResource); the Cloud TPU API has none. */
  readonly reason?: string;
  constructor(
    readonly status: GoogleStatus,
    message: string,
    opts: { details?: Record<string, unknown>[]; http?: number; reason?: string } = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.details = opts.details;
    this.http = opts.http;
    this.reason = opts.reason;
  }
}

export const NODE_TYPE_URL = 'type.googleapis.com/google.cloud.tpu.v2.Node';
export const QUEUED_RESOURCE_TYPE_URL = 'type.googleapis.com/google.cloud.tpu.v2.QueuedResource';
export const EMPTY_TYPE_URL = 'type.googleapis.com/google.protobuf.Empty';
export const OPERATION_METADATA_TYPE_URL = 'type.googleapis.com/google.cloud.tpu.v2.OperationMetadata';

/** google.cloud.tpu.v2.Node as the REST API returns it (enums by name). */
export interface NodeJson {
  name: string;
  id: string;
  description?: string;
  acceleratorType: string;
  runtimeVersion: string;
  state: NodeState;
  health?: 'HEALTHY';
  /** accessConfig only when networkConfig.enableExternalIps. */
  networkEndpoints: { ipAddress: string; port: number; accessConfig?: { externalIp: string } }[];
  /** The slice's generation and chip topology, consistent with acceleratorType (e.g. V5LITE_POD 4x4). */
  acceleratorConfig: AcceleratorConfigJson;
  networkConfig: NetworkConfigJson;
  schedulingConfig: { preemptible: boolean; reserved: boolean; spot: boolean };
  labels: Record<string, string>;
  /** Instance metadata; `ssh-keys` holds `user:ssh-ed25519 AAAA…` lines the workers accept. */
  metadata?: Record<string, string>;
  dataDisks?: AttachedDiskJson[];
  /** The queued resource that created the node (output only). */
  queuedResource?: string;
  /** One slice of a multislice queued resource (output only). */
  multisliceNode?: boolean;
  createTime: string;
  apiVersion: 'V2';
}

/** google.cloud.tpu.v2.AcceleratorConfig. */
export interface AcceleratorConfigJson {
  type: TpuGeneration;
  topology: string;
}

/** google.cloud.tpu.v2.NetworkConfig: full resource names, as a real node reports them. */
export interface NetworkConfigJson {
  network: string;
  subnetwork: string;
  enableExternalIps: boolean;
  canIpForward: boolean;
}

export interface AttachedDiskJson {
  sourceDisk: string;
  mode: 'READ_WRITE' | 'READ_ONLY';
}

export type OperationVerb = 'create' | 'delete' | 'stop' | 'start';

/** google.longrunning.Operation in REST JSON. */
export interface OperationJson {
  name: string;
  metadata: {
    '@type': typeof OPERATION_METADATA_TYPE_URL;
    createTime: string;
    endTime?: string;
    target: string;
    /** `update` (UpdateNode) and `reset` (ResetQueuedResource) operations are done when created; the others run on timers. */
    verb: OperationVerb | 'update' | 'reset';
    cancelRequested: boolean;
    apiVersion: 'v2';
  };
  done: boolean;
  error?: { code: number; message: string };
  response?: { '@type': string } & Record<string, unknown>;
}

export interface CreateNodeInput {
  /** rest.ts resolves a request's acceleratorConfig to this. */
  acceleratorType?: string;
  runtimeVersion?: string;
  description?: string;
  labels?: Record<string, string>;
  schedulingConfig?: { preemptible?: boolean; reserved?: boolean; spot?: boolean };
  metadata?: Record<string, string>;
  dataDisks?: AttachedDiskJson[];
  /** As the request gave it (network/subnetwork may be short names); node-config.ts completes it. */
  networkConfig?: { network?: string; subnetwork?: string; enableExternalIps?: boolean; canIpForward?: boolean };
  queuedResource?: string;
  multisliceNode?: boolean;
}
