/**
 * The emulator's GKE with @kubernetes/client-node 1.x (the product's Kubernetes client) for the calls the GKE
 * provider makes, and Kueue for real: on a cluster as `xpk cluster create` leaves it (ClusterQueue
 * `cluster-queue`, LocalQueue `multislice-queue`), a JobSet waits, suspended and without pods, while its queue has
 * no quota left, and starts when quota frees; a spot node pool's preemption ends its pods as GKE does.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, test } from 'node:test';
import type * as K8s from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { emulatorCall } from '../helpers/emulator-api';
import { k8sLib, jobSet, kubeClients, startGkeEmulator, until, waitOperation, type GkeFixture } from '../helpers/gke';
import { testAddressPrefix } from '../helpers/loopback';

const PREFIX = testAddressPrefix(1);

const k8s = k8sLib();

const ZONE = 'us-east5-b';
const CLUSTER = 'queued';
let f: GkeFixture;
let core: K8s.CoreV1Api;
let custom: K8s.CustomObjectsApi;
let kc: K8s.KubeConfig;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const JS = { group: 'jobset.x-k8s.io', version: 'v1alpha2', namespace: 'default', plural: 'jobsets' };
const KQ = { group: 'kueue.x-k8s.io', version: 'v1beta1' };
const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

before(async () => {
  f = await startGkeEmulator('tpw-gke-kueue-', { addressPrefix: PREFIX });
  const [op] = await f.gke.createCluster({
    parent: `projects/${f.project}/locations/${ZONE}`,
    cluster: { name: CLUSTER, nodePools: [{ name: 'spot-pool', initialNodeCount: 4, config: { machineType: 'ct6e-standard-4t', spot: true }, placementPolicy: { tpuTopology: '4x4' } }] },
  });
  await waitOperation(f, ZONE, op);
  ({ kc, core, custom } = await kubeClients(f, ZONE, CLUSTER));
});

after(async () => {
  await f?.close();
});

const podsOf = async (name: string) => (await core.listNamespacedPod({ namespace: 'default', labelSelector: `jobset.sigs.k8s.io/jobset-name=${name}` })).items;
const workloadOf = async (name: string): Promise<Json | undefined> => {
  const list = (await custom.listNamespacedCustomObject({ ...KQ, namespace: 'default', plural: 'workloads' })) as Json;
  return (list.items as Json[]).find((w) => w.metadata.ownerReferences?.some((o: Json) => o.kind === 'JobSet' && o.name === name));
};
const setQuota = (chips: number) =>
  custom.patchClusterCustomObject({ ...KQ, plural: 'clusterqueues', name: 'cluster-queue', body: { spec: { resourceGroups: [{ coveredResources: ['google.com/tpu'], flavors: [{ name: '1xv6e-16', resources: [{ name: 'google.com/tpu', nominalQuota: chips }] }] }] } } }, mergePatch);

test("the cluster has xpk's Kueue objects, read through client-node", async () => {
  const cq = (await custom.getClusterCustomObject({ ...KQ, plural: 'clusterqueues', name: 'cluster-queue' })) as Json;
  assert.deepEqual(cq.spec.resourceGroups, [{ coveredResources: ['google.com/tpu'], flavors: [{ name: '1xv6e-16', resources: [{ name: 'google.com/tpu', nominalQuota: '16' }] }] }]);
  const rf = (await custom.getClusterCustomObject({ ...KQ, plural: 'resourceflavors', name: '1xv6e-16' })) as Json;
  assert.deepEqual(rf.spec.nodeLabels, { 'cloud.google.com/gke-tpu-accelerator': 'tpu-v6e-slice', 'cloud.google.com/gke-tpu-topology': '4x4' });
  const lq = (await custom.getNamespacedCustomObject({ ...KQ, namespace: 'default', plural: 'localqueues', name: 'multislice-queue' })) as Json;
  assert.equal(lq.spec.clusterQueue, 'cluster-queue');
  const nodes = (await core.listNode()).items;
  assert.equal(nodes.length, 4);
  assert.ok(nodes.every((n) => n.metadata?.labels?.['cloud.google.com/gke-spot'] === 'true'));
});

test('a JobSet waits without pods while the queue has no quota left, and runs once the quota frees', async () => {
  const release = path.join(f.dir, 'release-first');
  const first = jobSet('first', { slices: 1, podsPerSlice: 4, topology: '4x4', accelerator: 'tpu-v6e-slice', queue: 'multislice-queue', command: `while [ ! -e ${release} ]; do sleep 0.2; done; echo first done` });
  await custom.createNamespacedCustomObject({ ...JS, body: first });
  await until('first running', async () => ((await podsOf('first')).filter((p) => p.status?.phase === 'Running').length === 4 ? true : undefined));
  const second = jobSet('second', { slices: 1, podsPerSlice: 4, topology: '4x4', accelerator: 'tpu-v6e-slice', queue: 'multislice-queue', command: 'echo second ran' });
  await custom.createNamespacedCustomObject({ ...JS, body: second });
  const pending = await until('second pending in Kueue', async () => {
    const w = await workloadOf('second');
    const c = (w?.status?.conditions as Json[] | undefined)?.find((x) => x.type === 'QuotaReserved');
    return c?.status === 'False' && /insufficient (unused )?quota/.test(c.message) ? c : undefined;
  });
  assert.match(pending.message, /google\.com\/tpu/);
  const got = (await custom.getNamespacedCustomObject({ ...JS, name: 'second' })) as Json;
  assert.equal(got.spec.suspend, true, 'Kueue keeps the JobSet suspended');
  assert.equal((await podsOf('second')).length, 0);

  fs.writeFileSync(release, '');
  await until('second ran', async () => {
    const pods = await podsOf('second');
    return pods.length === 4 && pods.every((p) => p.status?.phase === 'Succeeded') ? pods : undefined;
  });
  const log = new PassThrough();
  let text = '';
  log.on('data', (d: Buffer) => (text += d.toString()));
  const pod = (await podsOf('second'))[0].metadata?.name ?? '';
  await new k8s.Log(kc).log('default', pod, 'main', log, { follow: true });
  await until('log read', async () => (text === 'second ran\n' ? true : undefined), 30_000);
});

test('with no quota at all the workload waits; restoring the quota admits it (client-node patch)', async () => {
  await setQuota(0);
  await custom.createNamespacedCustomObject({ ...JS, body: jobSet('noquota', { slices: 1, podsPerSlice: 4, topology: '4x4', accelerator: 'tpu-v6e-slice', queue: 'multislice-queue', command: 'true' }) });
  await until('noquota pending', async () => ((await workloadOf('noquota'))?.status?.conditions as Json[] | undefined)?.find((c) => c.type === 'QuotaReserved' && c.status === 'False'));
  assert.equal((await podsOf('noquota')).length, 0);
  await setQuota(16);
  await until('noquota admitted and done', async () => {
    const pods = await podsOf('noquota');
    return pods.length === 4 && pods.every((p) => p.status?.phase === 'Succeeded') ? true : undefined;
  });
  const list = (await custom.listNamespacedCustomObject({ ...JS, limit: 1 })) as Json;
  assert.equal(list.items.length, 1);
  assert.ok(list.metadata.continue, 'the API server pages JobSets');
  await custom.deleteNamespacedCustomObject({ ...JS, name: 'noquota', propagationPolicy: 'Foreground' });
  await until('noquota gone', async () => ((await podsOf('noquota')).length === 0 ? true : undefined));
});

test('Secrets and ConfigMaps through client-node reach a pod as env and files', async () => {
  await core.createNamespacedSecret({ namespace: 'default', body: { metadata: { name: 'run-secrets' }, stringData: { HF_TOKEN: 'hf_abc' } } });
  await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'run-part' }, binaryData: { part: Buffer.from([0, 1, 2, 255]).toString('base64') } } });
  await core.createNamespacedPod({
    namespace: 'default',
    body: {
      metadata: { name: 'uses-secret' },
      spec: {
        restartPolicy: 'Never', nodeSelector: { 'cloud.google.com/gke-nodepool': 'spot-pool' },
        volumes: [{ name: 'p', configMap: { name: 'run-part' } }],
        containers: [{
          name: 'main', image: 'x', command: ['sh', '-c', 'echo "$HF_TOKEN"; od -An -tu1 /p/part | tr -s " "'],
          env: [{ name: 'HF_TOKEN', valueFrom: { secretKeyRef: { name: 'run-secrets', key: 'HF_TOKEN' } } }],
          volumeMounts: [{ name: 'p', mountPath: '/p' }], resources: { limits: { 'google.com/tpu': '4' } },
        }],
      },
    },
  });
  await until('uses-secret done', async () => ((await core.readNamespacedPod({ namespace: 'default', name: 'uses-secret' })).status?.phase === 'Succeeded' ? true : undefined));
  const log = await core.readNamespacedPodLog({ namespace: 'default', name: 'uses-secret' });
  assert.equal(log, 'hf_abc\n 0 1 2 255\n');
  await core.deleteNamespacedPod({ namespace: 'default', name: 'uses-secret' });
  await core.deleteNamespacedSecret({ namespace: 'default', name: 'run-secrets' });
});

test("preempting the spot pool ends its pods as a node shutdown does, and its nodes come back", async () => {
  await custom.createNamespacedCustomObject({ ...JS, body: jobSet('preempted', { slices: 1, podsPerSlice: 4, topology: '4x4', accelerator: 'tpu-v6e-slice', queue: 'multislice-queue', command: 'trap "echo term; exit 143" TERM; while true; do sleep 0.1; done' }) });
  await until('preempted running', async () => ((await podsOf('preempted')).filter((p) => p.status?.phase === 'Running').length === 4 ? true : undefined));
  const r = await emulatorCall(f.ep, 'POST', `/emulator/v1/projects/${f.project}/locations/${ZONE}/clusters/${CLUSTER}/nodePools/spot-pool:preempt?downSeconds=3`, {});
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const failed = await until('pods failed by shutdown', async () => {
    const pods = (await podsOf('preempted')).filter((p) => p.metadata?.labels?.['jobset.sigs.k8s.io/restart-attempt'] === '0');
    return pods.length === 4 && pods.every((p) => p.status?.phase === 'Failed') ? pods : undefined;
  });
  for (const p of failed) {
    assert.equal(p.status?.reason, 'Terminated');
    assert.equal(p.status?.message, 'Pod was terminated in response to imminent node shutdown.');
    assert.equal(p.status?.conditions?.find((c) => c.type === 'DisruptionTarget')?.reason, 'TerminationByKubelet');
  }
  const notReady = (await core.listNode()).items.filter((n) => n.status?.conditions?.find((c) => c.type === 'Ready')?.status !== 'True');
  assert.ok(notReady.length > 0, 'the preempted nodes are NotReady for a while');
  await until('nodes Ready again', async () => ((await core.listNode()).items.every((n) => n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True') ? true : undefined));
  await custom.deleteNamespacedCustomObject({ ...JS, name: 'preempted', propagationPolicy: 'Foreground' });
});

test('nodePools.create adds a CPU pool whose untainted nodes run a pod without TPUs; nodePools.delete takes its nodes away', async () => {
  const parent = `projects/${f.project}/locations/${ZONE}/clusters/${CLUSTER}`;
  const [op] = await f.gke.createNodePool({ parent, nodePool: { name: 'cpu', initialNodeCount: 2, config: { machineType: 'e2-standard-8', labels: { team: 'infra' } } } });
  await waitOperation(f, ZONE, op);
  const cpuNodes = (await core.listNode({ labelSelector: 'cloud.google.com/gke-nodepool=cpu' })).items;
  assert.equal(cpuNodes.length, 2);
  for (const n of cpuNodes) {
    assert.equal(n.spec?.taints, undefined);
    assert.equal(n.metadata?.labels?.team, 'infra');
    assert.equal(n.status?.capacity?.cpu, '8');
    assert.equal(n.status?.capacity?.['google.com/tpu'], undefined);
  }
  await core.createNamespacedPod({
    namespace: 'default',
    body: { metadata: { name: 'on-cpu' }, spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'x', command: ['sh', '-c', 'echo "${TPU_ACCELERATOR_TYPE:-no tpu}"'] }] } },
  });
  const done = await until('on-cpu done', async () => {
    const p = await core.readNamespacedPod({ namespace: 'default', name: 'on-cpu' });
    return p.status?.phase === 'Succeeded' ? p : undefined;
  });
  assert.match(done.spec?.nodeName ?? '', /-cpu-/);
  assert.equal(await core.readNamespacedPodLog({ namespace: 'default', name: 'on-cpu' }), 'no tpu\n');
  const [del] = await f.gke.deleteNodePool({ name: `${parent}/nodePools/cpu` });
  await waitOperation(f, ZONE, del);
  assert.equal((await core.listNode({ labelSelector: 'cloud.google.com/gke-nodepool=cpu' })).items.length, 0);
  const [pools] = await f.gke.listNodePools({ parent });
  assert.deepEqual(pools.nodePools?.map((p) => p.name), ['spot-pool']);
});

test('clusters.delete stops the control plane and forgets the cluster', async () => {
  const name = `projects/${f.project}/locations/${ZONE}/clusters/${CLUSTER}`;
  const pids = f.emu.gke.runtime(f.project, ZONE, CLUSTER)?.memory().map((m) => m.pid) ?? [];
  assert.ok(pids.length >= 6, 'etcd, the API server, controller manager, scheduler, JobSet and Kueue run');
  const [op] = await f.gke.deleteCluster({ name });
  await waitOperation(f, ZONE, op);
  await assert.rejects(f.gke.getCluster({ name }), /Not found/);
  for (const pid of pids) assert.throws(() => process.kill(pid, 0), /ESRCH/, `process ${pid} is gone`);
});
