/**
 * The first-run walkthrough in a real VS Code (code-server 4.100.3) through headless Chromium: "TPU: Get Started"
 * opens it with its five steps, and each step is ticked by the real event it stands for, nothing else: the TPU
 * VMs view listing the emulator, a VM becoming READY, a run finishing on every worker, the run view opening, and
 * a secret being stored. Run after `npm run build`:
 *
 *   node --import tsx --test test/e2e/walkthrough.e2e.ts
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe } from 'node:test';
import type { Browser } from 'playwright-core';
import type { CodeServer } from './code-server';
import type { ProcessTracker } from './processes';
import { ARTIFACTS, cliRunner, openVsCode, requireBuilt, startEmulator, stepper, teardown, testEnv, testRoot } from './session';
import type { Workbench } from './workbench';

const STEPS = ['Choose where your TPU VMs live', 'Create a TPU VM', 'Run the sample recipe', 'Watch logs, metrics and profiles', 'Store your secrets'];
const VM = 'walk-vm';

describe('First-run walkthrough in VS Code (code-server)', { timeout: 15 * 60_000 }, () => {
  let root: string;
  let home: string;
  let env: NodeJS.ProcessEnv;
  let procs: ProcessTracker;
  let browser: Browser | undefined;
  let server: CodeServer | undefined;
  let wb: Workbench;
  let cli: (...args: string[]) => string;

  before(async () => {
    requireBuilt('extension.js', 'cli.js', 'webview.js');
    let workspace: string;
    ({ root, home, workspace, procs } = testRoot('walkthrough'));
    fs.mkdirSync(path.join(workspace, 'recipes'));
    fs.writeFileSync(path.join(workspace, 'recipes', 'hello.sh'), `bash -c 'echo "hello from worker $TPU_WORKER_ID"'\n`);
    env = testEnv(home);
    cli = cliRunner(procs, env);
    await startEmulator(procs, env);
    ({ server, browser, wb } = await openVsCode(procs, { root, workspace, env }));
  });

  after(() => teardown({ browser, procs, server, home, env, root, failed: steps.failed, logsName: 'logs-walkthrough' }));

  const steps = stepper('walkthrough', (file) => wb.screenshot(path.join(ARTIFACTS, file)), 3 * 60_000);
  const step = steps.step;

  /** A step's button on the walkthrough page; VS Code checks it (aria-checked) once its completion event happened. */
  const stepButton = (title: string) => wb.page.locator('.getting-started-step').filter({ hasText: title }).first();
  const isComplete = async (title: string): Promise<boolean> => (await stepButton(title).getAttribute('aria-checked')) === 'true';
  const waitComplete = async (title: string, timeoutMs = 60_000): Promise<void> => {
    for (const deadline = Date.now() + timeoutMs; ; await new Promise((r) => setTimeout(r, 250))) {
      if (await isComplete(title)) return;
      if (Date.now() > deadline) assert.fail(`walkthrough step "${title}" was not completed`);
    }
  };
  const openWalkthrough = async (): Promise<void> => {
    await wb.runCommand('TPU: Get Started');
    await wb.page.getByText('Get started with TPU Workbench').first().waitFor({ timeout: 30_000 });
  };

  step('"TPU: Get Started" opens the walkthrough with its five steps; the emulator listed in the TPU view ticks the first', async () => {
    // Opened first, as on a first run: the palette has the command once the extension host has started.
    for (let attempt = 1; ; attempt++) {
      try {
        await openWalkthrough();
        break;
      } catch (e) {
        if (attempt >= 4) throw e;
        await wb.page.keyboard.press('Escape');
      }
    }
    for (const t of STEPS) await stepButton(t).waitFor({ timeout: 15_000 });
    assert.equal(await isComplete(STEPS[0]), false, 'nothing is listed yet');
    // The TPU view lists the emulator (no VMs yet, so it says so): that is the first step's event.
    await wb.openViewContainer('TPU');
    await wb.pane('TPU VMs').getByText('No TPU VMs yet').waitFor({ timeout: 60_000 });
    await openWalkthrough();
    await waitComplete(STEPS[0]);
    for (const t of STEPS.slice(1)) assert.equal(await isComplete(t), false, `"${t}" is not done before its event`);
    await wb.settle();
    await wb.screenshot(path.join(ARTIFACTS, 'walkthrough-start.png'));
  });

  step('a READY VM ticks "Create a TPU VM"', async () => {
    cli('vm', 'create', VM, '--type', 'v5litepod-4');
    await wb.runCommand('TPU: Refresh');
    await wb.row('TPU VMs', new RegExp(`${VM}.*READY`)).waitFor({ timeout: 60_000 });
    await openWalkthrough();
    await waitComplete(STEPS[1]);
    assert.equal(await isComplete(STEPS[2]), false);
  });

  step('a run that finishes on every worker ticks "Run the sample recipe", and its run view "Watch logs…"', async () => {
    await wb.runCommand('TPU: Run on TPU');
    const text = await wb.waitForNotification(/Run (finished|failed|cancelled)/, 120_000);
    assert.match(text, new RegExp(`Run finished: hello\\.sh on ${VM}, all 1 workers ok`), text);
    await openWalkthrough();
    await waitComplete(STEPS[2]);
    await waitComplete(STEPS[3]);
    assert.equal(await isComplete(STEPS[4]), false);
  });

  step('storing a secret ticks "Store your secrets"', async () => {
    await wb.runCommand('TPU: Set Secret');
    await wb.waitQuickInputTitle(/TPU: Set Secret/);
    await wb.acceptQuickPick('HF_TOKEN');
    await wb.waitQuickInputTitle(/TPU: Set HF_TOKEN/);
    await wb.typeQuickInput('hf_walkthrough_test_value');
    await wb.page.keyboard.press('Enter');
    await openWalkthrough();
    await waitComplete(STEPS[4]);
    await wb.settle();
    await wb.screenshot(path.join(ARTIFACTS, 'walkthrough-done.png'));
  });
});
