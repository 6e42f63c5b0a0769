/**
 * Listing 1,000 workloads from the product (issue 31, item 5, the product's half): 1,000 JobSets on one emulated
 * cluster, each queued by Kueue (a LocalQueue on a ClusterQueue with no quota, so each has its Kueue Workload and
 * Kueue's reason for waiting), listed as the GKE view and `tpw gke workloads` list them: core/gke/workloads.ts's
 * listWorkloads, a page of 100 JobSets joined with their Kueue Workloads in one more call per page.
 *   ours:  the first page (what the view shows first, and `tpw gke workloads`); every page (`--all`);
 *          `tpw gke workloads` as a process (node start included), its first page;
 *   peers: kubectl get jobsets (its own paging, 500 a page), kubectl get workloads.kueue.x-k8s.io.
 * BENCH_REPS (default 7) reps per variant. Writes test-artifacts/bench/gke-workloads.json.
 *
 *   npm run build && node --import tsx test/bench/gke-workloads.bench.ts
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { openBackend } from '../../extension/src/core/backend';
import { renderJobSet } from '../../extension/src/core/gke/manifest';
import { gkeTpuType } from '../../extension/src/core/gke/tpu-types';
import { listWorkloads } from '../../extension/src/core/gke/workloads';
import { v1 as container } from '@google-cloud/container';
import { emulatorBearerAuth } from '../../extension/src/core/compute/client';
import { kubectlOk, startGkeEmulator, until } from '../helpers/gke';
import { testAddressPrefix } from '../helpers/loopback';
import { markdown, measure, report, type Ratio, type Row, type Variant } from './interleaved-timing';

const ZONE = 'us-central2-b';
const REPS = Number(process.env.BENCH_REPS ?? 7);
const WORKLOADS = 1000;
const CLI = path.join(__dirname, '../../dist/cli.js');

async function main(): Promise<void> {
  const f = await startGkeEmulator('tpw-gke-list-bench-', { addressPrefix: testAddressPrefix(2) });
  try {
    const gke = new container.ClusterManagerClient({ apiEndpoint: f.ep.host, port: f.ep.restPort, protocol: 'http', fallback: true, auth: emulatorBearerAuth(f.ep.token) as never });
    const [op] = await gke.createCluster({ parent: `projects/${f.project}/locations/${ZONE}`, cluster: { name: 'busy', nodePools: [{ name: 'np', initialNodeCount: 4, config: { machineType: 'ct5lp-hightpu-4t' }, placementPolicy: { tpuTopology: '4x4' } }] } });
    await until('the cluster', async () => {
      const [o] = await gke.getOperation({ name: `projects/${f.project}/locations/${ZONE}/operations/${op.name}` });
      return o.status === 'DONE' || o.status === 3 ? true : undefined;
    }, 900_000);
    await gke.close();
    const backend = await openBackend({ useEmulator: true, tpwHome: f.dir });
    const cluster = await backend.gke.findCluster(f.project, 'busy');
    const kube = backend.gke.kube(cluster);
    // A queue with no quota: every workload waits, with Kueue's reason, and none starts.
    await kube.custom.createClusterCustomObject({ group: 'kueue.x-k8s.io', version: 'v1beta1', plural: 'clusterqueues', body: { apiVersion: 'kueue.x-k8s.io/v1beta1', kind: 'ClusterQueue', metadata: { name: 'empty' }, spec: { namespaceSelector: {}, resourceGroups: [{ coveredResources: ['google.com/tpu'], flavors: [{ name: '1xv5litepod-16', resources: [{ name: 'google.com/tpu', nominalQuota: 0 }] }] }] } } });
    await kube.custom.createNamespacedCustomObject({ group: 'kueue.x-k8s.io', version: 'v1beta1', namespace: 'default', plural: 'localqueues', body: { apiVersion: 'kueue.x-k8s.io/v1beta1', kind: 'LocalQueue', metadata: { name: 'empty-q', namespace: 'default' }, spec: { clusterQueue: 'empty' } } });
    const tpu = gkeTpuType('v5litepod-16');
    const body = (i: number) => {
      const js = renderJobSet({ workload: `w-${String(i).padStart(4, '0')}`, tpu, numSlices: 1, image: 'python:3.11', command: 'true' });
      js.metadata.labels!['kueue.x-k8s.io/queue-name'] = 'empty-q';
      return js;
    };
    for (let i = 0; i < WORKLOADS; i += 20) {
      await Promise.all(Array.from({ length: Math.min(20, WORKLOADS - i) }, (_, k) => kube.custom.createNamespacedCustomObject({ group: 'jobset.x-k8s.io', version: 'v1alpha2', namespace: 'default', plural: 'jobsets', body: body(i + k) })));
    }
    await until(`${WORKLOADS} Kueue Workloads`, async () => {
      const list = (await kube.custom.listNamespacedCustomObject({ group: 'kueue.x-k8s.io', version: 'v1beta1', namespace: 'default', plural: 'workloads' })) as { items: unknown[] };
      return list.items.length >= WORKLOADS ? true : undefined;
    }, 900_000);
    const all = async () => {
      let token: string | undefined;
      let n = 0;
      let queued = 0;
      do {
        const page = await listWorkloads(kube, { limit: 100, ...(token ? { continue: token } : {}) });
        n += page.items.length;
        queued += page.items.filter((w) => w.phase === 'queued' && /quota/i.test(w.message ?? '')).length;
        token = page.continue;
      } while (token);
      if (n !== WORKLOADS || queued !== WORKLOADS) throw new Error(`listed ${n}, ${queued} queued with Kueue's reason`);
    };
    await all();
    // A kubeconfig for kubectl, as `gcloud container clusters get-credentials` would write it (the emulator's token).
    const kubeconfig = path.join(f.dir, 'kubeconfig');
    fs.writeFileSync(kubeconfig, JSON.stringify({
      apiVersion: 'v1', kind: 'Config', 'current-context': 'busy',
      clusters: [{ name: 'busy', cluster: { server: `https://${cluster.endpoint}`, 'certificate-authority-data': Buffer.from(cluster.caCertificate).toString('base64') } }],
      users: [{ name: 'e', user: { token: f.ep.token } }],
      contexts: [{ name: 'busy', context: { cluster: 'busy', user: 'e' } }],
    }), { mode: 0o600 });
    const env = { ...process.env, TPW_HOME: f.dir };
    // The CLI runs as a child while the emulator it asks runs in this process: never a synchronous exec, which
    // would block the very server the child waits on (it failed with "fetch failed" after the server's silence).
    const variants: Variant[] = [
      { name: 'listWorkloads, first page of 100 (the view, tpw gke workloads)', kind: 'ours', vs: 'kubectl get jobsets', samples: [], once: async () => void (await listWorkloads(kube, { limit: 100 })) },
      { name: 'listWorkloads, all 1,000 in pages of 100 (--all)', kind: 'ours', vs: 'kubectl get jobsets', samples: [], once: all },
      { name: 'tpw gke workloads --cluster busy (a process; first page)', kind: 'diagnostic', samples: [], once: async () => void (await promisify(execFile)(process.execPath, [CLI, 'gke', 'workloads', '--cluster', 'busy'], { env })) },
      { name: 'kubectl get jobsets', kind: 'peer', samples: [], once: async () => void (await kubectlOk(kubeconfig, ['get', 'jobsets', '-o', 'name'])) },
      { name: 'kubectl get workloads.kueue.x-k8s.io', kind: 'peer', samples: [], once: async () => void (await kubectlOk(kubeconfig, ['get', 'workloads.kueue.x-k8s.io', '-o', 'name'])) },
    ];
    await measure(variants, REPS);
    const rows: Row[] = [];
    const ratios: Ratio[] = [];
    report('gke-workloads', `list ${WORKLOADS} workloads`, variants, [], rows, ratios);
    console.log(markdown(rows, ratios));
    fs.mkdirSync('test-artifacts/bench', { recursive: true });
    fs.writeFileSync('test-artifacts/bench/gke-workloads.json', JSON.stringify({ machine: { cpus: os.cpus().length, load: os.loadavg() }, rows, ratios }, null, 2));
    await backend.close();
  } finally {
    await f.close();
  }
}

void main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exit(1);
});
