/**
 * What GKE gives a TPU pod, as the emulator gives it: the device plugin's variables per node-pool slice (the
 * expected values are the cases of GKE's TPU device plugin's own InitEnvs test, for the same node labels), the
 * webhook's TPU_WORKER_* and MEGASCALE_* for the Jobs of a JobSet, and the slices GKE accepts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { devicePluginEnv, nodePoolSlice } from '../../emulator/src/gke/tpu-shapes';
import { reviewJob, tpuJobEnv } from '../../emulator/src/gke/tpu-webhook';
import { xpkKueueObjects } from '../../emulator/src/gke/xpk-kueue';
import { nodePoolFrom } from '../../emulator/src/gke/gke-model';

test('device plugin env: v5e 4x4 on ct5lp-hightpu-4t (4 hosts) as GKE sets it', () => {
  const s = nodePoolSlice('ct5lp-hightpu-4t', '4x4');
  assert.equal(s.nodes, 4);
  assert.equal(s.gkeAccelerator, 'tpu-v5-lite-podslice');
  assert.deepEqual(devicePluginEnv(s), {
    TPU_SKIP_MDS_QUERY: 'true', TPU_ACCELERATOR_TYPE: 'v5litepod-16', TPU_TOPOLOGY: '4x4', TPU_TOPOLOGY_ALT: 'false', ALT: 'false',
    TPU_TOPOLOGY_WRAP: 'false,false,false', WRAP: 'false,false,false', TPU_HOST_BOUNDS: '2,2,1', HOST_BOUNDS: '2,2,1',
    TPU_CHIPS_PER_HOST_BOUNDS: '2,2,1', CHIPS_PER_HOST_BOUNDS: '2,2,1', TPU_RUNTIME_METRICS_PORTS: '8431,8432,8433,8434',
  });
});

test('device plugin env: single-host slices get worker 0 on localhost; v4 2x2x2 is two hosts with bounds 1,1,2', () => {
  const single = devicePluginEnv(nodePoolSlice('ct5lp-hightpu-8t', '2x4'));
  assert.equal(single.TPU_WORKER_ID, '0');
  assert.equal(single.TPU_WORKER_HOSTNAMES, 'localhost');
  assert.equal(single.TPU_CHIPS_PER_HOST_BOUNDS, '2,4,1');
  assert.equal(single.TPU_RUNTIME_METRICS_PORTS, '8431,8432,8433,8434,8435,8436,8437,8438');
  const v4 = nodePoolSlice('ct4p-hightpu-4t', '2x2x2');
  assert.equal(v4.nodes, 2);
  const env = devicePluginEnv(v4);
  assert.equal(env.TPU_ACCELERATOR_TYPE, 'v4-16');
  assert.equal(env.TPU_HOST_BOUNDS, '1,1,2');
  assert.equal(env.TPU_WORKER_ID, undefined, 'a multi-host slice gets its worker id from the webhook, not the device plugin');
  assert.equal(devicePluginEnv(nodePoolSlice('ct4p-hightpu-4t', '4x4x4')).TPU_TOPOLOGY_WRAP, 'true,true,true');
});

test('a topology that does not fit the machine type, and a machine type that is no TPU, are refused by name', () => {
  assert.throws(() => nodePoolSlice('ct5lp-hightpu-4t', '3x3'), /3x3/);
  assert.throws(() => nodePoolSlice('n2-standard-8', '2x2'), /n2-standard-8.*not a TPU machine type/);
});

const job = (over: { parallelism?: number; replicas?: string; env?: { name: string; value: string }[]; tpu?: boolean } = {}) => ({
  metadata: {
    name: 'run-slice-1',
    labels: {
      'jobset.sigs.k8s.io/jobset-name': 'run', 'jobset.sigs.k8s.io/replicatedjob-name': 'slice',
      'jobset.sigs.k8s.io/replicatedjob-replicas': over.replicas ?? '2', 'jobset.sigs.k8s.io/job-index': '1',
    },
  },
  spec: {
    completionMode: 'Indexed',
    parallelism: over.parallelism ?? 4,
    template: {
      spec: {
        subdomain: 'run',
        containers: [
          { name: 'main', env: over.env, resources: over.tpu === false ? {} : { limits: { 'google.com/tpu': '4' } } },
          { name: 'sidecar' },
        ],
      },
    },
  },
});

test('the webhook gives each TPU container of a JobSet slice its worker id, the slice hostnames and MEGASCALE_*', () => {
  const add = tpuJobEnv(job());
  assert.deepEqual([...add.keys()], [0], 'only the container that requests TPUs');
  const env = Object.fromEntries((add.get(0) ?? []).map((e) => [e.name, e.value ?? e.valueFrom]));
  assert.deepEqual(env.TPU_WORKER_ID, { fieldRef: { apiVersion: 'v1', fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']" } });
  assert.equal(env.TPU_WORKER_HOSTNAMES, 'run-slice-1-0.run,run-slice-1-1.run,run-slice-1-2.run,run-slice-1-3.run');
  assert.equal(env.MEGASCALE_COORDINATOR_ADDRESS, 'run-slice-0-0.run');
  assert.equal(env.MEGASCALE_NUM_SLICES, '2');
  assert.equal(env.MEGASCALE_SLICE_ID, '1');
  assert.equal(env.MEGASCALE_PORT, '8080');
});

test('the webhook leaves single-slice MEGASCALE_* out, keeps what the manifest sets, and ignores Jobs without TPUs', () => {
  const one = Object.fromEntries((tpuJobEnv(job({ replicas: '1' })).get(0) ?? []).map((e) => [e.name, e]));
  assert.ok(one.TPU_WORKER_HOSTNAMES);
  assert.equal(one.MEGASCALE_NUM_SLICES, undefined);
  const own = tpuJobEnv(job({ env: [{ name: 'MEGASCALE_PORT', value: '9999' }] })).get(0) ?? [];
  assert.ok(!own.some((e) => e.name === 'MEGASCALE_PORT'));
  assert.equal(tpuJobEnv(job({ tpu: false })).size, 0);
  assert.equal(tpuJobEnv(job({ parallelism: 1, replicas: '1' })).size, 0, 'a single-host slice: no hostnames from the webhook');
});

test('the AdmissionReview answer is a JSON patch that appends to the container env', () => {
  const answer = reviewJob({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid: 'u1', object: job({ env: [{ name: 'A', value: 'b' }] }) } }) as {
    response: { uid: string; allowed: boolean; patchType: string; patch: string };
  };
  assert.equal(answer.response.uid, 'u1');
  assert.equal(answer.response.allowed, true);
  const ops = JSON.parse(Buffer.from(answer.response.patch, 'base64').toString('utf8')) as { op: string; path: string; value: { name: string }[] }[];
  assert.equal(ops.length, 1);
  assert.equal(ops[0].op, 'replace');
  assert.equal(ops[0].path, '/spec/template/spec/containers/0/env');
  assert.equal(ops[0].value[0].name, 'A');
  assert.ok(ops[0].value.some((e) => e.name === 'TPU_WORKER_ID'));
});

test("xpk's Kueue objects: a flavor per slice type named <slices>x<type>, the ClusterQueue's quota all their chips", () => {
  const v5e = nodePoolSlice('ct5lp-hightpu-4t', '4x4');
  const objs = xpkKueueObjects([v5e, v5e, nodePoolSlice('ct6e-standard-8t', '2x4')]);
  const flavors = objs.filter((o) => o.kind === 'ResourceFlavor');
  assert.deepEqual(flavors.map((f) => [f.metadata.name, (f.spec as { nodeLabels: Record<string, string> }).nodeLabels]), [
    ['2xv5litepod-16', { 'cloud.google.com/gke-tpu-accelerator': 'tpu-v5-lite-podslice', 'cloud.google.com/gke-tpu-topology': '4x4' }],
    ['1xv6e-8', { 'cloud.google.com/gke-tpu-accelerator': 'tpu-v6e-slice', 'cloud.google.com/gke-tpu-topology': '2x4' }],
  ]);
  const cq = objs.find((o) => o.kind === 'ClusterQueue')?.spec as { resourceGroups: { flavors: { name: string; resources: { nominalQuota: number }[] }[] }[] };
  assert.deepEqual(cq.resourceGroups[0].flavors.map((f) => [f.name, f.resources[0].nominalQuota]), [['2xv5litepod-16', 32], ['1xv6e-8', 8]]);
  assert.equal(objs.find((o) => o.kind === 'LocalQueue')?.metadata.name, 'multislice-queue');
  assert.deepEqual(objs.filter((o) => o.kind === 'PriorityClass').map((o) => o.metadata.name), ['very-low', 'low', 'medium', 'high', 'very-high']);
});

test('node pool requests: a CPU pool has no slice and three nodes by default; a TPU pool of a bad name or count is refused by name', () => {
  const cpu = nodePoolFrom({ name: 'default-pool', config: { machineType: 'e2-standard-8' } }, 'us-central2-b');
  assert.equal(cpu.slice, undefined);
  assert.equal(cpu.pool.initialNodeCount, 3);
  const single = nodePoolFrom({ name: 'one', config: { machineType: 'ct6e-standard-8t' }, placementPolicy: { tpuTopology: '2x4' } }, 'us-central2-b');
  assert.equal(single.pool.initialNodeCount, 1);
  assert.throws(() => nodePoolFrom({ name: 'Bad_Pool', config: { machineType: 'ct6e-standard-4t' } }, 'z'), /Invalid node pool name "Bad_Pool"/);
  assert.throws(() => nodePoolFrom({ name: 'np', initialNodeCount: 2, config: { machineType: 'ct6e-standard-4t' }, placementPolicy: { tpuTopology: '4x4' } }, 'z'), /initialNodeCount must be 4, not 2/);
});
