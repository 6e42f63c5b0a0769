import { protos } from '@google-cloud/tpu';
import { TpwError } from '../errors';
import type { CreateNodeRequest } from './api';
import {
  NodeStateSchema,
  QueuedResourceStateSchema,
  TpuNodeSchema,
  type NodeState,
  type QueuedResource,
  type QueuedResourceStateName,
  type TpuNode,
} from './models';

/**
 * The Cloud TPU v2 client's protobuf messages and the models, both ways: what cloud.ts sends (a Node, a
 * queued resource's times) and what it makes of the answers (TpuNode, QueuedResource).
 */

type INode = protos.google.cloud.tpu.v2.INode;
export type IQueuedResource = protos.google.cloud.tpu.v2.IQueuedResource;
const NodeEnums = protos.google.cloud.tpu.v2.Node;
const QrStateEnum = protos.google.cloud.tpu.v2.QueuedResourceState.State;
const DiskModeEnum = protos.google.cloud.tpu.v2.AttachedDisk.DiskMode;

/** Enum values may arrive as names or numbers (REST with enum-encoding=int); the models use names. */
function enumName(values: Record<string | number, string | number>, v: unknown): string | undefined {
  if (typeof v === 'number') {
    const n = values[v];
    return typeof n === 'string' ? n : undefined;
  }
  return typeof v === 'string' ? v : undefined;
}

function timestampToIso(t: INode['createTime'] | IQueuedResource['createTime']): string | undefined {
  if (!t || t.seconds === undefined || t.seconds === null) return undefined;
  const ms = Number(t.seconds.toString()) * 1000 + Math.floor((t.nanos ?? 0) / 1e6);
  return new Date(ms).toISOString();
}

/** protobuf object (from the client) → the zod TpuNode shape. */
export function toTpuNode(n: INode): TpuNode {
  const stateName = enumName(NodeEnums.State as unknown as Record<string | number, string | number>, n.state);
  const state: NodeState = NodeStateSchema.safeParse(stateName).success ? (stateName as NodeState) : 'UNKNOWN';
  const health = enumName(NodeEnums.Health as unknown as Record<string | number, string | number>, n.health);
  const sc = n.schedulingConfig;
  return TpuNodeSchema.parse({
    name: n.name ?? '',
    acceleratorType: n.acceleratorType ?? '',
    runtimeVersion: n.runtimeVersion ?? '',
    state,
    health: health && health !== 'HEALTH_UNSPECIFIED' ? health : undefined,
    healthDescription: n.healthDescription || undefined,
    description: n.description || undefined,
    networkEndpoints: (n.networkEndpoints ?? []).map((e) => ({
      ipAddress: e.ipAddress ?? '',
      port: e.port ?? undefined,
      accessConfig: e.accessConfig?.externalIp ? { externalIp: e.accessConfig.externalIp } : undefined,
    })),
    schedulingConfig: sc ? { preemptible: !!sc.preemptible, spot: !!sc.spot, reserved: !!sc.reserved } : undefined,
    labels: { ...(n.labels ?? {}) },
    metadata: { ...(n.metadata ?? {}) },
    createTime: timestampToIso(n.createTime),
    queuedResource: n.queuedResource || undefined,
    multisliceNode: n.multisliceNode || undefined,
    sliceGroup: n.multisliceNode && n.queuedResource ? n.queuedResource : undefined,
  });
}

/** CreateNodeRequest → the v2 Node message (scheduling, metadata with the startup script, data disks). */
export function toINode(req: CreateNodeRequest): INode {
  const metadata: Record<string, string> = { ...(req.metadata ?? {}) };
  if (req.startupScript !== undefined) metadata['startup-script'] = req.startupScript;
  const scheduling = req.spot ? { spot: true } : req.reserved ? { reserved: true } : undefined;
  return {
    acceleratorType: req.acceleratorType,
    runtimeVersion: req.runtimeVersion,
    labels: req.labels ?? {},
    ...(req.description ? { description: req.description } : {}),
    ...(scheduling ? { schedulingConfig: scheduling } : {}),
    ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
    ...(req.dataDisks && req.dataDisks.length > 0
      ? { dataDisks: req.dataDisks.map((d) => ({ sourceDisk: d.sourceDisk, mode: DiskModeEnum[d.mode ?? 'READ_WRITE'] })) }
      : {}),
  };
}

export function isoToTimestamp(iso: string): { seconds: number; nanos: number } {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) throw new TpwError('INVALID_ARGUMENT', `Invalid valid-until time "${iso}": use an RFC 3339 time such as 2030-01-01T00:00:00Z.`);
  return { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 };
}

export function shortNameOf(resourceName: string): string {
  return resourceName.slice(resourceName.lastIndexOf('/') + 1);
}

/** protobuf QueuedResource (from the client) → the QueuedResource model. */
export function toQueuedResource(q: IQueuedResource): QueuedResource {
  const stateName = enumName(QrStateEnum as unknown as Record<string | number, string | number>, q.state?.state);
  const state: QueuedResourceStateName = QueuedResourceStateSchema.safeParse(stateName).success ? (stateName as QueuedResourceStateName) : 'STATE_UNSPECIFIED';
  const specs = q.tpu?.nodeSpec ?? [];
  const first = specs[0]?.node;
  const multi = specs[0]?.multisliceParams;
  const failed = q.state?.failedData?.error?.message;
  const validUntil = timestampToIso(q.queueingPolicy?.validUntilTime);
  return {
    name: q.name ?? '',
    state,
    nodeIds: specs.flatMap((s) => {
      const m = s.multisliceParams;
      if (m && Number(m.nodeCount) > 1) return Array.from({ length: Number(m.nodeCount) }, (_, i) => `${m.nodeIdPrefix || shortNameOf(q.name ?? '')}-${i}`);
      return s.nodeId ? [s.nodeId] : [];
    }),
    ...(multi && Number(multi.nodeCount) > 1 ? { multislice: { nodeCount: Number(multi.nodeCount), nodeIdPrefix: multi.nodeIdPrefix || shortNameOf(q.name ?? '') } } : {}),
    ...(first?.acceleratorType ? { acceleratorType: first.acceleratorType } : {}),
    ...(first?.runtimeVersion ? { runtimeVersion: first.runtimeVersion } : {}),
    tier: q.spot ? 'spot' : q.guaranteed ? 'guaranteed' : 'unspecified',
    ...(validUntil ? { validUntil } : {}),
    ...(timestampToIso(q.createTime) ? { createTime: timestampToIso(q.createTime) } : {}),
    ...(failed ? { stateMessage: failed } : {}),
  };
}
