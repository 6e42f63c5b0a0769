/**
 * The "First run on TPU" walkthrough (contributes.walkthroughs) in a real VS Code (code-server): it renders
 * with its five steps, the backend step is checked once the TPU view has loaded from a running emulator (the
 * tpuWorkbench.backendState context the view sets), and the secrets step once "TPU: Set Secret" ran. Run after
 * `npm run build`:
 *
 *   node --import tsx --test test/e2e/walkthrough.e2e.ts
 *
 * Screenshots: test-artifacts/e2e/walkthrough-*.png.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Locator } from 'playwright-core';
import type { ProcessTracker } from './processes';
import { ARTIFACTS, openVsCode, requireBuilt, startEmulator, teardown, testEnv, testRoot } from './session';
import type { Workbench } from './workbench';

const PKG = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../package.json'), 'utf8')) as {
  contributes: { walkthroughs: { title: string; steps: { id: string; title: string }[] }[] };
};
const WALKTHROUGH = PKG.contributes.walkthroughs[0];

describe('first-run walkthrough in VS Code (code-server)', { timeout: 6 * 60_000 }, () => {
  let root: string;
  let home: string;
  let procs: ProcessTracker;
  let browser: Browser | undefined;
  let wb: Workbench;
  let failed = false;

  before(async () => {
    requireBuilt('extension.js');
    let workspace: string;
    ({ root, home, workspace, procs } = testRoot('walkthrough'));
    fs.mkdirSync(path.join(workspace, 'recipes'));
    fs.writeFileSync(path.join(workspace, 'recipes', 'noop.sh'), 'echo hi\n');
    const env = testEnv(home);
    await startEmulator(procs, env);
    ({ browser, wb } = await openVsCode(procs, { root, workspace, env }));
  });

  after(() => teardown({ browser, procs, home, root, failed, logsName: 'logs-walkthrough' }));

  /** The walkthrough's step button titled `title`. */
  const step = (title: string): Locator => wb.page.locator('.getting-started-step').filter({ hasText: title }).first();
  // VS Code draws a checked step with its registered icon `getting-started-step-checked` (pass-filled).
  const done = async (title: string): Promise<boolean> => (await step(title).locator('.codicon-getting-started-step-checked').count()) > 0;

  test('renders its steps, and steps complete from the real events', async (t) => {
    t.after(async () => {
      if (t.signal.aborted) failed = true;
      await wb.screenshot(path.join(ARTIFACTS, 'walkthrough-last.png')).catch(() => undefined);
    });
    await wb.openViewContainer('TPU');
    await wb.runCommand('Welcome: Open Walkthrough...');
    await wb.acceptQuickPick(WALKTHROUGH.title);
    for (const s of WALKTHROUGH.steps) await step(s.title).waitFor({ timeout: 60_000 });
    await wb.screenshot(path.join(ARTIFACTS, 'walkthrough-open.png'));

    // The emulator runs and the TPU view loads from it: the backend step is checked without a click.
    const backendStep = WALKTHROUGH.steps[0].title;
    for (const deadline = Date.now() + 60_000; !(await done(backendStep)); await wb.page.waitForTimeout(500)) {
      if (Date.now() > deadline) assert.fail(`the step "${backendStep}" was not checked once the backend loaded`);
    }
    const secrets = WALKTHROUGH.steps.find((s) => s.id === 'secrets')!.title;
    assert.equal(await done(secrets), false, 'the secrets step starts unchecked');
    await wb.runCommand('TPU: Set Secret');
    await wb.page.keyboard.press('Escape');
    for (const deadline = Date.now() + 30_000; !(await done(secrets)); await wb.page.waitForTimeout(500)) {
      if (Date.now() > deadline) assert.fail(`the step "${secrets}" was not checked after TPU: Set Secret`);
    }
    assert.equal(await done(WALKTHROUGH.steps.find((s) => s.id === 'runSample')!.title), false, 'no run yet: the run step stays unchecked');
    await wb.screenshot(path.join(ARTIFACTS, 'walkthrough-steps.png'));
  });
});
