import { machineTypeInfo, shapeFromTopology, type TpuFamily, type TpuSliceShape } from '../../../protocol/tpu-machine-types';

/**
 * What GKE makes of a TPU node pool: its slice (machine type × topology → hosts), the labels of its nodes, and
 * the variables GKE's TPU device plugin gives a container that requests `google.com/tpu` on one of them.
 * Facts from GKE's "Plan TPUs in GKE" page and its TPU device plugin (whose label → environment mapping is
 * public): accelerator label values, `cloud.google.com/gke-accelerator-count`, host and chip bounds, wrap.
 */

export const TPU_LABELS = {
  accelerator: 'cloud.google.com/gke-tpu-accelerator',
  topology: 'cloud.google.com/gke-tpu-topology',
  count: 'cloud.google.com/gke-accelerator-count',
  nodePool: 'cloud.google.com/gke-nodepool',
  spot: 'cloud.google.com/gke-spot',
} as const;
export const TPU_RESOURCE = 'google.com/tpu';

/** `cloud.google.com/gke-tpu-accelerator` per family (GKE's names; TPU7x's has no "-slice"). */
const GKE_ACCELERATOR: Record<TpuFamily, string> = {
  v4: 'tpu-v4-podslice',
  v5litepod: 'tpu-v5-lite-podslice',
  v5p: 'tpu-v5p-slice',
  v6e: 'tpu-v6e-slice',
  tpu7x: 'tpu7x',
};

export interface NodePoolSlice extends TpuSliceShape {
  /** The label value GKE gives its nodes. */
  gkeAccelerator: string;
  /** Chips on each node (the machine type's). */
  chipsPerNode: number;
  /** Nodes (TPU VM hosts) in the pool. */
  nodes: number;
}

/**
 * The slice a node pool of `machineType` and `topology` is; throws a sentence naming what GKE would refuse.
 */
export function nodePoolSlice(machineType: string, topology: string | undefined): NodePoolSlice {
  const mt = machineTypeInfo(machineType);
  if (!mt) throw new Error(`Machine type "${machineType}" is not a TPU machine type (e.g. ct5lp-hightpu-4t, ct6e-standard-4t, ct5p-hightpu-4t, tpu7x-standard-4t).`);
  const topo = topology?.trim() || defaultTopology(mt.family, mt.chips);
  const shape = shapeFromTopology(mt.family, topo);
  if (shape.chips % mt.chips !== 0 || (shape.chips !== mt.chips && mt.chips !== shape.chipsPerVm)) {
    throw new Error(`Topology "${topo}" (${shape.chips} chips) does not fit machine type ${machineType} (${mt.chips} chips per VM).`);
  }
  return { ...shape, machineType, gkeAccelerator: GKE_ACCELERATOR[mt.family], chipsPerNode: mt.chips, nodes: shape.chips / mt.chips };
}

function defaultTopology(family: TpuFamily, chips: number): string {
  const dims3 = family === 'v4' || family === 'v5p' || family === 'tpu7x';
  if (dims3) return chips === 1 ? '1x1x1' : '2x2x1';
  return ({ 1: '1x1', 4: '2x2', 8: '2x4' } as Record<number, string>)[chips] ?? '2x2';
}

/** The labels of a node of the pool (besides the hostname, zone and node-pool ones). */
export function tpuNodeLabels(slice: NodePoolSlice): Record<string, string> {
  return {
    [TPU_LABELS.accelerator]: slice.gkeAccelerator,
    [TPU_LABELS.topology]: slice.topology,
    [TPU_LABELS.count]: String(slice.chipsPerNode),
    'cloud.google.com/machine-family': slice.machineType.split('-')[0],
  };
}

/** Chips per host along each axis, by chips on the host (GKE's NUMA-aligned tray shapes). */
const TRAY: Record<number, number[]> = { 1: [1, 1, 1], 2: [1, 2, 1], 4: [2, 2, 1], 8: [2, 4, 1] };

/**
 * What GKE's TPU device plugin puts in the environment of a container that requests `google.com/tpu` on a node
 * of this slice (not in the pod's spec: the kubelet adds it at start). The worker id and hostnames of a
 * multi-host slice come from GKE's webhook instead (tpu-webhook.ts).
 */
export function devicePluginEnv(slice: NodePoolSlice): Record<string, string> {
  const dims = slice.topology.split('x').map(Number);
  while (dims.length < 3) dims.push(1);
  const tray = TRAY[slice.chipsPerNode] ?? [1, 1, 1];
  const hostBounds = dims.map((d, i) => String(Math.max(1, Math.floor(d / tray[i])))).join(',');
  const cube = dims.every((d) => d >= 4);
  const lite = slice.family === 'v5litepod' || slice.family === 'v6e';
  const wrap = lite ? dims.map((d) => String(d === 16)).join(',') : cube ? 'true,true,true' : 'false,false,false';
  const env: Record<string, string> = {
    TPU_SKIP_MDS_QUERY: 'true',
    TPU_ACCELERATOR_TYPE: slice.acceleratorType,
    TPU_TOPOLOGY: slice.topology,
    TPU_TOPOLOGY_ALT: 'false',
    ALT: 'false',
    TPU_TOPOLOGY_WRAP: wrap,
    WRAP: wrap,
    TPU_HOST_BOUNDS: hostBounds,
    HOST_BOUNDS: hostBounds,
    TPU_CHIPS_PER_HOST_BOUNDS: tray.join(','),
    CHIPS_PER_HOST_BOUNDS: tray.join(','),
    TPU_RUNTIME_METRICS_PORTS: Array.from({ length: slice.chipsPerNode }, (_, i) => String(8431 + i)).join(','),
  };
  if (slice.nodes === 1) {
    env.TPU_WORKER_ID = '0';
    env.TPU_WORKER_HOSTNAMES = 'localhost';
  }
  return env;
}
