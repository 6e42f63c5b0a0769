/**
 * End to end in a real VS Code (code-server 4.100.3 = VS Code 1.100) driven through headless
 * Chromium: the built extension, the real CLI and emulator, the real Cloud TPU client, SSH workers
 * and the trainer. Run after `npm run build`:
 *
 *   node --import tsx --test test/e2e/vscode.e2e.ts
 *
 * Screenshots go to test-artifacts/e2e/; on failure the code-server, emulator and extension logs
 * are copied there too. Every process started here is stopped at the end, pass or fail.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe } from 'node:test';
import type { Browser } from 'playwright-core';
import { findLogs, REPO, type CodeServer } from './code-server';
import { delay, pidsWithEnv, type ProcessTracker } from './processes';
import { ARTIFACTS, openVsCode, requireBuilt, stepper, teardown, testEnv, testRoot, VENV } from './session';
import type { Workbench } from './workbench';

const VM = 'e2e-vm';
const VIEW = 'TPU VMs';
/** Long enough for a cold torch import on four workers sharing two cores. */
const RUN_TIMEOUT_MS = Number(process.env.TPW_E2E_RUN_TIMEOUT_MS ?? 8 * 60_000);

describe('TPU Workbench in VS Code (code-server)', { timeout: 20 * 60_000 }, () => {
  let root: string;
  let home: string;
  let workspace: string;
  let env: NodeJS.ProcessEnv;
  let procs: ProcessTracker;
  let browser: Browser | undefined;
  let server: CodeServer | undefined;
  let wb: Workbench;

  const shot = async (name: string): Promise<void> => {
    await wb.screenshot(path.join(ARTIFACTS, name));
  };

  before(async () => {
    requireBuilt('extension.js', 'cli.js');
    // Leftovers of an earlier failed run would otherwise pass for this run's.
    for (const f of fs.existsSync(ARTIFACTS) ? fs.readdirSync(ARTIFACTS) : []) {
      if (f.startsWith('failure') || f === 'logs') fs.rmSync(path.join(ARTIFACTS, f), { recursive: true, force: true });
    }
    // A unique TPW_HOME isolates this test's emulator and also tags every process it starts (see sweep).
    ({ root, home, workspace, procs } = testRoot('vscode'));

    // The workspace a user would open: the repo's recipes and trainer.
    for (const dir of ['recipes', 'trainer']) {
      fs.cpSync(path.join(REPO, dir), path.join(workspace, dir), {
        recursive: true,
        filter: (src) => !/(__pycache__|\.pytest_cache|\.egg-info|outputs)$/.test(src),
      });
    }
    assert.ok(fs.existsSync(path.join(workspace, 'recipes', 'tiny-llama.sh')), 'recipes/tiny-llama.sh is missing from the repo');

    // Emulated workers run commands with the emulator's environment, and the emulator is started
    // from the extension host: so code-server's environment is what the trainer sees. Python comes
    // from the project's venv (torch).
    // No venv on PATH and no VSCODE_CLI: as when VS Code is started from the desktop, the extension host
    // re-reads the login shell's environment. The emulator must still give its workers the venv's python3.
    env = testEnv(home, { TPW_VENV: VENV });
    // This file reads runs' output in the "TPU Run" channel, which is opt-in (the run view has it either way).
    ({ server, browser, wb } = await openVsCode(procs, { root, workspace, env, settings: { 'tpuWorkbench.run.outputChannel': true } }));
  });

  after(() => teardown({ browser, procs, server, home, env, root, failed: steps.failed, logsName: 'logs' }));

  const steps = stepper('', (file) => shot(file));
  const step = steps.step;

  step('the TPU view offers to start the emulator when it is not running', async () => {
    await wb.openViewContainer('TPU');
    const pane = wb.pane(VIEW);
    await pane.getByText('The local TPU emulator is not running').waitFor({ timeout: 60_000 });
    await pane.getByRole('button', { name: 'Start Local Emulator' }).waitFor();
  });

  step('"Run on TPU" with the emulator stopped shows a clear error', async () => {
    await wb.openFile('recipes/tiny-llama.sh');
    await wb.runCommand('TPU: Run on TPU');
    const text = await wb.waitForNotification(/Run on TPU failed/);
    assert.match(text, /emulator is not running/i);
    assert.match(text, /Start Local Emulator/, 'the error offers to start the emulator');
    assert.match(text, /Show log/);
    await wb.settle();
    await shot('error-emulator-stopped.png');
    await wb.dismissNotifications();
  });

  step('"Start Local Emulator" in the welcome view starts it', async () => {
    await wb.pane(VIEW).getByRole('button', { name: 'Start Local Emulator' }).click();
    await wb.pane(VIEW).getByText('No TPU VMs yet').waitFor({ timeout: 90_000 });
    assert.ok(fs.existsSync(path.join(home, 'emulator', 'endpoint.json')), 'the emulator runs under the TPW_HOME given to VS Code');
  });

  step('"Create TPU VM" creates a v5litepod-16 with 4 workers', async () => {
    await wb.runCommand('TPU: Create TPU VM');
    // The wizard: name, zone, accelerator type, control plane, runtime version, provisioning, review (whose rows
    // change the startup script, labels and data disk).
    await wb.waitQuickInputTitle(/: name \(/);
    await wb.typeQuickInput('Bad_Name');
    await wb.page.locator('.quick-input-widget').getByText('Use lowercase letters, digits and hyphens').waitFor({ timeout: 10_000 });
    await wb.typeQuickInput(VM);
    await wb.page.keyboard.press('Enter');
    await wb.waitQuickInputTitle(/: zone \(/);
    await wb.acceptQuickPick();
    await wb.waitQuickInputTitle(/: accelerator type \(/);
    await wb.acceptQuickPick('v5litepod-16');
    // Both control planes offer the type; these VMs are Cloud TPU API nodes (compute.e2e.ts covers Compute Engine).
    await wb.waitQuickInputTitle(/: control plane \(/);
    await wb.acceptQuickPick('Cloud TPU API');
    await wb.waitQuickInputTitle(/: runtime version \(/);
    await wb.acceptQuickPick();
    await wb.waitQuickInputTitle(/: provisioning \(/);
    await wb.acceptQuickPick('On-demand');
    await wb.waitQuickInputTitle(/: review \(/);
    await wb.acceptQuickPick();
    await wb.waitForNotification(new RegExp(`TPU VM ${VM} is READY`), 120_000);
    await wb.dismissNotifications();
  });

  step('the tree shows the VM, READY, with its 4 workers', async () => {
    const vmRow = wb.row(VIEW, VM);
    await vmRow.filter({ hasText: 'READY' }).waitFor({ timeout: 60_000 });
    assert.match(await vmRow.innerText(), /v5litepod-16/);
    for (let i = 0; i < 4; i++) {
      // A row's text is its label and description run together: "w0127.0.1.1:8470".
      await wb.row(VIEW, new RegExp(`^\\s*w${i}\\s*127\\.`)).waitFor({ timeout: 10_000 });
    }
    assert.equal(await wb.row(VIEW, /^\s*w4\s*127\./).count(), 0, 'exactly 4 workers');
    await wb.widenSidebar(520);
    await wb.settle();
    await shot('tree-vm-workers.png');
  });

  step(
    '"Run on TPU" on recipes/tiny-llama.sh runs on every worker',
    async () => {
      await wb.openFile('recipes/tiny-llama.sh');
      await wb.runCommand('TPU: Run on TPU');
      const started = Date.now();
      const text = await wb.waitForNotification(/Run (finished|failed|cancelled)|Run on TPU failed/, RUN_TIMEOUT_MS);
      const elapsed = ((Date.now() - started) / 1000).toFixed(1);
      console.log(`# run took ${elapsed}s: ${text}`);

      // The whole channel, from its backing file (the panel only renders the lines on screen).
      const files = findLogs(server!.userDataDir, 'TPU Run.log');
      assert.equal(files.length, 1, `one "TPU Run" output channel log (found ${files.join(', ') || 'none'})`);
      const output = fs.readFileSync(files[0], 'utf8');
      fs.writeFileSync(path.join(ARTIFACTS, 'run-output.txt'), output);
      assert.match(text, /Run finished/, `the run failed; output:\n${output.slice(-4000)}`);
      for (let i = 0; i < 4; i++) assert.match(output, new RegExp(`^\\[w${i}\\] `, 'm'), `output from worker w${i}`);
      assert.doesNotMatch(output, /^\[w4\] /m);
      const lines = output.trimEnd().split('\n');
      const summary = lines[lines.length - 1];
      assert.match(summary, /4\/4/, `summary line reports 4/4 workers ok: "${summary}"`);
      // One distributed job, not four: the workers train data-parallel over gloo, so every worker logs the
      // same loss at each logged step.
      const losses = new Map<string, Set<string>>();
      for (const m of output.matchAll(/^\[w\d\] step (\d+) loss (\S+)/gm)) losses.set(m[1], (losses.get(m[1]) ?? new Set()).add(m[2]));
      assert.ok(losses.size >= 3, `logged steps in the output (${[...losses.keys()].join(', ')})`);
      for (const [stepNo, values] of losses) assert.equal(values.size, 1, `step ${stepNo}: the workers disagree on the loss (${[...values].join(', ')})`);

      // And what the user sees: the panel shows the summary at the bottom of the "TPU Run" channel.
      await wb.page.locator('.part.panel .output-view .view-lines').getByText(summary.slice(0, 40)).first().waitFor({ timeout: 15_000 });
      const visible = await wb.outputText();
      assert.match(visible, /\[w\d\] /, 'worker-prefixed lines on screen');
      await wb.settle();
      await shot('run-output.png');
    },
    { timeout: RUN_TIMEOUT_MS + 60_000, blocking: false },
  );

  step(
    'Cancel on the progress notification stops the run on every worker',
    async () => {
      await wb.openFile('recipes/tiny-llama.sh');
      await wb.runCommand('TPU: Run on TPU');
      // The status bar item is there while the run is.
      await wb.page.locator('.statusbar-item').filter({ hasText: 'TPU: tiny-llama.sh' }).waitFor({ timeout: 30_000 });
      const toast = wb.page.locator('.notifications-toasts .notification-toast').filter({ hasText: 'TPU: tiny-llama.sh' }).first();
      await toast.filter({ hasText: 'Running' }).waitFor({ timeout: 60_000 });
      await toast.getByRole('button', { name: 'Cancel' }).click();
      await wb.waitForNotification(/Run cancelled/, 60_000);
      const output = fs.readFileSync(findLogs(server!.userDataDir, 'TPU Run.log')[0], 'utf8');
      assert.match(output.trimEnd().split('\n').pop() ?? '', /cancelled/, 'the summary says the run was cancelled');
      // No trainer outlives the cancel (the emulator's workers carry our TPW_HOME).
      const deadline = Date.now() + 20_000;
      let trainers = trainerPids(home);
      while (trainers.length > 0 && Date.now() < deadline) {
        await delay(250);
        trainers = trainerPids(home);
      }
      assert.deepEqual(trainers, [], 'trainer processes left after cancel');
      await wb.dismissNotifications();
    },
    { timeout: 3 * 60_000, blocking: false },
  );

  step('the Runs view lists both runs from the run registry, with their outcome', async () => {
    const records = fs.readdirSync(path.join(home, 'runs')).filter((n) => n.endsWith('.json'));
    assert.equal(records.length, 2, `two run records (${records.join(', ')})`);
    // The pane may be collapsed under the VM tree: open it by its header.
    const header = wb.page.locator('.part.sidebar .pane-header[aria-label^="Runs"]');
    if ((await header.getAttribute('aria-expanded')) === 'false') await header.click();
    await wb.row('Runs', /tiny-llama\.sh on .*succeeded/).first().waitFor({ timeout: 20_000 });
    await wb.row('Runs', /tiny-llama\.sh on .*cancelled/).first().waitFor({ timeout: 20_000 });
    await wb.settle();
    await shot('runs-view.png');
  });

  step('nothing is left running in the status bar', async () => {
    await delay(500);
    assert.equal(await wb.page.locator('.statusbar-item').filter({ hasText: 'TPU:' }).count(), 0);
  });

  step('"Delete TPU VM" asks first, then deletes', async () => {
    await wb.runCommand('TPU: Delete TPU VM');
    await wb.waitQuickInputTitle(/Delete TPU VM/);
    await wb.acceptQuickPick(VM);
    const dialog = wb.page.locator('.monaco-dialog-box');
    await dialog.waitFor({ timeout: 15_000 });
    assert.match(await dialog.innerText(), new RegExp(`Delete TPU VM "${VM}"`));
    await shot('delete-confirm.png');
    await dialog.getByRole('button', { name: 'Delete' }).click();
    await wb.pane(VIEW).getByText('No TPU VMs yet').waitFor({ timeout: 90_000 });
  });
});

/** Trainer processes started by this test's emulator. */
function trainerPids(home: string): number[] {
  return pidsWithEnv('TPW_HOME', home).filter((pid) => {
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('tpu_trainer');
    } catch {
      return false;
    }
  });
}
