/**
 * Issue 14 in a real VS Code (code-server 4.100.3) driven through headless Chromium: a 2-VM TPU7x slice
 * (tpu7x-16, topology 2x2x2, a Compute Engine MIG) made through the create wizard — the control plane step
 * preselects Compute Engine, the topology step says 2 VMs and 16 devices, the review shows the gcloud compute
 * commands —, shown READY in the tree under "Compute Engine" with its 2 workers; a terminal on worker 1 runs on
 * worker 1; Run on TPU (a tiny recipe written here, no torch) runs on every worker; a Cloud TPU API node made
 * by the CLI sits beside it under "Cloud TPU API" and the same run works there; the slice is deleted from its
 * menu (with the MIG, template and policy it made). Run after `npm run build`:
 *
 *   node --import tsx --test test/e2e/compute.e2e.ts
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe } from 'node:test';
import type { Browser } from 'playwright-core';
import { findLogs, type CodeServer } from './code-server';
import { findFiles } from './files';
import { delay, type ProcessTracker } from './processes';
import { ARTIFACTS, cliRunner, openVsCode, requireBuilt, startEmulator, stepper, teardown, testEnv, testRoot } from './session';
import type { Workbench } from './workbench';

const VIEW = 'TPU VMs';
const ZONE = 'us-east5-b';
const SLICE = 'iron-slice';
const SLICE_TYPE = 'tpu7x-16';
/** A Cloud TPU API pod of 2 workers (v4-16: 8 chips, 4 per host), made by the CLI. */
const NODE = 'api-pod';
const NODE_TYPE = 'v4-16';
/** The workspace's one recipe: says which worker it runs on. */
const WHERE_RECIPE = 'bash -c \'echo "where worker=$TPU_WORKER_ID"\'\n';

interface NodeJson {
  name: string;
  zone: string;
  state: string;
  acceleratorType: string;
  controlPlane?: string;
  networkEndpoints: { ipAddress: string }[];
}

describe('Compute Engine TPU slices in VS Code (code-server)', { timeout: 20 * 60_000 }, () => {
  let root: string;
  let home: string;
  let env: NodeJS.ProcessEnv;
  let procs: ProcessTracker;
  let browser: Browser | undefined;
  let server: CodeServer | undefined;
  let wb: Workbench;
  let cli: (...args: string[]) => string;

  const shot = (name: string): Promise<void> => wb.screenshot(path.join(ARTIFACTS, name));
  const vmList = (): NodeJson[] => JSON.parse(cli('vm', 'list', '--json')) as NodeJson[];

  before(async () => {
    requireBuilt('extension.js', 'cli.js');
    let workspace: string;
    ({ root, home, workspace, procs } = testRoot('compute'));
    fs.mkdirSync(path.join(workspace, 'recipes'));
    fs.writeFileSync(path.join(workspace, 'recipes', 'where.sh'), WHERE_RECIPE);
    env = testEnv(home);
    cli = cliRunner(procs, env);
    await startEmulator(procs, env);
    ({ server, browser, wb } = await openVsCode(procs, {
      root,
      workspace,
      env,
      // The DOM renderer, so the terminal's text can be read from the page.
      settings: { 'terminal.integrated.gpuAcceleration': 'off', 'workbench.colorTheme': 'Default Dark Modern', 'tpuWorkbench.run.outputChannel': true },
    }));
  });

  after(() => teardown({ browser, procs, server, home, env, root, failed: steps.failed, logsName: 'logs-compute' }));

  const steps = stepper('compute', (file) => shot(file), 4 * 60_000);
  const step = steps.step;

  const quick = () => wb.page.locator('.quick-input-widget');
  const quickRows = () => quick().locator('.quick-input-list .monaco-list-row');
  const vmRow = (name: string, type: string) => wb.row(VIEW, new RegExp(`^\\s*${name}\\s*${type}`));
  const runOutput = (): string =>
    findLogs(server!.userDataDir, 'TPU Run.log')
      .map((f) => fs.readFileSync(f, 'utf8'))
      .join('\n');

  step('the wizard makes a 2-VM tpu7x-16 slice on Compute Engine and shows the gcloud compute commands', async () => {
    await wb.openViewContainer('TPU');
    await wb.widenSidebar(700);
    await wb.pane(VIEW).getByText('No TPU VMs yet').waitFor({ timeout: 90_000 });
    await wb.runCommand('TPU: Create TPU VM');
    await wb.waitQuickInputTitle(/: name \(/);
    await wb.typeQuickInput(SLICE);
    await wb.page.keyboard.press('Enter');
    await wb.waitQuickInputTitle(/: zone \(/);
    await wb.acceptQuickPick(ZONE);
    await wb.waitQuickInputTitle(/: accelerator type \(/);
    await wb.acceptQuickPick(SLICE_TYPE);
    // TPU7x: only Compute Engine makes it, so there is no control plane to choose: the wizard goes on to the topology.
    await wb.waitQuickInputTitle(/: topology \(/);
    assert.doesNotMatch(await quick().innerText(), /control plane/);
    await quick().getByText(/Enter keeps 2x2x2: 2 VMs of tpu7x-standard-4t, 8 chips shown as 16 devices/).waitFor({ timeout: 10_000 });
    // A topology that does not fit the type is refused as typed.
    await wb.typeQuickInput('2x2x1');
    await quick().getByText(/Topology "2x2x1" is not valid for tpu7x-16/).waitFor({ timeout: 10_000 });
    await wb.typeQuickInput('2x2x2');
    await quick().getByText(/is not valid/).waitFor({ state: 'detached', timeout: 10_000 });
    await wb.page.keyboard.press('Enter');
    await wb.waitQuickInputTitle(/: provisioning \(/);
    await quickRows().filter({ hasText: 'Flex-start' }).first().waitFor({ timeout: 10_000 });
    await wb.acceptQuickPick('On-demand');
    // The boot image is a row of the review: Google's TPU VM images, picked from a list, the type's default first.
    await wb.waitQuickInputTitle(/: review \(/);
    await wb.acceptQuickPick('Boot image');
    await wb.waitQuickInputTitle(/: boot image \(/);
    await quickRows().first().filter({ hasText: /tpu-vm-ubuntu2204-base.*default for tpu7x-16/ }).waitFor({ timeout: 15_000 });
    const rowTexts = await quickRows().allInnerTexts();
    assert.ok(rowTexts.some((t) => t.trim().startsWith('Other image')), `any other image can be typed: ${JSON.stringify(rowTexts)}`);
    await wb.page.keyboard.press('Enter');
    await wb.waitQuickInputTitle(/: review \(/);
    const create = quickRows().first().filter({ hasText: `Create ${SLICE}` });
    await create.waitFor({ timeout: 15_000 });
    const review = (await quick().innerText()).replace(/\s+/g, ' ');
    assert.match(review, /gcloud compute resource-policies create workload-policy iron-slice-tpw-policy .*--type=HIGH_THROUGHPUT --accelerator-topology=2x2x2/, review);
    assert.match(review, /gcloud compute instance-groups managed create iron-slice .*--size=2/, review);
    await wb.settle();
    await shot('compute-wizard-review.png');
    await wb.page.keyboard.press('Enter');
    await quick().waitFor({ state: 'hidden', timeout: 15_000 });
  });

  step('the tree shows the slice READY under "Compute Engine" with its 2 workers', async () => {
    await vmRow(SLICE, SLICE_TYPE).filter({ hasText: 'READY' }).waitFor({ timeout: 120_000 });
    await wb.waitForNotification(new RegExp(`TPU VM ${SLICE} is READY \\(2 workers\\)`), 60_000);
    await wb.row(VIEW, /^\s*Compute Engine\s*1 VM/).waitFor({ timeout: 15_000 });
    const row = (await vmRow(SLICE, SLICE_TYPE).innerText()).replace(/\s+/g, ' ');
    assert.match(row, /2\/2 VMs running/, row);
    for (const w of [0, 1]) await wb.row(VIEW, new RegExp(`^\\s*w${w}\\s*127\\.`)).waitFor({ timeout: 15_000 });
    const listed = vmList().find((n) => n.name.endsWith(`/${SLICE}`));
    assert.equal(listed?.controlPlane, 'compute');
    assert.equal(listed?.networkEndpoints.length, 2);
    await wb.dismissNotifications();
    await wb.settle();
    await shot('compute-tree-slice.png');
  });

  step('"Open Terminal on Worker" on w1 of the slice runs commands on worker 1', async () => {
    await wb.contextMenu(wb.row(VIEW, /^\s*w1\s*127\./), 'Open Terminal on Worker');
    await wb.page.locator('.terminal-wrapper .xterm').first().waitFor({ timeout: 60_000 });
    const screen = wb.page.locator('.terminal-wrapper.active .xterm-rows, .xterm-rows').first();
    const deadline = Date.now() + 60_000;
    while (!/\$\s*$|#\s*$/m.test(await screen.innerText().catch(() => ''))) {
      if (Date.now() > deadline) throw new Error(`no shell prompt in the terminal:\n${await screen.innerText().catch(() => '')}`);
      await delay(300);
    }
    await wb.page.locator('.terminal-wrapper .xterm').first().click();
    await wb.page.keyboard.type('echo "worker=$TPU_WORKER_ID" > ~/compute-e2e.txt; echo "id-is-$TPU_WORKER_ID"\n', { delay: 5 });
    await screen.getByText('id-is-1').waitFor({ timeout: 30_000 });
    const written = findFiles(home, (name) => name === 'compute-e2e.txt');
    assert.equal(written.length, 1, `one file written (${written.join(', ')})`);
    assert.equal(fs.readFileSync(written[0], 'utf8').trim(), 'worker=1');
    await wb.settle();
    await shot('compute-terminal-worker-1.png');
  });

  step('Run on TPU on the slice runs the recipe on both workers', async () => {
    await wb.dismissNotifications();
    await wb.contextMenu(vmRow(SLICE, SLICE_TYPE), 'Run on TPU');
    const text = await wb.waitForNotification(/Run (finished|failed|cancelled)/, 120_000);
    assert.match(text, new RegExp(`Run finished: where\\.sh on ${SLICE}, all 2 workers ok`), `${text}\n${runOutput().slice(-3000)}`);
    const output = runOutput();
    for (const w of [0, 1]) assert.match(output, new RegExp(`^\\[w${w}\\] where worker=${w}$`, 'm'), output.slice(-3000));
    await wb.dismissNotifications();
  });

  step('a Cloud TPU API node sits beside it under "Cloud TPU API", and the same run works there', async () => {
    cli('vm', 'create', NODE, '--type', NODE_TYPE, '--zone', ZONE, '--control-plane', 'tpu-api');
    await wb.runCommand('TPU: Refresh');
    await vmRow(NODE, NODE_TYPE).filter({ hasText: 'READY' }).waitFor({ timeout: 120_000 });
    await wb.row(VIEW, /^\s*Cloud TPU API\s*1 VM/).waitFor({ timeout: 15_000 });
    // Each VM is under its own control plane's group: the nearest group row above it.
    const rows = (await wb.pane(VIEW).locator('.monaco-list-row').allInnerTexts()).map((t) => t.trim());
    const groupAbove = (name: string) => rows.slice(0, rows.findIndex((t) => t.startsWith(name))).reverse().find((t) => /^(Compute Engine|Cloud TPU API)/.test(t));
    assert.match(groupAbove(SLICE) ?? '', /^Compute Engine/, rows.join(' | '));
    assert.match(groupAbove(NODE) ?? '', /^Cloud TPU API/, rows.join(' | '));
    await wb.settle();
    await shot('compute-tree-both-planes.png');

    await wb.contextMenu(vmRow(NODE, NODE_TYPE), 'Run on TPU');
    const text = await wb.waitForNotification(new RegExp(`Run (finished|failed|cancelled): where\\.sh on ${NODE}`), 120_000);
    assert.match(text, new RegExp(`Run finished: where\\.sh on ${NODE}, all 2 workers ok`), text);
    await wb.dismissNotifications();
  });

  step('"Delete TPU VM" deletes the slice; the Cloud TPU API node stays', async () => {
    await wb.contextMenu(vmRow(SLICE, SLICE_TYPE), 'Delete TPU VM');
    const dialog = wb.page.locator('.monaco-dialog-box');
    await dialog.waitFor({ timeout: 15_000 });
    assert.match(await dialog.innerText(), new RegExp(`Delete TPU VM "${SLICE}" in ${ZONE}`));
    await dialog.getByRole('button', { name: 'Delete' }).click();
    await vmRow(SLICE, SLICE_TYPE).waitFor({ state: 'detached', timeout: 90_000 });
    const left = vmList();
    assert.deepEqual(left.map((n) => n.name.slice(n.name.lastIndexOf('/') + 1)), [NODE]);
    // With Compute Engine empty, the project reads as before: zones directly, no control-plane rows.
    await wb.row(VIEW, /^\s*Cloud TPU API/).waitFor({ state: 'detached', timeout: 30_000 });
    await vmRow(NODE, NODE_TYPE).waitFor({ timeout: 15_000 });
  });
});
