/**
 * The emulator's GKE at scale (issue 31, item 5), on one emulated cluster of 4 v5litepod-64 node pools (4 slices
 * × 16 TPU VMs = 64 nodes, each with a kubelet stand-in):
 *  1. Start: a JobSet of 4 slices × 16 pods (each pod runs `echo`) from create to every pod Succeeded, through the
 *     real JobSet controller, Job controller, scheduler and Kueue. Peer, same run: the same 64 pods created
 *     directly (no JobSet, no Kueue), so the ratio is what the controllers add.
 *  2. Listing 1,000 workloads (suspended JobSets): @kubernetes/client-node paging with limit=100 (as the product
 *     lists), its first page alone, and one unpaged list; peer: `kubectl get jobsets -o name` (kubectl pages by 500).
 * Also reported: the control plane's start time and its processes' resident memory (/proc VmRSS).
 * BENCH_GKE_REPS (default 3) reps per start variant, BENCH_REPS (default 7) per list variant.
 * Writes test-artifacts/bench/gke-scale.json.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import { performance } from 'node:perf_hooks';
import { jobSet, kubeClients, kubectlOk, startGkeEmulator, until, waitOperation } from '../helpers/gke';
import { testAddressPrefix } from '../helpers/loopback';
import { markdown, measure, report, type Ratio, type Row, type Variant } from './interleaved-timing';


const ZONE = 'us-central2-b';
const START_REPS = Number(process.env.BENCH_GKE_REPS ?? 3);
const LIST_REPS = Number(process.env.BENCH_REPS ?? 7);
const WORKLOADS = 1000;

async function main(): Promise<void> {
  const t0 = performance.now();
  const f = await startGkeEmulator('tpw-gke-bench-', { addressPrefix: testAddressPrefix(1) });
  try {
    const pool = (i: number) => ({ name: `slice-${i}`, initialNodeCount: 16, config: { machineType: 'ct5lp-hightpu-4t' }, placementPolicy: { tpuTopology: '8x8' } });
    const [op] = await f.gke.createCluster({ parent: `projects/${f.project}/locations/${ZONE}`, cluster: { name: 'scale', nodePools: [0, 1, 2, 3].map(pool) } });
    await waitOperation(f, ZONE, op, 900_000);
    const clusterStartS = (performance.now() - t0) / 1000;
    const { core, custom, kubeconfig } = await kubeClients(f, ZONE, 'scale');
    const JS = { group: 'jobset.x-k8s.io', version: 'v1alpha2', namespace: 'default', plural: 'jobsets' };
    const memory = f.emu.gke.runtime(f.project, ZONE, 'scale')?.memory() ?? [];

    const allSucceeded = async (selector: string, n: number) =>
      until(`${n} pods succeeded`, async () => {
        const pods = (await core.listNamespacedPod({ namespace: 'default', labelSelector: selector })).items;
        return pods.length === n && pods.every((p) => p.status?.phase === 'Succeeded') ? true : undefined;
      }, 900_000);
    const gone = async (selector: string) =>
      until('pods gone', async () => ((await core.listNamespacedPod({ namespace: 'default', labelSelector: selector })).items.length === 0 ? true : undefined), 300_000);
    const nodes = (await core.listNode()).items.map((n) => n.metadata?.name ?? '');
    let rep = 0;
    const start: Variant[] = [
      {
        name: 'JobSet 4×16 through JobSet+Job controllers, scheduler, Kueue', kind: 'ours', vs: '64 bare pods', samples: [],
        once: async () => {
          const name = `scale-${rep++}`;
          await custom.createNamespacedCustomObject({ ...JS, body: jobSet(name, { slices: 4, podsPerSlice: 16, topology: '8x8', accelerator: 'tpu-v5-lite-podslice', queue: 'multislice-queue', command: 'echo $TPU_WORKER_ID' }) });
          await allSucceeded(`jobset.sigs.k8s.io/jobset-name=${name}`, 64);
          await custom.deleteNamespacedCustomObject({ ...JS, name, propagationPolicy: 'Foreground' });
          await gone(`jobset.sigs.k8s.io/jobset-name=${name}`);
        },
      },
      {
        name: '64 bare pods', kind: 'peer', samples: [],
        once: async () => {
          const tag = `bare-${rep++}`;
          await Promise.all(nodes.map((node, i) => core.createNamespacedPod({
            namespace: 'default',
            body: {
              metadata: { name: `${tag}-${i}`, labels: { bench: tag } },
              spec: { restartPolicy: 'Never', nodeName: node, containers: [{ name: 'main', image: 'x', command: ['bash', '-c', 'echo $TPU_WORKER_ID'], resources: { limits: { 'google.com/tpu': '4' } } }] },
            },
          })));
          await allSucceeded(`bench=${tag}`, 64);
          await core.deleteCollectionNamespacedPod({ namespace: 'default', labelSelector: `bench=${tag}` });
          await gone(`bench=${tag}`);
        },
      },
    ];
    await measure(start, START_REPS);

    // 1,000 suspended JobSets: no pods, but each a JobSet with its child Job, as a busy cluster's history.
    const suspended = (i: number) => {
      const js = jobSet(`w-${String(i).padStart(4, '0')}`, { slices: 1, podsPerSlice: 1, topology: '8x8', accelerator: 'tpu-v5-lite-podslice', command: 'true' });
      (js.spec as Record<string, unknown>).suspend = true;
      return js;
    };
    for (let i = 0; i < WORKLOADS; i += 20) {
      await Promise.all(Array.from({ length: Math.min(20, WORKLOADS - i) }, (_, k) => custom.createNamespacedCustomObject({ ...JS, body: suspended(i + k) })));
    }
    const count = async (limit: number | undefined, pages = Infinity) => {
      let cont: string | undefined;
      let n = 0;
      for (let p = 0; p < pages; p++) {
        const page = (await custom.listNamespacedCustomObject({ ...JS, limit, _continue: cont })) as { items: unknown[]; metadata: { continue?: string } };
        n += page.items.length;
        cont = page.metadata.continue;
        if (!cont) break;
      }
      return n;
    };
    if ((await count(100)) !== WORKLOADS) throw new Error(`listed ${await count(100)} JobSets, made ${WORKLOADS}`);
    const list: Variant[] = [
      { name: 'client-node, pages of 100 (all 1,000)', kind: 'ours', vs: 'kubectl get jobsets -o name', samples: [], once: async () => void (await count(100)) },
      { name: 'client-node, first page of 100', kind: 'diagnostic', samples: [], once: async () => void (await count(100, 1)) },
      { name: 'client-node, one unpaged list', kind: 'diagnostic', samples: [], once: async () => void (await count(undefined)) },
      { name: 'kubectl get jobsets -o name', kind: 'peer', samples: [], once: async () => void (await kubectlOk(kubeconfig, ['get', 'jobsets', '-o', 'name'])) },
    ];
    await measure(list, LIST_REPS);

    const memoryAfter = f.emu.gke.runtime(f.project, ZONE, 'scale')?.memory() ?? [];
    const emulatorRss = process.memoryUsage().rss;
    const rows: Row[] = [];
    const ratios: Ratio[] = [];
    report('gke-scale', 'start 64 pods', start, [], rows, ratios);
    report('gke-scale', `list ${WORKLOADS} JobSets`, list, [], rows, ratios);
    const mib = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;
    const rss = (ms: typeof memory) => `${mib(ms.reduce((a, m) => a + m.rssBytes, 0))} (${ms.map((m) => `${m.name} ${mib(m.rssBytes)}`).join(', ')})`;
    console.log(markdown(rows, ratios));
    console.log(`\ncluster create → RUNNING (control plane + 64 nodes): ${clusterStartS.toFixed(1)} s`);
    console.log(`control plane RSS after start: ${rss(memory)}`);
    console.log(`control plane RSS after the runs and ${WORKLOADS} JobSets: ${rss(memoryAfter)}`);
    console.log(`this process (the emulator with 64 kubelet stand-ins, and the bench's clients): ${mib(emulatorRss)}`);
    fs.mkdirSync('test-artifacts/bench', { recursive: true });
    fs.writeFileSync('test-artifacts/bench/gke-scale.json', JSON.stringify({ machine: { cpus: os.cpus().length, load: os.loadavg() }, clusterStartS, memory, memoryAfter, emulatorRss, rows, ratios }, null, 2));
  } finally {
    await f.close();
  }
}

void main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exit(1);
});
