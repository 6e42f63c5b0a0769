/**
 * The emulator's GKE (issue 31, the emulator's side), end to end with real clients: Google's GKE client creates a
 * cluster with two v5litepod-16 node pools (two slices of 4 TPU VMs); the real kubectl and the cluster's real
 * kube-apiserver, JobSet controller, Job controller, scheduler and Kueue do the rest; the kubelet stand-in runs
 * each pod's command and serves its log to `kubectl logs`. Needs the binaries of scripts/k8s-binaries.sh.
 */
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { jobSet, kubeconfigFor, kubectl, kubectlOk, startGkeEmulator, until, waitOperation, type GkeFixture } from '../helpers/gke';
import { escapeRegExp, testAddressPrefix } from '../helpers/loopback';
import { KubeClient, type KubeObject } from '../../emulator/src/gke/kube-client';

const PREFIX = testAddressPrefix(1);

const ZONE = 'us-central2-b';
const CLUSTER = 'tpu-cluster';
let f: GkeFixture;
let kc = '';
let server = '';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const getJson = async (args: string[]): Promise<Json> => JSON.parse(await kubectlOk(kc, [...args, '-o', 'json'])) as Json;

before(async () => {
  f = await startGkeEmulator('tpw-gke-cluster-', { addressPrefix: PREFIX });
  const parent = `projects/${f.project}/locations/${ZONE}`;
  const pool = (name: string) => ({ name, initialNodeCount: 4, config: { machineType: 'ct5lp-hightpu-4t', spot: name === 'slice-b' }, placementPolicy: { type: 'COMPACT' as const, tpuTopology: '4x4' } });
  const [op] = await f.gke.createCluster({ parent, cluster: { name: CLUSTER, nodePools: [pool('slice-a'), pool('slice-b')] } });
  await waitOperation(f, ZONE, op);
  kc = path.join(f.dir, 'kubeconfig');
  ({ server } = await kubeconfigFor(f, ZONE, CLUSTER, kc));
});

after(async () => {
  await f?.close();
});

test('the GKE API shows the cluster with its endpoint, CA and TPU node pools; bad requests name what is wrong', async () => {
  const [list] = await f.gke.listClusters({ parent: `projects/${f.project}/locations/-` });
  assert.deepEqual(list.clusters?.map((c) => c.name), [CLUSTER]);
  const c = list.clusters?.[0];
  assert.equal(c?.status, 'RUNNING');
  assert.match(c?.endpoint ?? '', new RegExp(`^${escapeRegExp(PREFIX)}\\.\\d+:\\d+$`), 'the cluster listens on an address of its own');
  const ca = new crypto.X509Certificate(Buffer.from(c?.masterAuth?.clusterCaCertificate ?? '', 'base64'));
  assert.ok(ca.ca, 'clusterCaCertificate is a CA certificate');
  assert.match(c?.currentMasterVersion ?? '', /^1\.37\.2-gke\./);
  const [pools] = await f.gke.listNodePools({ parent: `projects/${f.project}/locations/${ZONE}/clusters/${CLUSTER}` });
  assert.deepEqual(pools.nodePools?.map((p) => [p.name, p.config?.machineType, p.placementPolicy?.tpuTopology, p.initialNodeCount, p.status]), [
    ['slice-a', 'ct5lp-hightpu-4t', '4x4', 4, 'RUNNING'],
    ['slice-b', 'ct5lp-hightpu-4t', '4x4', 4, 'RUNNING'],
  ]);
  const [ops] = await f.gke.listOperations({ parent: `projects/${f.project}/locations/${ZONE}` });
  assert.ok(ops.operations?.some((o) => o.operationType === 'CREATE_CLUSTER' && o.status === 'DONE'));

  await assert.rejects(f.gke.getCluster({ name: `projects/${f.project}/locations/${ZONE}/clusters/nope` }), /Not found: .*clusters\/nope/);
  const parent = `projects/${f.project}/locations/${ZONE}/clusters/${CLUSTER}`;
  await assert.rejects(f.gke.createNodePool({ parent, nodePool: { name: 'bad', initialNodeCount: 3, config: { machineType: 'ct5lp-hightpu-4t' }, placementPolicy: { tpuTopology: '4x4' } } }), /has 4 nodes, so initialNodeCount must be 4, not 3/);
  await assert.rejects(f.gke.createNodePool({ parent, nodePool: { name: 'bad', config: { machineType: 'ct5lp-hightpu-4t' }, placementPolicy: { tpuTopology: '3x3' } } }), /Topology "3x3"/);
});

test("the emulator's apply reads again and writes again when another client wrote between its read and its write", async () => {
  const { caPem } = await kubeconfigFor(f, ZONE, CLUSTER, path.join(f.dir, 'kubeconfig-apply'));
  const opts = { server, token: f.ep.token, caPem };
  const other = new KubeClient(opts);
  const collection = '/api/v1/namespaces/default/configmaps';
  await other.create(collection, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'apply-race', namespace: 'default' }, data: { v: '1' } });
  let reads = 0;
  // Kueue writes a LocalQueue's status while the emulator applies it; here the other client writes right after
  // our first read, every time, so the first write is a conflict for certain.
  class Raced extends KubeClient {
    override async get<T = KubeObject>(p: string): Promise<T> {
      const got = await super.get<T>(p);
      if (reads++ === 0) await other.patch(p, { metadata: { labels: { written: 'between' } } });
      return got;
    }
  }
  const mine = new Raced(opts);
  try {
    const applied = await mine.apply(collection, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'apply-race', namespace: 'default' }, data: { v: '2' } });
    assert.deepEqual((applied as KubeObject & { data?: Record<string, string> }).data, { v: '2' });
    assert.equal(reads, 2, 'read again after the conflict');
  } finally {
    mine.close();
    other.close();
  }
});

test('kubectl sees GKE TPU nodes: labels, taint, google.com/tpu capacity, Ready; only the owner gets in', async () => {
  const nodes = (await getJson(['get', 'nodes'])).items as Json[];
  assert.equal(nodes.length, 8);
  for (const n of nodes) {
    assert.match(n.metadata.name, /^gke-tpu-cluster-slice-[ab]-[0-9a-f]{8}-[a-z0-9]{4}$/);
    assert.equal(n.metadata.labels['cloud.google.com/gke-tpu-accelerator'], 'tpu-v5-lite-podslice');
    assert.equal(n.metadata.labels['cloud.google.com/gke-tpu-topology'], '4x4');
    assert.equal(n.metadata.labels['cloud.google.com/gke-accelerator-count'], '4');
    assert.equal(n.status.capacity['google.com/tpu'], '4');
    assert.deepEqual(n.spec.taints, [{ key: 'google.com/tpu', value: 'present', effect: 'NoSchedule' }]);
    assert.equal(n.status.conditions.find((x: Json) => x.type === 'Ready').status, 'True');
  }
  assert.equal(nodes.filter((n) => n.metadata.labels['cloud.google.com/gke-spot'] === 'true').length, 4);
  const who = await kubectl(kc, ['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}']);
  assert.equal(who.out, 'tpw-emulator-user@example.com');
  // No token, or another token: refused (401), as an API server without anonymous auth refuses.
  const anon = path.join(f.dir, 'anon.kubeconfig');
  const cfg = JSON.parse(fs.readFileSync(kc, 'utf8')) as Json;
  cfg.users[0].user = { token: 'not-the-token' };
  fs.writeFileSync(anon, JSON.stringify(cfg), { mode: 0o600 });
  const denied = await kubectl(anon, ['get', 'nodes']);
  assert.notEqual(denied.code, 0);
  assert.match(denied.err, /Unauthorized|must be logged in/);
  const raw = await fetch(`${server}/api/v1/nodes`).catch((e: Error) => e);
  assert.ok(raw instanceof Error, 'the server speaks only TLS with its own CA');
});

test('a 2-slice JobSet runs through the real JobSet controller: every pod runs its command with GKE TPU env, and kubectl logs reads it', async () => {
  // A pod's name resolves while that pod has not ended (as a headless Service's DNS): every pod resolves all 8
  // names, then waits at a barrier (a folder of this machine, which the pods see) until all 8 have, so none ends
  // before the others looked it up, however slowly they start.
  const all = [0, 1].flatMap((j) => [0, 1, 2, 3].map((w) => `two-slice-${j}-${w}.two`)).join(' ');
  const barrier = path.join(f.dir, 'barrier');
  fs.mkdirSync(barrier);
  const cmd = `for h in ${all}; do until getent hosts $h >/dev/null; do sleep 0.2; done; done; touch ${barrier}/$(hostname); ` +
    `until [ "$(ls ${barrier} | wc -l)" -eq 8 ]; do sleep 0.2; done; ` +
    'echo "id=$TPU_WORKER_ID hosts=$TPU_WORKER_HOSTNAMES slice=$MEGASCALE_SLICE_ID/$MEGASCALE_NUM_SLICES coord=$MEGASCALE_COORDINATOR_ADDRESS type=$TPU_ACCELERATOR_TYPE bounds=$TPU_HOST_BOUNDS host=$(hostname)"; getent hosts "$MEGASCALE_COORDINATOR_ADDRESS" | cut -d" " -f1; ' +
    // The node's metadata server, as a GKE node's pods reach their VM's: the emulator's VM services at the node's address.
    'echo "meta=$GCE_METADATA_HOST $(curl -sf -H "Metadata-Flavor: Google" "http://$GCE_METADATA_HOST/computeMetadata/v1/project/project-id")"';
  await kubectlOk(kc, ['apply', '-f', '-'], JSON.stringify(jobSet('two', { slices: 2, podsPerSlice: 4, topology: '4x4', accelerator: 'tpu-v5-lite-podslice', command: cmd, queue: 'multislice-queue' })));
  const pods = await until('8 pods succeeded', async () => {
    const items = (await getJson(['get', 'pods', '-l', 'jobset.sigs.k8s.io/jobset-name=two'])).items as Json[];
    return items.length === 8 && items.every((p) => p.status.phase === 'Succeeded') ? items : undefined;
  });
  // Exclusive placement: each slice's pods on one node pool, the two slices on different pools.
  const poolOf = (p: Json) => /slice-[ab]/.exec(p.spec.nodeName)?.[0];
  const bySlice = new Map<string, Set<string | undefined>>();
  for (const p of pods) {
    const idx = p.metadata.labels['jobset.sigs.k8s.io/job-index'];
    bySlice.set(idx, (bySlice.get(idx) ?? new Set()).add(poolOf(p)));
    assert.equal(p.status.containerStatuses[0].state.terminated.exitCode, 0);
    assert.equal(p.status.containerStatuses[0].state.terminated.reason, 'Completed');
  }
  assert.deepEqual([...bySlice.values()].map((s) => s.size), [1, 1]);
  assert.notEqual([...bySlice.get('0') ?? []][0], [...bySlice.get('1') ?? []][0]);
  const coordinatorNode = pods.find((p) => p.metadata.labels['jobset.sigs.k8s.io/job-index'] === '0' && p.metadata.annotations['batch.kubernetes.io/job-completion-index'] === '0')?.status.hostIP;
  for (const p of pods) {
    const job = p.metadata.labels['jobset.sigs.k8s.io/job-index'];
    const worker = p.metadata.annotations['batch.kubernetes.io/job-completion-index'];
    const log = await kubectlOk(kc, ['logs', p.metadata.name]);
    const hosts = [0, 1, 2, 3].map((i) => `two-slice-${job}-${i}.two`).join(',');
    const meta = /meta=([\d.]+):\d+ (\S*)\n$/.exec(log);
    assert.ok(meta, log);
    assert.equal(meta[1], p.status.hostIP, 'the metadata server at the node\'s own address');
    assert.equal(meta[2], f.project, 'it answers the pod');
    assert.equal(log.slice(0, meta.index), `id=${worker} hosts=${hosts} slice=${job}/2 coord=two-slice-0-0.two type=v5litepod-16 bounds=2,2,1 host=two-slice-${job}-${worker}\n${coordinatorNode}\n`);
  }
  const job0 = await getJson(['get', 'job', 'two-slice-0']);
  const env = job0.spec.template.spec.containers[0].env as Json[];
  assert.ok(env.some((e) => e.name === 'TPU_WORKER_HOSTNAMES'), "GKE's webhook wrote into the Job's pod template");
});

test("the API server serves JobSet's own CRD of the pinned version (the fixture), and the JobSet controller's webhooks are called", async () => {
  const fixture = parseYaml(fs.readFileSync(path.join(__dirname, '../fixtures/gke/jobset/jobset.x-k8s.io_jobsets.yaml'), 'utf8')) as Json;
  const served = await getJson(['get', 'crd', 'jobsets.jobset.x-k8s.io']);
  const schemas = (crd: Json) => (crd.spec.versions as Json[]).map((v) => [v.name, v.served, v.storage, v.schema]);
  assert.deepEqual(schemas(served), schemas(fixture));
  // The validating webhook (the real controller's) refuses a success policy naming no replicated job of the JobSet.
  const bad = jobSet('badpolicy', { slices: 1, podsPerSlice: 4, topology: '4x4', accelerator: 'tpu-v5-lite-podslice', command: 'true' });
  (bad.spec as Json).successPolicy = { operator: 'All', targetReplicatedJobs: ['nope'] };
  const refused = await kubectl(kc, ['apply', '-f', '-'], JSON.stringify(bad));
  assert.notEqual(refused.code, 0);
  assert.match(refused.err, /admission webhook "vjobset\.kb\.io" denied the request.*'nope' does not appear/);
});

test('a failing container ends its pod Failed with its exit code; the JobSet fails', async () => {
  await kubectlOk(kc, ['apply', '-f', '-'], JSON.stringify(jobSet('fails', { slices: 1, podsPerSlice: 4, topology: '4x4', accelerator: 'tpu-v5-lite-podslice', command: 'echo bye >&2; exit 3' })));
  const failed = await until('a failed pod', async () => ((await getJson(['get', 'pods', '-l', 'jobset.sigs.k8s.io/jobset-name=fails'])).items as Json[]).find((p) => p.status.phase === 'Failed'));
  assert.equal(failed.status.containerStatuses[0].state.terminated.exitCode, 3);
  assert.equal(failed.status.containerStatuses[0].state.terminated.reason, 'Error');
  assert.equal(await kubectlOk(kc, ['logs', failed.metadata.name]), 'bye\n');
  await until('the JobSet failed', async () => ((await getJson(['get', 'jobset', 'fails'])).status?.conditions as Json[] | undefined)?.find((c) => c.type === 'Failed' && c.status === 'True'));
  await kubectlOk(kc, ['delete', 'jobset', 'fails', '--wait=false']);
});

test('volumes appear at their mount paths: an init container unpacks a ConfigMap archive into an emptyDir the main container works in', async () => {
  const text = Buffer.from('hello from the workspace\n');
  await kubectlOk(kc, ['create', 'configmap', 'ws-part', `--from-literal=part=${text.toString()}`]);
  const pod = {
    apiVersion: 'v1', kind: 'Pod', metadata: { name: 'vols' },
    spec: {
      restartPolicy: 'Never',
      nodeSelector: { 'cloud.google.com/gke-nodepool': 'slice-a' },
      volumes: [
        { name: 'archive', projected: { sources: [{ configMap: { name: 'ws-part', items: [{ key: 'part', path: '000' }] } }] } },
        { name: 'workspace', emptyDir: {} },
        { name: 'dshm', emptyDir: { medium: 'Memory' } },
      ],
      initContainers: [{ name: 'unpack', image: 'x', command: ['sh', '-c', 'cat /tpw/archive/* > /tpw/workspace/README; echo shm > /dev/shm/mark'], volumeMounts: [{ name: 'archive', mountPath: '/tpw/archive', readOnly: true }, { name: 'workspace', mountPath: '/tpw/workspace' }, { name: 'dshm', mountPath: '/dev/shm' }] }],
      containers: [{
        name: 'main', image: 'x', workingDir: '/tpw/workspace', command: ['sh', '-c', 'cat README; cat /dev/shm/mark; touch /tpw/archive/x 2>/dev/null || echo read-only'],
        resources: { limits: { 'google.com/tpu': '4' } },
        volumeMounts: [{ name: 'archive', mountPath: '/tpw/archive', readOnly: true }, { name: 'workspace', mountPath: '/tpw/workspace' }, { name: 'dshm', mountPath: '/dev/shm' }],
      }],
    },
  };
  await kubectlOk(kc, ['apply', '-f', '-'], JSON.stringify(pod));
  await until('pod vols succeeded', async () => ((await getJson(['get', 'pod', 'vols'])).status.phase === 'Succeeded' ? true : undefined));
  assert.equal(await kubectlOk(kc, ['logs', 'vols']), 'hello from the workspace\nshm\nread-only\n');
  assert.ok(!fs.existsSync('/dev/shm/mark') || fs.readFileSync('/dev/shm/mark', 'utf8') !== 'shm\n', "the machine's own /dev/shm is untouched");
  await kubectlOk(kc, ['delete', 'pod', 'vols', '--wait=false']);
});

test('kubectl logs -f follows a running pod; deleting it sends SIGTERM, then the pod is gone', async () => {
  const pod = {
    apiVersion: 'v1', kind: 'Pod', metadata: { name: 'follow' },
    spec: {
      restartPolicy: 'Never', terminationGracePeriodSeconds: 10, nodeSelector: { 'cloud.google.com/gke-nodepool': 'slice-a' },
      containers: [{ name: 'main', image: 'x', command: ['bash', '-c', 'trap "echo got TERM; exit 0" TERM; echo started; while true; do sleep 0.1; done'], resources: { limits: { 'google.com/tpu': '4' } } }],
    },
  };
  await kubectlOk(kc, ['apply', '-f', '-'], JSON.stringify(pod));
  await until('pod follow running', async () => ((await getJson(['get', 'pod', 'follow'])).status.phase === 'Running' ? true : undefined));
  const follow = kubectl(kc, ['logs', '-f', 'follow']);
  await until('started logged', async () => ((await kubectlOk(kc, ['logs', 'follow'])).includes('started') ? true : undefined));
  await kubectlOk(kc, ['delete', 'pod', 'follow', '--wait=true', '--timeout=60s']);
  const followed = await follow;
  assert.equal(followed.out, 'started\ngot TERM\n');
  const gone = await kubectl(kc, ['get', 'pod', 'follow']);
  assert.match(gone.err, /NotFound|not found/);
});

test('a restarted emulator keeps its cluster: the same endpoint and nodes, a new token, and a pod that was running ends as in a node shutdown', async () => {
  const pod = {
    apiVersion: 'v1', kind: 'Pod', metadata: { name: 'survivor' },
    spec: { restartPolicy: 'Never', nodeSelector: { 'cloud.google.com/gke-nodepool': 'slice-a' }, containers: [{ name: 'main', image: 'x', command: ['sleep', '600'], resources: { limits: { 'google.com/tpu': '4' } } }] },
  };
  await kubectlOk(kc, ['apply', '-f', '-'], JSON.stringify(pod));
  await until('survivor running', async () => ((await getJson(['get', 'pod', 'survivor'])).status.phase === 'Running' ? true : undefined));
  const nodesBefore = ((await getJson(['get', 'nodes'])).items as Json[]).map((n) => n.metadata.name).sort();
  const [before] = await f.gke.getCluster({ name: `projects/${f.project}/locations/${ZONE}/clusters/${CLUSTER}` });
  const oldKubeconfig = fs.readFileSync(kc, 'utf8');

  await f.restart();
  await f.emu.gke.ready(f.project, ZONE, CLUSTER);
  const [after] = await f.gke.getCluster({ name: `projects/${f.project}/locations/${ZONE}/clusters/${CLUSTER}` });
  assert.equal(after.status, 'RUNNING');
  assert.equal(after.endpoint, before.endpoint);
  assert.equal(after.masterAuth?.clusterCaCertificate, before.masterAuth?.clusterCaCertificate, 'the CA is kept, so kubeconfigs stay valid');
  const stale = await kubectl(kc, ['get', 'nodes']);
  assert.match(stale.err, /Unauthorized|must be logged in/, "the old token is refused (kubeconfig still holds it)");
  assert.equal(fs.readFileSync(kc, 'utf8'), oldKubeconfig);
  await kubeconfigFor(f, ZONE, CLUSTER, kc);
  assert.deepEqual(((await getJson(['get', 'nodes'])).items as Json[]).map((n) => n.metadata.name).sort(), nodesBefore);
  const survivor = await until('survivor ended', async () => {
    const p = await getJson(['get', 'pod', 'survivor']);
    return p.status.phase === 'Failed' ? p : undefined;
  });
  assert.equal(survivor.status.reason, 'Terminated');
  assert.equal(survivor.status.message, 'Pod was terminated in response to imminent node shutdown.');
});
