/**
 * GKE runs on the one run engine, against the emulator's real control plane (kube-apiserver, etcd, the JobSet
 * controller, Kueue, the scheduler; its TPU nodes and kubelet stand-in): the product's own code end to end —
 * `openBackend`'s GKE provider, `runRecipeOnGke`, `watchRecordedRun`, `stopRecordedRun` — on a cluster as
 * `xpk cluster create` leaves it, with two v5litepod-16 node pools (4 VMs each) and a spot one.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { openBackend, type Backend } from '../../extension/src/core/backend';
import { isTpwError } from '../../extension/src/core/errors';
import { KubeClient } from '../../extension/src/core/gke/kube';
import { staticToken } from '../../extension/src/core/gke/credentials';
import { getWorkload, listPods, listQueues, listWorkloads, POD_CONTAINER, readPodLog, workloadsByNodePool } from '../../extension/src/core/gke/workloads';
import { workloadChildren } from '../../extension/src/core/explorer/gke-rows';
import { loadRun, runRecipeOnGke, runStatusText, stopRecordedRun, watchRecordedRun, type RunResult } from '../../extension/src/core/run/engine';
import type { MetricRecord } from '../../protocol/metrics-record';
import { tpwInProcess } from '../helpers/cli';
import { emulatorRequest } from '../helpers/emulator-http';
import { k8sLib, kubectlOk, startGkeEmulator, until, waitOperation, type GkeFixture } from '../helpers/gke';
import { testAddressPrefix } from '../helpers/loopback';
import { buildProductionBundles, productionTpw } from '../helpers/production-cli';
import { diffPaths, xpkCases } from '../helpers/xpk-fixtures';
import { renderJobSet } from '../../extension/src/core/gke/manifest';
import { fetchGkeCaptures, listGkeCaptures } from '../../extension/src/core/run/gke-captures';
import { ProfileWasm } from '../../extension/src/core/profiles/wasm-host';
import { GcsReader } from '../../extension/src/core/storage/gcs-reader';
import { storageDir } from '../../emulator/src/emulator';

const k8s = k8sLib();
const ZONE = 'us-central2-b';
const CLUSTER = 'demo';
let f: GkeFixture;
let backend: Backend;

let ws: string;
/** The production CLI bundles (cli.js with kubernetes.js and container.js, minified), built apart from dist/. */
let prodCli: string;

const TOKEN = 'hf_test_secret_token';
/** What the pods print of the token: its hash, so the recipe (which reaches the JobSet) never holds the value. */
const TOKEN_SHA = createHash('sha256').update(TOKEN).digest('hex').slice(0, 12);
const RECIPE_HELLO = `export GREETING="hello from"
python3 -c "import os, sys, json; print(os.environ['GREETING'], 'worker', os.environ['TPW_WORKER_INDEX'], 'tpu', os.environ.get('TPU_WORKER_ID'), 'slice', os.environ.get('MEGASCALE_SLICE_ID'), 'of', os.environ.get('MEGASCALE_NUM_SLICES'), 'data', open('data.txt').read().strip(), 'secret', __import__('hashlib').sha256(os.environ.get('HF_TOKEN', '').encode()).hexdigest()[:12]); print(os.environ['TPW_METRICS_ECHO'] + json.dumps({'step': 1, 'loss': 2.5, 'worker': int(os.environ['TPW_WORKER_INDEX'])}), flush=True)"
`;

function writeRecipe(name: string, text: string): string {
  const file = path.join(ws, 'recipes', name);
  fs.writeFileSync(file, text);
  return file;
}

const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

async function setQuota(chips: number): Promise<void> {
  const kube = backend.gke.kube(await backend.gke.findCluster(f.project, CLUSTER));
  const q = (await kube.custom.getClusterCustomObject({ group: 'kueue.x-k8s.io', version: 'v1beta1', plural: 'clusterqueues', name: 'cluster-queue' })) as { spec: { resourceGroups: Array<{ coveredResources: string[]; flavors: Array<{ name: string; resources: Array<{ name: string; nominalQuota: number }> }> }> } };
  for (const g of q.spec.resourceGroups) for (const fl of g.flavors) for (const r of fl.resources) if (r.name === 'google.com/tpu') r.nominalQuota = chips;
  await kube.custom.patchClusterCustomObject({ group: 'kueue.x-k8s.io', version: 'v1beta1', plural: 'clusterqueues', name: 'cluster-queue', body: { spec: { resourceGroups: q.spec.resourceGroups } } }, mergePatch);
}

interface Collected {
  lines: Map<number, string[]>;
  metrics: MetricRecord[];
  notices: string[];
}

function collector(): Collected & { listener: Parameters<typeof runRecipeOnGke>[0]['listener'] } {
  const c: Collected = { lines: new Map(), metrics: [], notices: [] };
  return {
    ...c,
    listener: {
      onLine: (w, _s, line) => c.lines.set(w, [...(c.lines.get(w) ?? []), line]),
      onMetrics: (_w, records) => c.metrics.push(...records),
      onNotice: (m) => c.notices.push(m),
    },
  };
}

before(async () => {
  prodCli = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-gke-prod-cli-'));
  const building = buildProductionBundles(prodCli, ['cli', 'compute', 'container', 'kubernetes']);
  f = await startGkeEmulator('tpw-gke-run-', { addressPrefix: testAddressPrefix(1) });
  const pool = (name: string, spot = false) => ({ name, initialNodeCount: 4, config: { machineType: 'ct5lp-hightpu-4t', spot }, placementPolicy: { tpuTopology: '4x4' } });
  const [op] = await f.gke.createCluster({ parent: `projects/${f.project}/locations/${ZONE}`, cluster: { name: CLUSTER, nodePools: [pool('np-a'), pool('np-b')] } });
  await waitOperation(f, ZONE, op, 900_000);
  backend = await openBackend({ useEmulator: true, tpwHome: f.dir });
  ws = fs.mkdtempSync(path.join(f.dir, 'ws-'));
  fs.mkdirSync(path.join(ws, 'recipes'));
  fs.writeFileSync(path.join(ws, 'data.txt'), 'from-the-workspace\n');
  await building;
});

after(async () => {
  await backend?.close();
  await f?.close();
  if (prodCli) fs.rmSync(prodCli, { recursive: true, force: true });
});

test('the provider sees the cluster, its TPU node pools with their nodes, and xpk’s queues', async () => {
  const cluster = await backend.gke.findCluster(f.project, CLUSTER);
  assert.equal(cluster.status, 'RUNNING');
  const pools = await backend.gke.nodePools(cluster);
  assert.deepEqual(
    pools.map((p) => [p.name, p.tpu?.type, p.tpu?.topology, `${p.nodes.ready}/${p.nodeCount}`]),
    [
      ['np-a', 'v5litepod-16', '4x4', '4/4'],
      ['np-b', 'v5litepod-16', '4x4', '4/4'],
    ],
  );
  const q = await listQueues(backend.gke.kube(cluster));
  assert.deepEqual(q.localQueues.map((l) => [l.namespace, l.name, l.clusterQueue]), [['default', 'multislice-queue', 'cluster-queue']]);
  assert.ok(q.clusterQueues[0].resources.some((r) => r.resource === 'google.com/tpu' && Number(r.nominal) === 32));
  await assert.rejects(backend.gke.findCluster(f.project, 'nope'), (e: unknown) => isTpwError(e, 'NOT_FOUND') && /No GKE cluster "nope" in project .*; it has demo \(us-central2-b\)/.test(e.message));
});

test('the CLI: tpw gke use remembers the cluster for the folder; clusters, nodepools, queues, workloads; run --dry-run prints the JobSet; an unknown cluster is one line', async () => {
  const tpw = (...argv: string[]) => tpwInProcess(argv, { cwd: ws, env: { TPW_HOME: f.dir, HF_TOKEN: TOKEN } });
  const ok = async (...argv: string[]) => {
    const r = await tpw(...argv);
    assert.equal(r.code, 0, `tpw ${argv.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  assert.match(await ok('gke', 'use', '--emulator', '--project', f.project, '--zone', ZONE, '--cluster', CLUSTER, '--tpu-type', 'v5litepod-16', '--num-slices', '2'), /Using GKE cluster demo .*2 × v5litepod-16/);
  assert.match(await ok('gke', 'clusters', '--emulator'), new RegExp(`^demo \\* +${ZONE} +RUNNING .*v5litepod-16$`, 'm'), '* marks the cluster this folder uses');
  // From here on the folder's remembered cluster (and the emulator) is used: no --cluster, no --emulator.
  const pools = await ok('gke', 'nodepools');
  for (const np of ['np-a', 'np-b']) assert.match(pools, new RegExp(`^${np} +v5litepod-16 +4x4 +4/4 `, 'm'));
  assert.match(await ok('gke', 'queues'), /^multislice-queue +default +cluster-queue /m);
  assert.match(await ok('gke', 'workloads'), /^(WORKLOAD +PHASE|No workloads in namespace default)/m);
  writeRecipe('dry.sh', RECIPE_HELLO);
  const yaml = await ok('run', 'recipes/dry.sh', '--dry-run', '--', 'model=tiny');
  assert.match(yaml, /^kind: JobSet$/m);
  assert.match(yaml, /kueue\.x-k8s\.io\/queue-name: multislice-queue/);
  assert.match(yaml, /^ +replicas: 2$/m, 'one replicated job per slice');
  assert.match(yaml, /model=tiny/);
  assert.ok(!yaml.includes(TOKEN), 'HF_TOKEN is in a Secret, never in the printed manifests');
  assert.equal((await listWorkloads(backend.gke.kube(await backend.gke.findCluster(f.project, CLUSTER)))).items.length, 0, '--dry-run submits nothing (and no run came before this test)');
  const bad = await tpw('run', 'recipes/dry.sh', '--cluster', 'nope', '--dry-run');
  assert.notEqual(bad.code, 0);
  assert.equal(bad.stderr.trim().split('\n').length, 1, bad.stderr);
  assert.match(bad.stderr, /No GKE cluster "nope"/);
});

test('tpw gke create-nodepool: a TPU node pool out of a specific reservation, listed with it; spot and a reservation together are one line', async () => {
  const tpw = (...argv: string[]) => tpwInProcess(argv, { cwd: ws, env: { TPW_HOME: f.dir } });
  const made = await tpw('gke', 'create-nodepool', 'res-a', '--tpu-type', 'v5p-8', '--reservation', 'team-res', '--emulator', '--cluster', CLUSTER, '--zone', ZONE);
  assert.equal(made.code, 0, made.stderr);
  assert.equal(made.stdout.trim(), 'res-a RUNNING: v5p-8 2x2x1, 1 nodes, reservation team-res');
  // What GKE stored is what gcloud's --reservation-affinity=specific --reservation=R sends.
  const [stored] = await f.gke.getNodePool({ name: `projects/${f.project}/locations/${ZONE}/clusters/${CLUSTER}/nodePools/res-a` });
  assert.deepEqual(
    [stored.config?.machineType, stored.initialNodeCount, stored.config?.reservationAffinity?.consumeReservationType, stored.config?.reservationAffinity?.key, stored.config?.reservationAffinity?.values],
    ['ct5p-hightpu-4t', 1, 'SPECIFIC_RESERVATION', 'compute.googleapis.com/reservation-name', ['team-res']],
  );
  const pools = await tpw('gke', 'nodepools', '--emulator', '--cluster', CLUSTER, '--zone', ZONE);
  assert.match(pools.stdout, /^res-a +v5p-8 +2x2x1 +\d\/1 +RUNNING +reservation team-res$/m, pools.stdout);
  const both = await tpw('gke', 'create-nodepool', 'res-b', '--tpu-type', 'v5p-8', '--reservation', 'team-res', '--spot', '--emulator', '--cluster', CLUSTER, '--zone', ZONE);
  assert.notEqual(both.code, 0);
  assert.equal(both.stderr.trim(), 'tpw: A node pool is either --spot or out of --reservation R, not both.');
  const [op] = await f.gke.deleteNodePool({ name: `projects/${f.project}/locations/${ZONE}/clusters/${CLUSTER}/nodePools/res-a` });
  await waitOperation(f, ZONE, op);
});

test('a 2-slice v5litepod-16 run: all 8 pods log, each knows its slice and worker, secrets by reference, metrics from the log', async () => {
  const cluster = await backend.gke.findCluster(f.project, CLUSTER);
  const c = collector();
  let runId = '';
  const result = await runRecipeOnGke({
    gke: backend.gke,
    cluster,
    tpuType: 'v5litepod-16',
    numSlices: 2,
    image: 'python:3.11',
    recipePath: writeRecipe('hello.sh', RECIPE_HELLO),
    workspaceRoot: ws,
    passEnv: { HF_TOKEN: TOKEN },
    tpwHome: f.dir,
    pollMs: 500,
    onStarted: (id) => (runId = id),
    listener: c.listener,
  });
  assert.equal(result.ok, true, JSON.stringify(result));
  assert.deepEqual([...c.lines.keys()].sort((a, b) => a - b), [0, 1, 2, 3, 4, 5, 6, 7]);
  for (let w = 0; w < 8; w++) {
    const line = c.lines.get(w)!.find((l) => l.startsWith('hello from'));
    const slice = Math.floor(w / 4);
    assert.equal(line, `hello from worker ${w} tpu ${w % 4} slice ${slice} of 2 data from-the-workspace secret ${TOKEN_SHA}`, `w${w}: ${c.lines.get(w)!.join(' | ')}`);
    // The metrics line went to the metrics, not to the log.
    assert.ok(!c.lines.get(w)!.some((l) => l.startsWith('tpw-metric')));
  }
  assert.deepEqual(c.metrics.map((m) => m.worker).sort(), [0, 1, 2, 3, 4, 5, 6, 7]);
  const rec = loadRun(runId, f.dir);
  assert.equal(rec.status, 'succeeded');
  assert.equal(rec.gke?.jobset, `tpw-${runId}`);
  // The JobSet as stored holds no secret value; the Secret and the workspace ConfigMaps are owned by it.
  const kube = backend.gke.kube(cluster);
  const js = await kube.custom.getNamespacedCustomObject({ group: 'jobset.x-k8s.io', version: 'v1alpha2', namespace: 'default', plural: 'jobsets', name: rec.gke!.jobset });
  assert.ok(!JSON.stringify(js).includes(TOKEN));
  const cms = await kube.core.listNamespacedConfigMap({ namespace: 'default', labelSelector: `tpu-workbench.dev/run=${runId}` });
  assert.ok(cms.items.length >= 1);
  assert.ok(cms.items.every((cm) => cm.metadata?.ownerReferences?.[0]?.kind === 'JobSet'));
  // Real kubectl sees the same workload and the same lines (its kubeconfig as gcloud would write it).
  const kubeconfig = path.join(f.dir, 'kubeconfig');
  fs.writeFileSync(kubeconfig, JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'c',
    clusters: [{ name: 'c', cluster: { server: `https://${cluster.endpoint}`, 'certificate-authority-data': Buffer.from(cluster.caCertificate).toString('base64') } }],
    users: [{ name: 'u', user: { token: f.ep.token } }],
    contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
  }), { mode: 0o600 });
  const pod = (await kubectlOk(kubeconfig, ['get', 'pods', '-l', `jobset.sigs.k8s.io/jobset-name=${rec.gke!.jobset},jobset.sigs.k8s.io/job-index=1,batch.kubernetes.io/job-completion-index=2`, '-o', 'name'])).trim();
  const viaKubectl = (await kubectlOk(kubeconfig, ['logs', pod, '-c', 'jax-tpu'])).trimEnd().split('\n');
  assert.deepEqual(viaKubectl.filter((l) => !l.startsWith('tpw-metric ') && !/^XPK (Start|End): /.test(l) && !l.startsWith('EXIT_CODE=')), c.lines.get(6)!.filter((l) => !/^XPK (Start|End): /.test(l) && !l.startsWith('EXIT_CODE=')));
  // `tpw logs RUN` later: the same lines again, each once.
  const again = collector();
  await watchRecordedRun(backend, undefined as never, runId, again.listener, { home: f.dir, follow: false });
  for (let w = 0; w < 8; w++) assert.deepEqual(again.lines.get(w), c.lines.get(w), `w${w} replayed`);
  // The GKE view from the same answers: each node pool → this workload → its 8 pods (phase, node, restarts),
  // and a pod's log as a click shows it.
  const onPools = await workloadsByNodePool(kube, 'default');
  assert.deepEqual(['np-a', 'np-b'].map((p) => onPools.get(p)?.includes(rec.gke!.jobset)), [true, true], 'one slice on each pool');
  const workload = await getWorkload(kube, 'default', rec.gke!.jobset);
  const children = workloadChildren(workload, await listPods(kube, 'default', rec.gke!.jobset));
  assert.ok('pods' in children, JSON.stringify(children));
  const nodes = await kube.core.listNode({});
  const poolOf = new Map(nodes.items.map((n) => [n.metadata!.name!, n.metadata!.labels!['cloud.google.com/gke-nodepool']]));
  assert.deepEqual(children.pods.map(({ row }) => row.label.split(' ')[0]), ['s0w0', 's0w1', 's0w2', 's0w3', 's1w0', 's1w1', 's1w2', 's1w3']);
  const slicePools = new Set<string>();
  for (const { pod, row } of children.pods) {
    assert.equal(row.description, `Succeeded · exit 0 · ${pod.node}`, row.label);
    assert.match(row.tooltip, /Restarts: JobSet attempt 0, container restarted 0 times/);
    slicePools.add(`${pod.slice}:${poolOf.get(pod.node!)}`);
  }
  assert.equal(slicePools.size, 2, `each slice's pods on one pool: ${[...slicePools].join(' ')}`);
  const w6 = children.pods[6];
  assert.match(await readPodLog(kube, 'default', w6.pod.name, POD_CONTAINER), new RegExp(`^hello from worker 6 tpu 2 slice 1 of 2 `, 'm'));
});

test('a failing worker fails the run fast (the JobSet’s policy) and is named as the first to fail', async () => {
  const cluster = await backend.gke.findCluster(f.project, CLUSTER);
  const c = collector();
  const result: RunResult = await runRecipeOnGke({
    gke: backend.gke,
    cluster,
    tpuType: 'v5litepod-16',
    numSlices: 1,
    image: 'python:3.11',
    recipePath: writeRecipe('fail.sh', 'python3 -c "import os, sys, time; w = int(os.environ[\'TPW_WORKER_INDEX\']); print(\'w\', w, flush=True); sys.exit(3) if w == 2 else time.sleep(600)"\n'),
    workspaceRoot: ws,
    tpwHome: f.dir,
    pollMs: 500,
    listener: c.listener,
  });
  assert.equal(result.ok, false);
  assert.equal(result.firstFailed, 2);
  assert.equal(result.workers.find((w) => w.index === 2)?.exitCode, 3);
  assert.equal(loadRun(result.runId, f.dir).status, 'failed');
});

test('the shipped CLI: tpw logs RUN prints every pod’s lines with [sNwM], tpw logs -f follows until tpw stop RUN deletes the JobSet, its pods end and the run is recorded as cancelled', async () => {
  const tpw = (...argv: string[]) => productionTpw(prodCli, argv, { cwd: ws, env: { TPW_HOME: f.dir } });
  writeRecipe('cli.sh', 'python3 -c "import os, time; print(\'up\', os.environ[\'TPW_WORKER_INDEX\'], flush=True); time.sleep(600)"\n');
  const started = await tpw('run', 'recipes/cli.sh', '--emulator', '--cluster', CLUSTER, '--zone', ZONE, '--tpu-type', 'v5litepod-16', '--num-slices', '2', '--image', 'python:3.11', '--detach');
  assert.equal(started.code, 0, started.stderr);
  const runId = /Run (\S+) submitted as workload/.exec(started.stderr)?.[1] ?? assert.fail(started.stderr);
  const jobset = loadRun(runId, f.dir).gke!.jobset;
  const kube = backend.gke.kube(await backend.gke.findCluster(f.project, CLUSTER));
  const podLines = async () => {
    const pods = (await kube.core.listNamespacedPod({ namespace: 'default', labelSelector: `jobset.sigs.k8s.io/jobset-name=${jobset}` })).items;
    const logs = await Promise.all(pods.map((p) => kube.core.readNamespacedPodLog({ namespace: 'default', name: p.metadata!.name!, container: 'jax-tpu' }).catch(() => '')));
    return logs.filter((l) => /^up \d$/m.test(l)).length;
  };
  await until('every pod has logged', async () => ((await podLines()) === 8 ? true : undefined));
  const logs = await tpw('logs', runId);
  assert.equal(logs.code, 0, logs.stderr);
  const ups = logs.stdout.split('\n').filter((l) => / up \d$/.test(l)).sort();
  assert.deepEqual(ups, Array.from({ length: 8 }, (_, w) => `[s${Math.floor(w / 4)}w${w % 4}] up ${w}`));
  assert.match(logs.stderr, new RegExp(`run ${runId}: (starting|running)`));
  // A follower in another process, then stop: the follower sees the workload go and ends, the run cancelled.
  let seen = '';
  const following = productionTpw(prodCli, ['logs', runId, '--follow'], { cwd: ws, env: { TPW_HOME: f.dir }, onStdout: (d) => (seen += d) });
  await until('the follower has printed every pod’s line', async () => (seen.split('\n').filter((l) => / up \d$/.test(l)).length === 8 ? true : undefined));
  const stop = await tpw('stop', runId);
  assert.equal(stop.code, 0, stop.stderr);
  assert.equal(stop.stdout.trim(), `run ${runId}: workload ${jobset} deleted (cancelled)`);
  // Deleted in the foreground: the JobSet goes once its pods have.
  await until('the JobSet gone', () =>
    kube.custom.getNamespacedCustomObject({ group: 'jobset.x-k8s.io', version: 'v1alpha2', namespace: 'default', plural: 'jobsets', name: jobset }).then(
      () => undefined,
      (e: unknown) => (/404|not found/i.test(String(e)) ? true : undefined),
    ),
  );
  const followed = await following;
  assert.equal(followed.code, 1, `${followed.stdout}\n${followed.stderr}`);
  assert.equal(followed.stdout.split('\n').filter((l) => / up \d$/.test(l)).length, 8, followed.stdout);
  assert.equal(loadRun(runId, f.dir).status, 'cancelled');
  await until('its pods gone', async () => ((await kube.core.listNamespacedPod({ namespace: 'default', labelSelector: `jobset.sigs.k8s.io/jobset-name=${jobset}` })).items.length === 0 ? true : undefined));
});

test('a workload waits while its queue has no quota left, says why, and starts when quota frees', async () => {
  const cluster = await backend.gke.findCluster(f.project, CLUSTER);
  await setQuota(16);
  try {
    const base = { gke: backend.gke, cluster, tpuType: 'v5litepod-16', numSlices: 1, image: 'python:3.11', workspaceRoot: ws, tpwHome: f.dir, detach: true, listener: {} };
    const first = await runRecipeOnGke({ ...base, recipePath: writeRecipe('hold.sh', 'python3 -c "import time; print(\'holding\', flush=True); time.sleep(600)"\n') });
    const kube = backend.gke.kube(cluster);
    await until('the first admitted', async () => ((await listWorkloads(kube)).items.find((w) => w.runId === first.runId)?.phase === 'running' ? true : undefined));
    const c = collector();
    const second = runRecipeOnGke({ ...base, detach: false, pollMs: 500, recipePath: writeRecipe('next.sh', 'echo next-ran\n'), listener: c.listener });
    const waiting = await until('the second queued', async () => (await listWorkloads(kube)).items.find((w) => w.runId !== first.runId && w.phase === 'queued' && /insufficient.*quota/i.test(w.message ?? '')));
    assert.match(waiting.message!, /google\.com\/tpu/);
    // In the GKE view the queued workload says why it waits instead of listing pods.
    const queuedRow = workloadChildren(waiting, await listPods(kube, 'default', waiting.name));
    assert.ok('message' in queuedRow && /^Queued: .*insufficient.*quota/i.test(queuedRow.message), JSON.stringify(queuedRow));
    await until('the queued notice', async () => (c.notices.some((n) => /^Queued: .*insufficient.*quota/i.test(n)) ? true : undefined));
    await stopRecordedRun(backend, undefined as never, first.runId, { home: f.dir });
    const result = await second;
    assert.equal(result.ok, true);
    assert.ok([...c.lines.values()].flat().includes('next-ran'));
  } finally {
    await setQuota(32);
  }
});

test('a quota too small for the run, and an expired credential, are one line each naming what is at fault', async () => {
  const cluster = await backend.gke.findCluster(f.project, CLUSTER);
  await setQuota(16);
  try {
    await assert.rejects(
      runRecipeOnGke({ gke: backend.gke, cluster, tpuType: 'v5litepod-16', numSlices: 2, image: 'i', workspaceRoot: ws, recipePath: writeRecipe('q.sh', 'echo x\n'), tpwHome: f.dir, listener: {} }),
      (e: unknown) => isTpwError(e, 'RESOURCE_EXHAUSTED') && /ClusterQueue "cluster-queue" of GKE cluster "demo" has a quota of 16 google.com\/tpu; the run needs 32/.test(e.message),
    );
  } finally {
    await setQuota(32);
  }
  await assert.rejects(
    runRecipeOnGke({ gke: backend.gke, cluster, tpuType: 'v6e-8', numSlices: 1, image: 'i', workspaceRoot: ws, recipePath: writeRecipe('q.sh', 'echo x\n'), tpwHome: f.dir, listener: {} }),
    (e: unknown) => isTpwError(e, 'FAILED_PRECONDITION') && /has no TPU node pool of type v6e-8; its TPU node pools: np-a \(v5litepod-16\), np-b \(v5litepod-16\)/.test(e.message),
  );
  const stale = new KubeClient({ label: 'GKE cluster "demo"', server: `https://${cluster.endpoint}`, caPem: cluster.caCertificate, tokens: staticToken('expired-token', 'Application Default Credentials') });
  await assert.rejects(listQueues(stale), (e: unknown) => isTpwError(e, 'UNAUTHENTICATED') && /refused the credential from Application Default Credentials \(expired or revoked\)/.test(e.message) && !e.message.includes('\n'));
});

test('a preempted spot node pool ends the run as preempted, with the reason', async () => {
  const cluster0 = await backend.gke.findCluster(f.project, CLUSTER);
  // A type of its own (v5p-16: 2 VMs), so the workload can only land on the spot pool.
  const [op] = await f.gke.createNodePool({ parent: cluster0.fullName, nodePool: { name: 'spot-v5p', initialNodeCount: 2, config: { machineType: 'ct5p-hightpu-4t', spot: true }, placementPolicy: { tpuTopology: '2x2x2' } } });
  await waitOperation(f, ZONE, op, 600_000);
  const cluster = await backend.gke.findCluster(f.project, CLUSTER);
  const c = collector();
  // The first run sleeps until the pool is taken away; the resumed one (a marker per worker in this machine's /tmp,
  // which the emulator's pods share) says so and ends.
  const marker = path.join(f.dir, 'preempt-marker-');
  const recipe = writeRecipe('long.sh', `python3 -c "import os, sys, time; m = '${marker}' + os.environ['TPW_WORKER_INDEX']; r = os.path.exists(m); open(m, 'w').close(); print('resumed' if r else 'up', flush=True); sys.exit(0) if r else time.sleep(600)"\n`);
  const running = runRecipeOnGke({ gke: backend.gke, cluster, tpuType: 'v5p-16', numSlices: 1, image: 'i', workspaceRoot: ws, recipePath: recipe, tpwHome: f.dir, pollMs: 500, listener: c.listener });
  await until('both pods logging', async () => (c.lines.size === 2 ? true : undefined));
  await emulatorRequest(f.ep, 'POST', `/emulator/v1/projects/${f.project}/locations/${ZONE}/clusters/${CLUSTER}/nodePools/spot-v5p:preempt?downSeconds=5`);
  const result = await running;
  assert.equal(result.preempted, true, JSON.stringify(result));
  assert.match(result.preemptedReason ?? '', /preempted/);
  assert.equal(loadRun(result.runId, f.dir).status, 'preempted');
  assert.ok(c.notices.some((n) => /^Preempted: pod .* on node .*Terminat/i.test(n)), c.notices.join('\n'));
  // Resume (`tpw resume RUN`): the same workload submitted again from the run record, once GKE brought the nodes back.
  const resumed = await tpwInProcess(['resume', result.runId], { cwd: ws, env: { TPW_HOME: f.dir } });
  assert.equal(resumed.code, 0, resumed.stderr);
  const newRun = new RegExp(`Run (\\S+) resumes ${result.runId} as workload (\\S+)\\.`).exec(resumed.stderr) ?? assert.fail(resumed.stderr);
  assert.deepEqual(resumed.stdout.split('\n').filter((l) => l.endsWith(' resumed')).sort(), ['[s0w0] resumed', '[s0w1] resumed']);
  const again = loadRun(newRun[1], f.dir);
  assert.deepEqual([again.status, again.gke?.tpuType, again.gke?.slices, again.recipe, again.gke?.jobset], ['succeeded', 'v5p-16', 1, recipe, newRun[2]]);
});

test('a JobSet restart: the run follows the new attempt’s pods to the end, says so, and the record counts it', async () => {
  const cluster = await backend.gke.findCluster(f.project, CLUSTER);
  const c = collector();
  // Attempt 0: worker 0 exits 42 (xpk's restart code) and the others wait; attempt 1 (the markers there): all end well.
  const marker = path.join(f.dir, 'restart-marker-');
  const result = await runRecipeOnGke({
    gke: backend.gke,
    cluster,
    tpuType: 'v5litepod-16',
    numSlices: 1,
    maxRestarts: 1,
    image: 'i',
    workspaceRoot: ws,
    recipePath: writeRecipe('restart.sh', `python3 -c "import os, sys, time; w = os.environ['TPW_WORKER_INDEX']; m = '${marker}' + w; again = os.path.exists(m); open(m, 'w').close(); print('again' if again else 'first', w, flush=True); sys.exit(0) if again else (sys.exit(42) if w == '0' else time.sleep(600))"\n`),
    tpwHome: f.dir,
    pollMs: 500,
    listener: c.listener,
  });
  assert.equal(result.ok, true, JSON.stringify(result));
  for (let w = 0; w < 4; w++) assert.ok(c.lines.get(w)?.includes(`again ${w}`), `w${w}: ${c.lines.get(w)?.join(' | ')}`);
  assert.ok(c.notices.some((n) => /restarted \(attempt 1\)/.test(n)), c.notices.join('\n'));
  const rec = loadRun(result.runId, f.dir);
  assert.equal(rec.gke?.restarts, 1);
  assert.equal(runStatusText(rec), 'succeeded, restarted 1 time');
  // The GKE view lists the pods of the newest attempt only, marked as such.
  const kube = backend.gke.kube(cluster);
  const children = workloadChildren(await getWorkload(kube, 'default', rec.gke!.jobset), await listPods(kube, 'default', rec.gke!.jobset));
  assert.ok('pods' in children && children.pods.length === 4 && children.pods.every(({ pod, row }) => pod.restartAttempt === 1 && row.description.includes('attempt 1')), JSON.stringify(children));
});

const hasGcloud = (process.env.PATH ?? '').split(':').some((d) => fs.existsSync(path.join(d, 'gcloud')));
/** A real capture of the trainer (test/fixtures/profiles/real/cpu/README.md says how it was made). */
const CAPTURE = path.join(__dirname, '../fixtures/profiles/real/cpu/cpu-trainer-torch-xla.xplane.pb');

test('profiles travel through Cloud Storage: pods 0 and 3 copy their capture to the artifact dir with the real gcloud, and the run\'s reader lists them per pod, fetches them and they analyze', { skip: !hasGcloud && 'gcloud is not installed on this machine' }, async () => {
  // A bucket of the emulator is a folder of its storage.
  fs.mkdirSync(path.join(storageDir(path.join(f.dir, 'emulator')), 'tpw-artifacts'), { recursive: true });
  fs.copyFileSync(CAPTURE, path.join(ws, 'capture.xplane.pb'));
  const cluster = await backend.gke.findCluster(f.project, CLUSTER);
  const c = collector();
  // As the trainer's profiler leaves it: <profile_dir>/plugins/profile/<run>/<host>.xplane.pb, on two of the pods.
  const recipe = `python3 -c "import os, shutil; w = os.environ['TPW_WORKER_INDEX']; d = os.path.join(os.environ['TPW_RUN_DIR'], 'profile', 'plugins', 'profile', '2026_11_29_05_00_00'); w in ('0', '3') and (os.makedirs(d), shutil.copy('capture.xplane.pb', os.path.join(d, 'pod' + w + '.xplane.pb')))"\n`;
  const result = await runRecipeOnGke({
    gke: backend.gke,
    cluster,
    tpuType: 'v5litepod-16',
    numSlices: 1,
    image: 'i',
    artifactDir: 'gs://tpw-artifacts/runs/',
    recipePath: writeRecipe('profiled.sh', recipe),
    workspaceRoot: ws,
    tpwHome: f.dir,
    pollMs: 500,
    listener: c.listener,
  });
  assert.equal(result.ok, true, JSON.stringify(result));
  for (let w = 0; w < 4; w++) assert.ok(!(c.lines.get(w) ?? []).some((l) => l.startsWith('tpw: could not copy')), `w${w}: ${c.lines.get(w)?.join(' | ')}`);
  const rec = loadRun(result.runId, f.dir);
  assert.equal(rec.gke?.artifactDir, 'gs://tpw-artifacts/runs/');
  // Through the emulator's REST server with the owner's token, as the product reads Google's Cloud Storage.
  const captures = await listGkeCaptures(backend.gke.storage, rec.gke!);
  assert.deepEqual(
    captures.map((x) => [x.pod, x.worker, x.object]),
    [0, 3].map((w) => [`s0w${w}`, w, `runs/${rec.gke!.jobset}/profile/0-${w}/plugins/profile/2026_11_29_05_00_00/pod${w}.xplane.pb`]),
  );
  const files = await fetchGkeCaptures(backend.gke.storage, rec.gke!, path.join(f.dir, 'fetched', result.runId));
  assert.deepEqual(files.map((x) => path.relative(path.join(f.dir, 'fetched', result.runId), x)), [0, 3].map((w) => `s0w${w}/plugins/profile/2026_11_29_05_00_00/pod${w}.xplane.pb`));
  const wasm = new ProfileWasm();
  for (const file of files) {
    assert.ok(fs.readFileSync(file).equals(fs.readFileSync(CAPTURE)), `${file}: the capture byte for byte`);
    const r = wasm.cli(['--json', file]);
    assert.equal(r?.code, 0, r?.err);
    assert.ok((JSON.parse(r!.out) as { ops: unknown[] }).ops.length > 0, 'the op table of the fetched capture');
  }
  // The CLI: `tpw profile --run RUN` fetches them per pod and analyzes the folder.
  const cli = await tpwInProcess(['profile', '--run', result.runId, '--json'], { cwd: ws, env: { TPW_HOME: f.dir } });
  assert.equal(cli.code, 0, cli.stderr);
  assert.match(cli.stderr, new RegExp(`^Fetched 2 captures of run ${result.runId} into .*profiles/${result.runId}$`, 'm'));
  const both = JSON.parse(cli.stdout) as { device: { host_count: number }; ops: unknown[] };
  assert.equal(both.device.host_count, 2, 'both pods\' captures, side by side');
  assert.ok(both.ops.length > 0);
  const oneLine = (re: RegExp) => (e: unknown) => isTpwError(e) && !e.message.includes('\n') && re.test(e.message);
  const refused = new GcsReader(staticToken('not-the-token', 'a stale token'), `http://${f.ep.host}:${f.ep.restPort}`);
  await assert.rejects(listGkeCaptures(refused, rec.gke!), oneLine(/^Cloud Storage refused a stale token for bucket "tpw-artifacts" \(/));
  await assert.rejects(listGkeCaptures(backend.gke.storage, { ...rec.gke!, artifactDir: 'gs://no-such-bucket/runs' }), oneLine(/^Cloud Storage bucket "no-such-bucket" does not exist\.$/));
});

test('on the API server, xpk’s JobSet and ours come out of the JobSet and Kueue webhooks the same (server-side dry run)', async () => {
  const cluster = await backend.gke.findCluster(f.project, CLUSTER);
  const kube = backend.gke.kube(cluster);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- API server objects
  const dryRun = async (body: any): Promise<any> => {
    const got = (await kube.custom.createNamespacedCustomObject({ group: 'jobset.x-k8s.io', version: 'v1alpha2', namespace: 'default', plural: 'jobsets', body, dryRun: 'All' })) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    for (const k of ['uid', 'creationTimestamp', 'managedFields', 'generation', 'resourceVersion']) delete got.metadata[k];
    return got;
  };
  for (const c of xpkCases().filter((x) => ['v5litepod-16x2', 'v6e-256x1-tp'].includes(x.name))) {
    const theirs = await dryRun(c.manifest);
    const ours = await dryRun(renderJobSet(c.inputs));
    // What xpk leaves to the webhooks, both get: Kueue suspends the JobSet until admission, JobSet names the
    // failure-policy rule and adds its success policy, startup policy and DNS hostnames.
    for (const o of [theirs, ours]) {
      assert.equal(o.spec.suspend, true, `${c.name}: Kueue's webhook suspends it`);
      assert.ok(o.spec.failurePolicy.rules[0].name, `${c.name}: JobSet's webhook names the rule`);
      assert.ok(o.spec.successPolicy && o.spec.network?.enableDNSHostnames === true, `${c.name}: JobSet's defaults`);
    }
    const pod = 'spec.replicatedJobs[0].template.spec.template.spec';
    const known = [`${pod}.imagePullSecrets`, `${pod}.serviceAccountName`];
    assert.deepEqual(diffPaths(ours, theirs).filter((d) => !known.includes(d.split(':')[0])), [], c.name);
  }
});
