/**
 * GKE in a real VS Code (code-server), against the emulator's real Kubernetes control plane: the GKE view shows a
 * cluster made as `xpk cluster create` leaves one (two v5litepod-16 TPU node pools, Kueue's queues), "Run on TPU
 * Here" on a node pool runs the workspace's recipe as a 2-slice JobSet with every one of its 8 pods' lines in the
 * run's channel, prefixed [s0w0]…[s1w3], Cancel deletes the workload; then a workload waits while its queue has no
 * quota left — the GKE view says why — and starts when the quota frees. Run after `npm run build`:
 *
 *   node --import tsx --test test/e2e/gke.e2e.ts
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe } from 'node:test';
import { v1 as container } from '@google-cloud/container';
import { emulatorBearerAuth } from '../../extension/src/core/compute/client';
import type { Browser } from 'playwright-core';
import { readEmulatorEndpoint, type EmulatorEndpoint } from '../../protocol/node/emulator-endpoint';
import { k8sLib } from '../helpers/gke';
import { findLogs, type CodeServer } from './code-server';
import { delay, type ProcessTracker } from './processes';
import { ARTIFACTS, cliPath, cliRunner, openVsCode, requireBuilt, startEmulator, stepper, teardown, testEnv, testRoot } from './session';
import type { Workbench } from './workbench';

const ZONE = 'us-central2-b';
const CLUSTER = 'demo';
/** Every pod: a line naming it (slice and worker as GKE's variables say), then numbered lines until stopped. */
const RECIPE = `#!/usr/bin/env bash\n# e2e: lines from every pod until stopped\nbash -c 'echo "pod of slice $MEGASCALE_SLICE_ID worker $TPU_WORKER_ID (tpw $TPW_WORKER_INDEX)"; for i in $(seq 1 600); do echo "tick $i"; sleep 1; done'\n`;
const QUICK = `#!/usr/bin/env bash\n# e2e: a short run\nbash -c 'echo "quick ran on $TPW_WORKER_INDEX"'\n`;

describe('GKE in VS Code (code-server): the GKE view, Run on TPU Here on 2 slices, stop, a queued workload', { timeout: 40 * 60_000 }, () => {
  let root: string;
  let home: string;
  let workspace: string;
  let env: NodeJS.ProcessEnv;
  let procs: ProcessTracker;
  let browser: Browser | undefined;
  let server: CodeServer | undefined;
  let wb: Workbench;
  let ep: EmulatorEndpoint;
  let cli: (...args: string[]) => string;
  const shot = (name: string): Promise<void> => wb.screenshot(path.join(ARTIFACTS, name));
  // The run's Output channel (opt-in: openVsCode below sets tpuWorkbench.run.outputChannel), as VS Code logs it.
  const channel = (name: string): string =>
    findLogs(server!.userDataDir, `${name.replace(/:/g, '')}.log`)
      .filter((f) => path.basename(f).replace(/^\d+-/, '') === `${name.replace(/:/g, '')}.log`)
      .map((f) => fs.readFileSync(f, 'utf8'))
      .join('\n');
  const waitFor = async (what: string, get: () => string | Promise<string>, re: RegExp, timeoutMs = 120_000): Promise<string> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const text = await get();
      if (re.test(text)) return text;
      if (Date.now() > deadline) throw new Error(`${what} never matched ${re}; it has:\n${text.slice(-3000)}`);
      await delay(500);
    }
  };
  const gkeRow = (text: string | RegExp) => wb.row('GKE', text);
  const expand = async (text: string | RegExp): Promise<void> => {
    const row = gkeRow(text).first();
    await row.waitFor({ timeout: 120_000 });
    // A click while the view redraws (just after a refresh) can land on the row being replaced: until it is open.
    const deadline = Date.now() + 60_000;
    while ((await row.getAttribute('aria-expanded')) === 'false') {
      if (Date.now() > deadline) throw new Error(`the GKE view's row ${String(text)} did not open`);
      await row.click();
      await row.page().waitForTimeout(300);
    }
  };
  /** The cluster's Kubernetes API, as the tests reach it (the emulator's token). */
  const kube = async () => {
    const k8s = k8sLib();
    const gke = new container.ClusterManagerClient({ apiEndpoint: ep.host, port: ep.restPort, protocol: 'http', fallback: true, auth: emulatorBearerAuth(ep.token) as never });
    const [c] = await gke.getCluster({ name: `projects/${ep.project}/locations/${ZONE}/clusters/${CLUSTER}` });
    await gke.close();
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: `https://${c.endpoint}`, caData: c.masterAuth?.clusterCaCertificate ?? '' }],
      users: [{ name: 'u', token: ep.token }],
      contexts: [{ name: 'c', cluster: 'c', user: 'u' }],
      currentContext: 'c',
    });
    return { core: kc.makeApiClient(k8s.CoreV1Api), custom: kc.makeApiClient(k8s.CustomObjectsApi), merge: k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch) };
  };
  const setQuota = async (chips: number): Promise<void> => {
    const k = await kube();
    const cq = (await k.custom.getClusterCustomObject({ group: 'kueue.x-k8s.io', version: 'v1beta1', plural: 'clusterqueues', name: 'cluster-queue' })) as { spec: { resourceGroups: Array<{ flavors: Array<{ resources: Array<{ name: string; nominalQuota: number }> }> }> } };
    for (const g of cq.spec.resourceGroups) for (const fl of g.flavors) for (const r of fl.resources) if (r.name === 'google.com/tpu') r.nominalQuota = chips;
    await k.custom.patchClusterCustomObject({ group: 'kueue.x-k8s.io', version: 'v1beta1', plural: 'clusterqueues', name: 'cluster-queue', body: { spec: cq.spec } }, k.merge);
  };

  before(async () => {
    requireBuilt('extension.js', 'cli.js', 'emulator.js', 'kubernetes.js', 'container.js');
    ({ root, home, workspace, procs } = testRoot('gke'));
    fs.mkdirSync(path.join(workspace, 'recipes'));
    fs.writeFileSync(path.join(workspace, 'recipes', 'ticks.sh'), RECIPE);
    env = testEnv(home);
    cli = cliRunner(procs, env);
    await startEmulator(procs, env);
    ep = readEmulatorEndpoint(path.join(home, 'emulator'))!;
    const gke = new container.ClusterManagerClient({ apiEndpoint: ep.host, port: ep.restPort, protocol: 'http', fallback: true, auth: emulatorBearerAuth(ep.token) as never });
    const pool = (name: string) => ({ name, initialNodeCount: 4, config: { machineType: 'ct5lp-hightpu-4t' }, placementPolicy: { tpuTopology: '4x4' } });
    const [op] = await gke.createCluster({ parent: `projects/${ep.project}/locations/${ZONE}`, cluster: { name: CLUSTER, nodePools: [pool('np-a'), pool('np-b')] } });
    for (const deadline = Date.now() + 15 * 60_000; ; await delay(2000)) {
      const [o] = await gke.getOperation({ name: `projects/${ep.project}/locations/${ZONE}/operations/${op.name}` });
      if (o.status === 'DONE' || o.status === 3) {
        if (o.error?.message) throw new Error(o.error.message);
        break;
      }
      if (Date.now() > deadline) throw new Error('the cluster did not come up in 15 min');
    }
    await gke.close();
    ({ server, browser, wb } = await openVsCode(procs, { root, workspace, env, settings: { 'tpuWorkbench.run.outputChannel': true } }));
  });

  after(() => teardown({ browser, procs, server, home, env, root, failed: steps.failed, logsName: 'logs-gke' }));

  const steps = stepper('gke', (file) => shot(file), 6 * 60_000);
  const step = steps.step;

  step('the GKE view: project → cluster → TPU node pools with their type, topology and ready nodes; the queues', async () => {
    await wb.openViewContainer('TPU');
    const header = wb.page.locator('.part.sidebar .pane-header[aria-label^="GKE"]');
    await header.waitFor({ timeout: 60_000 });
    if ((await header.getAttribute('aria-expanded')) === 'false') await header.click();
    await expand(new RegExp(`^${ep.project}`));
    await expand(/^demo/);
    for (const pool of ['np-a', 'np-b']) await gkeRow(new RegExp(`${pool}.*v5litepod-16 · 4x4 · 4/4 nodes ready`)).first().waitFor({ timeout: 120_000 });
    await expand(/^Queues/);
    await gkeRow(/cluster-queue.*0\/32 chips/).first().waitFor({ timeout: 60_000 });
    await wb.settle();
    await shot('gke-view.png');
  });

  step('Run on TPU Here on a v5litepod-16 node pool, 2 slices: lines from all 8 pods, [s0w0]…[s1w3]; Cancel deletes the workload', async () => {
    await wb.contextMenu(gkeRow(/np-a.*v5litepod-16/).first(), 'Run on TPU Here');
    await wb.waitQuickInputTitle(/slices of v5litepod-16/);
    await wb.acceptQuickPick('2');
    const label = 'TPU Run';
    const text = await waitFor('"TPU Run"', () => channel(label), /^\[s1w3\] tick 2$/m, 8 * 60_000);
    for (let s = 0; s < 2; s++) {
      for (let w = 0; w < 4; w++) {
        assert.match(text, new RegExp(`^\\[s${s}w${w}\\] pod of slice ${s} worker ${w} \\(tpw ${s * 4 + w}\\)$`, 'm'), `pod s${s}w${w}`);
      }
    }
    await shot('gke-run-output.png');
    // Stop: the run's notification has Cancel (as a VM run's).
    const runs = JSON.parse(cli('runs', '--json')) as Array<{ runId: string; status: string; gke?: { jobset: string } }>;
    assert.equal(runs[0].status, 'running');
    const jobset = runs[0].gke!.jobset;
    await wb.page.locator('.notifications-toasts .notification-toast').filter({ hasText: 'TPU: ticks.sh on demo' }).locator('a.monaco-button', { hasText: 'Cancel' }).first().click();
    await waitFor('the run registry', () => cli('runs', '--json'), /"status": ?"cancelled"/, 120_000);
    const k = await kube();
    await waitFor('the pods of the workload', async () => String((await k.core.listNamespacedPod({ namespace: 'default', labelSelector: `jobset.sigs.k8s.io/jobset-name=${jobset}` })).items.length), /^0$/, 180_000);
    await wb.dismissNotifications();
  });

  step('a workload waits while its queue has no quota left (the GKE view says why) and starts when quota frees', async () => {
    await setQuota(16);
    fs.writeFileSync(path.join(workspace, 'recipes', 'quick.sh'), QUICK);
    // The quota holder, from the CLI in the same workspace: 1 slice = all 16 chips.
    procs.run('cli', process.execPath, [cliPath(), 'run', 'recipes/ticks.sh', '--cluster', CLUSTER, '--tpu-type', 'v5litepod-16', '--num-slices', '1', '--detach'], { env, cwd: workspace, timeoutMs: 180_000 });
    const holder = (JSON.parse(cli('runs', '--json')) as Array<{ runId: string }>)[0].runId;
    // The second, from VS Code: queued behind it.
    await wb.contextMenu(gkeRow(/np-b.*v5litepod-16/).first(), 'Run on TPU Here');
    // "Run on TPU Here" asks how many slices first (the node pool's question), then which recipe (two now).
    await wb.waitQuickInputTitle(/slices of v5litepod-16/);
    await wb.acceptQuickPick('1');
    await wb.waitQuickInputTitle(/Run on TPU: recipe/);
    await wb.acceptQuickPick('quick.sh');
    await waitFor('the run channel', () => channel('TPU Run'), /Queued: .*insufficient.*quota/i, 180_000);
    await wb.runCommand('TPU: Refresh GKE');
    await expand(/^demo/);
    await expand(/^Workloads/);
    await gkeRow(/queued · 1 × v5litepod-16 · .*insufficient.*quota/i).first().waitFor({ timeout: 120_000 });
    await shot('gke-queued.png');
    cli('stop', holder);
    await waitFor('"TPU Run"', () => channel('TPU Run'), /quick ran on 3[\s\S]*4\/4 workers ok/, 8 * 60_000);
    await setQuota(32);
  });
});
