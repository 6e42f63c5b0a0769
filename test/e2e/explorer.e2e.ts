/**
 * The TPU VM explorer in a real VS Code (code-server 4.100.3) driven through headless Chromium: the create
 * wizard (validation as you type, Back, the recommended runtime, prices, the gcloud command), the tree going
 * CREATING → READY with coloured state icons, menus that offer Stop only where the API allows it, a terminal
 * on worker 2 that really runs there, and delete. Screenshots of the tree in a light and a dark theme.
 * Run after `npm run build`:
 *
 *   node --import tsx --test test/e2e/explorer.e2e.ts
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe } from 'node:test';
import type { Browser } from 'playwright-core';
import { REPO, type CodeServer } from './code-server';
import { findFiles } from './files';
import { delay, type ProcessTracker } from './processes';
import { ARTIFACTS, openVsCode, requireBuilt, startEmulator, stepper, teardown, testEnv, testRoot } from './session';
import type { Workbench } from './workbench';

const VM = 'explorer-vm';
const VIEW = 'TPU VMs';
const ZONE = 'us-east5-b';
/** The emulator creates slowly enough (8 s) that the tree is seen in CREATING, as on Cloud TPU (minutes). */
const EMULATOR_OPTIONS = { opDelayMs: { create: 8000, delete: 1500 } };

describe('TPU VM explorer in VS Code (code-server)', { timeout: 15 * 60_000 }, () => {
  let root: string;
  let home: string;
  let env: NodeJS.ProcessEnv;
  let procs: ProcessTracker;
  let browser: Browser | undefined;
  let server: CodeServer | undefined;
  let wb: Workbench;

  const shot = (name: string): Promise<void> => wb.screenshot(path.join(ARTIFACTS, name));

  before(async () => {
    requireBuilt('extension.js', 'cli.js');
    let workspace: string;
    ({ root, home, workspace, procs } = testRoot('explorer'));
    fs.mkdirSync(path.join(workspace, 'recipes'));
    fs.copyFileSync(path.join(REPO, 'recipes', 'tiny-llama.sh'), path.join(workspace, 'recipes', 'tiny-llama.sh'));
    env = testEnv(home, { TPW_EMULATOR_OPTIONS: JSON.stringify(EMULATOR_OPTIONS) });
    await startEmulator(procs, env);
    ({ server, browser, wb } = await openVsCode(procs, {
      root,
      workspace,
      env,
      // The DOM renderer, so the terminal's text can be read from the page.
      settings: { 'terminal.integrated.gpuAcceleration': 'off', 'workbench.colorTheme': 'Default Dark Modern' },
    }));
  });

  after(() => teardown({ browser, procs, server, home, env, root, failed: steps.failed, logsName: 'logs-explorer' }));

  const steps = stepper('explorer', (file) => shot(file), 3 * 60_000);
  const step = steps.step;

  const quick = () => wb.page.locator('.quick-input-widget');
  const rows = () => quick().locator('.quick-input-list .monaco-list-row');
  const vmRow = () => wb.row(VIEW, new RegExp(`^\\s*${VM}`));

  step('the explorer starts empty and offers "Create TPU VM"', async () => {
    await wb.openViewContainer('TPU');
    await wb.pane(VIEW).getByText('No TPU VMs yet').waitFor({ timeout: 90_000 });
  });

  step('the create wizard validates, goes back, recommends and prices, and shows the gcloud command', async () => {
    await wb.runCommand('TPU: Create TPU VM');
    await wb.waitQuickInputTitle(/: name \(/);
    await wb.typeQuickInput('9lives');
    await quick().getByText('must start with a lowercase letter').waitFor({ timeout: 10_000 });
    await wb.typeQuickInput('has_underscore');
    await quick().getByText('"_" is not allowed').waitFor({ timeout: 10_000 });
    await wb.typeQuickInput(VM);
    await quick().getByText('is not allowed').waitFor({ state: 'detached', timeout: 10_000 });
    await wb.page.keyboard.press('Enter');

    await wb.waitQuickInputTitle(/: zone \(/);
    await wb.acceptQuickPick('us-central2-b');
    await wb.waitQuickInputTitle(/ in us-central2-b: accelerator type \(/);
    // Back returns to the zone step; the answer can be changed there.
    await quick().locator('.quick-input-left-action-bar .action-label').first().click();
    await wb.waitQuickInputTitle(/: zone \(/);
    await wb.acceptQuickPick(ZONE);
    await wb.waitQuickInputTitle(new RegExp(` in ${ZONE}: accelerator type \\(`));
    await wb.acceptQuickPick('v5litepod-16');
    // Both control planes offer the type; these VMs are Cloud TPU API nodes (compute.e2e.ts covers Compute Engine).
    await wb.waitQuickInputTitle(/: control plane \(/);
    await wb.acceptQuickPick('Cloud TPU API');

    await wb.waitQuickInputTitle(/: runtime version \(/);
    // The recommended runtime for v5e is first and marked.
    await rows().first().filter({ hasText: 'recommended' }).waitFor({ timeout: 30_000 });
    assert.match(await rows().first().innerText(), /v2-alpha-tpuv5-lite/);
    await wb.page.keyboard.press('Enter');

    await wb.waitQuickInputTitle(/: provisioning \(/);
    await rows().filter({ hasText: 'Spot' }).first().waitFor({ timeout: 15_000 });
    const choices = await rows().allInnerTexts();
    const onDemand = choices.find((c) => c.startsWith('On-demand')) ?? '';
    assert.match(onDemand, /\$\d+\.\d\d\/h/, `the on-demand price is shown: ${onDemand}`);
    assert.ok(choices.some((c) => /^Queued resource \(guaranteed\)/.test(c)), 'queued resources are offered');
    await wb.acceptQuickPick('On-demand');

    // Labels (like the startup script and data disk) are a row of the review, with its own validated step.
    await wb.waitQuickInputTitle(/: review \(/);
    await wb.acceptQuickPick('Labels');
    await wb.waitQuickInputTitle(/: labels \(/);
    await wb.typeQuickInput('Team=ML');
    await quick().getByText('Label key "Team"').waitFor({ timeout: 10_000 });
    await wb.typeQuickInput('team=ml');
    await quick().getByText('Label key').waitFor({ state: 'detached', timeout: 10_000 });
    await wb.page.keyboard.press('Enter');

    await wb.waitQuickInputTitle(/: review \(/);
    await rows().filter({ hasText: 'team=ml' }).first().waitFor({ timeout: 10_000 });
    const review = await rows().first().innerText();
    assert.match(review, new RegExp(`gcloud compute tpus tpu-vm create ${VM} --zone[= ]${ZONE}`), review);
    assert.match(review, /--accelerator-type[= ]v5litepod-16/);
    assert.match(review, /--version[= ]v2-alpha-tpuv5-lite/);
    assert.match(review, /team=ml/);
    await wb.settle();
    await shot('wizard-review.png');
    await wb.page.keyboard.press('Enter');
  });

  step('the tree shows the VM CREATING, then READY, under its project and zone', async () => {
    await vmRow().filter({ hasText: 'CREATING' }).waitFor({ timeout: 60_000 });
    await wb.row(VIEW, new RegExp(`^\\s*${ZONE}`)).waitFor({ timeout: 10_000 });
    await wb.row(VIEW, /local emulator/).waitFor({ timeout: 10_000 });
    // Nobody presses Refresh: the tree polls while the VM is transitional.
    await vmRow().filter({ hasText: 'READY' }).waitFor({ timeout: 90_000 });
    const text = await vmRow().innerText();
    assert.match(text, /v5litepod-16/);
    assert.match(text, /v2-alpha-tpuv5-lite/);
    assert.match(text, /on-demand/);
    assert.match(text, /\$\d+\.\d\d\/h/, `an hourly cost: ${text}`);
    // The state icon is a coloured codicon (charts.green for READY).
    // READY: the vm-running codicon, coloured charts.green (the twistie before it is a codicon too).
    const icon = vmRow().locator('.codicon-vm-running').first();
    const color = await icon.evaluate((el) => getComputedStyle(el).color);
    const labelColor = await vmRow().locator('.label-name').first().evaluate((el) => getComputedStyle(el).color);
    assert.notEqual(color, labelColor, `the state icon has its own colour (${color}), not the text's`);
    for (let i = 0; i < 4; i++) await wb.row(VIEW, new RegExp(`^\\s*w${i}\\s*127\\.`)).waitFor({ timeout: 15_000 });
    await wb.dismissNotifications();
  });

  step('menus offer terminals and details, and no Stop on a 4-worker pod', async () => {
    const labels = await wb.contextMenuLabels(vmRow());
    for (const l of ['Open Terminals on All Workers', 'Prepare Workers', 'Show Details', 'Delete TPU VM']) assert.ok(labels.includes(l), `"${l}" in ${labels.join(', ')}`);
    assert.ok(!labels.includes('Stop TPU VM'), 'Cloud TPU cannot stop multi-host slices: no Stop');
    const workerLabels = await wb.contextMenuLabels(wb.row(VIEW, /^\s*w2\s*127\./));
    assert.ok(workerLabels.includes('Open Terminal on Worker'), workerLabels.join(', '));
  });

  step('screenshots of the tree in light and dark themes', async () => {
    await wb.widenSidebar(620);
    // Through "Preferences: Color Theme", clicking that exact command ("Browse Color Themes in Marketplace" also matches).
    const setTheme = async (theme: RegExp, shell: RegExp): Promise<void> => {
      await wb.dismissNotifications();
      await wb.page.keyboard.press('F1');
      await quick().locator('input.input').fill('>Preferences: Color Theme');
      await rows().filter({ has: wb.page.locator('.label-name', { hasText: /^Preferences: Color Theme$/ }) }).first().click({ timeout: 15_000 });
      await wb.waitQuickInputTitle(/theme/i).catch(() => undefined);
      await quick().locator('input.input').fill(theme.source.replace(/[\\^$]/g, ''));
      await rows().first().locator('.label-name').first().filter({ hasText: theme }).waitFor({ timeout: 15_000 });
      await wb.page.keyboard.press('Enter');
      await wb.page.waitForFunction((re) => new RegExp(re).test(document.querySelector('.monaco-workbench')?.className ?? ''), shell.source, { timeout: 30_000 });
      await wb.settle();
    };
    await setTheme(/Light Modern$/, /\bvs\b(?!-dark)/);
    await shot('tree-light.png');
    await setTheme(/Dark Modern$/, /\bvs-dark\b/);
    await shot('tree-dark.png');
  });

  step('"Open Terminal on Worker" on w2 runs commands on worker 2', async () => {
    await wb.contextMenu(wb.row(VIEW, /^\s*w2\s*127\./), 'Open Terminal on Worker');
    await wb.page.locator('.terminal-wrapper .xterm').first().waitFor({ timeout: 60_000 });
    const screen = wb.page.locator('.terminal-wrapper.active .xterm-rows, .xterm-rows').first();
    // Wait for the remote prompt before typing.
    const deadline = Date.now() + 60_000;
    while (!/\$\s*$|#\s*$/m.test(await screen.innerText().catch(() => ''))) {
      if (Date.now() > deadline) throw new Error(`no shell prompt in the terminal:\n${await screen.innerText().catch(() => '')}`);
      await delay(300);
    }
    await wb.page.locator('.terminal-wrapper .xterm').first().click();
    await wb.page.keyboard.type('echo "worker=$TPU_WORKER_ID" > ~/explorer-e2e.txt; echo "id-is-$TPU_WORKER_ID term-is-$TERM"\n', { delay: 5 });
    // What the shell printed, read from the terminal's DOM...
    await screen.getByText('id-is-2 term-is-xterm-256color').waitFor({ timeout: 30_000 });
    // ...and what it did: the file is in worker 2's sandbox home, and no other worker's.
    const written = findFiles(home, (name) => name === 'explorer-e2e.txt');
    assert.equal(written.length, 1, `one file written (${written.join(', ')})`);
    assert.equal(fs.readFileSync(written[0], 'utf8').trim(), 'worker=2');
    await wb.settle();
    await shot('terminal-worker-2.png');
  });

  step('"Delete TPU VM" from the VM\'s menu confirms, deletes, and the tree empties', async () => {
    await wb.contextMenu(vmRow(), 'Delete TPU VM');
    const dialog = wb.page.locator('.monaco-dialog-box');
    await dialog.waitFor({ timeout: 15_000 });
    assert.match(await dialog.innerText(), new RegExp(`Delete TPU VM "${VM}" in ${ZONE}`));
    await dialog.getByRole('button', { name: 'Delete' }).click();
    await wb.pane(VIEW).getByText('No TPU VMs yet').waitFor({ timeout: 90_000 });
    assert.equal(await vmRow().count(), 0);
  });
});

