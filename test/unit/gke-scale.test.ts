/**
 * Scale (issue 31, item 5): a JobSet of 4 slices × 16 pods starts on one emulated cluster of 4 v5litepod-64 node
 * pools (64 TPU VM nodes), each pod a real process that prints what GKE gave it; and listing a JobSet page stays a
 * page. How long these take is measured in test/bench/gke-scale.bench.ts, not here.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type * as K8s from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { jobSet, kubeClients, startGkeEmulator, until, waitOperation, type GkeFixture } from '../helpers/gke';
import { testAddressPrefix } from '../helpers/loopback';

const PREFIX = testAddressPrefix(1);

const ZONE = 'europe-west4-a';
let f: GkeFixture;
let core: K8s.CoreV1Api;
let custom: K8s.CustomObjectsApi;

before(async () => {
  f = await startGkeEmulator('tpw-gke-scale-', { addressPrefix: PREFIX });
  const pool = (i: number) => ({ name: `slice-${i}`, initialNodeCount: 16, config: { machineType: 'ct5lp-hightpu-4t' }, placementPolicy: { tpuTopology: '8x8' } });
  const [op] = await f.gke.createCluster({ parent: `projects/${f.project}/locations/${ZONE}`, cluster: { name: 'big', nodePools: [0, 1, 2, 3].map(pool) } });
  await waitOperation(f, ZONE, op, 900_000);
  ({ core, custom } = await kubeClients(f, ZONE, 'big'));
});

after(async () => {
  await f?.close();
});

test('a JobSet of 4 slices × 16 pods runs every pod, one per TPU VM, each slice on its own node pool', async () => {
  const JS = { group: 'jobset.x-k8s.io', version: 'v1alpha2', namespace: 'default', plural: 'jobsets' };
  await custom.createNamespacedCustomObject({
    ...JS,
    body: jobSet('wide', { slices: 4, podsPerSlice: 16, topology: '8x8', accelerator: 'tpu-v5-lite-podslice', queue: 'multislice-queue', command: 'echo "$MEGASCALE_SLICE_ID/$TPU_WORKER_ID $TPU_ACCELERATOR_TYPE"' }),
  });
  const pods = await until('64 pods succeeded', async () => {
    const items = (await core.listNamespacedPod({ namespace: 'default', labelSelector: 'jobset.sigs.k8s.io/jobset-name=wide' })).items;
    return items.length === 64 && items.every((p) => p.status?.phase === 'Succeeded') ? items : undefined;
  }, 900_000);
  const seen = new Set<string>();
  const poolsBySlice = new Map<string, Set<string>>();
  for (const p of pods) {
    const slice = p.metadata?.labels?.['jobset.sigs.k8s.io/job-index'] ?? '';
    const worker = p.metadata?.annotations?.['batch.kubernetes.io/job-completion-index'] ?? '';
    const log = await core.readNamespacedPodLog({ namespace: 'default', name: p.metadata?.name ?? '' });
    assert.equal(log, `${slice}/${worker} v5litepod-64\n`);
    seen.add(`${slice}/${worker}`);
    const pool = /slice-\d/.exec(p.spec?.nodeName ?? '')?.[0] ?? '';
    poolsBySlice.set(slice, (poolsBySlice.get(slice) ?? new Set()).add(pool));
  }
  assert.equal(seen.size, 64, 'every (slice, worker) pair once');
  assert.deepEqual([...poolsBySlice.values()].map((s) => s.size), [1, 1, 1, 1]);
  assert.equal(new Set([...poolsBySlice.values()].map((s) => [...s][0])).size, 4, 'four slices on four pools');
});
