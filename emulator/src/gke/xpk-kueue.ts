import type { KubeObject } from './kube-client';
import { TPU_LABELS, TPU_RESOURCE, type NodePoolSlice } from './tpu-shapes';

/**
 * The Kueue objects `xpk cluster create` (xpk 1.16.0, KueueManager and its kueue_config template) leaves on a
 * TPU cluster, so that an emulated cluster is one xpk's and tpw's workloads can be queued on: per TPU slice type a
 * ResourceFlavor `<slices>x<type>` selecting its nodes by accelerator and topology; the ClusterQueue
 * `cluster-queue` (every namespace; quota: all those chips); the LocalQueue `multislice-queue` in `default`; and
 * xpk's PriorityClasses. xpk applies them again whenever it changes the cluster's node pools, and so does the
 * emulator, so a quota changed through the Kubernetes API holds until a node pool is added or removed.
 */

export const CLUSTER_QUEUE = 'cluster-queue';
export const LOCAL_QUEUE = 'multislice-queue';

/** `slices`: one entry per slice (a single-host pool of N nodes is N slices). */
export function xpkKueueObjects(slices: NodePoolSlice[]): KubeObject[] {
  const byType = new Map<string, { slice: NodePoolSlice; slices: number }>();
  for (const s of slices) {
    const key = `${s.acceleratorType}/${s.topology}`;
    const had = byType.get(key);
    byType.set(key, { slice: s, slices: (had?.slices ?? 0) + 1 });
  }
  const flavors = [...byType.values()].map(({ slice, slices }) => ({
    name: `${slices}x${slice.acceleratorType}`,
    nodeLabels: { [TPU_LABELS.accelerator]: slice.gkeAccelerator, [TPU_LABELS.topology]: slice.topology },
    chips: slice.chips * slices,
  }));
  const objects: KubeObject[] = flavors.map((f) => ({
    apiVersion: 'kueue.x-k8s.io/v1beta1', kind: 'ResourceFlavor', metadata: { name: f.name }, spec: { nodeLabels: f.nodeLabels },
  }));
  objects.push(
    {
      apiVersion: 'kueue.x-k8s.io/v1beta1', kind: 'ClusterQueue', metadata: { name: CLUSTER_QUEUE },
      spec: {
        preemption: { reclaimWithinCohort: 'Never', withinClusterQueue: 'LowerPriority' },
        namespaceSelector: {},
        resourceGroups: flavors.length === 0 ? [] : [{ coveredResources: [TPU_RESOURCE], flavors: flavors.map((f) => ({ name: f.name, resources: [{ name: TPU_RESOURCE, nominalQuota: f.chips }] })) }],
      },
    },
    { apiVersion: 'kueue.x-k8s.io/v1beta1', kind: 'LocalQueue', metadata: { name: LOCAL_QUEUE, namespace: 'default' }, spec: { clusterQueue: CLUSTER_QUEUE } },
    ...(
      [['very-low', 100, 'Very Low'], ['low', 250, 'Low'], ['medium', 500, 'Medium'], ['high', 750, 'High'], ['very-high', 1000, 'Very High']] as const
    ).map(([name, value, description]) => ({ apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name }, value, globalDefault: false, description })),
  );
  return objects;
}
