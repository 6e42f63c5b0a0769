/**
 * A `tpu` task from tasks.json in a real VS Code (code-server): it runs `tpw run` on an emulated worker, the
 * program fails with a Python traceback in a file of the synced workspace, the Problems panel shows the error
 * at the LOCAL file, and opening it lands on the line. Run after `npm run build`:
 *
 *   node --import tsx --test test/e2e/tpu-task.e2e.ts
 *
 * Screenshots: test-artifacts/e2e/tpu-task-*.png.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe } from 'node:test';
import type { Browser } from 'playwright-core';
import type { ProcessTracker } from './processes';
import { ARTIFACTS, cliRunner, openVsCode, requireBuilt, startEmulator, stepper, teardown, testEnv, testRoot } from './session';
import type { Workbench } from './workbench';

const BAD_PY = ['def main():', '    value = 1', '    return value + missing_name', '', '', 'main()', ''].join('\n');
const BAD_LINE = BAD_PY.split('\n').findIndex((l) => l.includes('missing_name')) + 1;

describe('tpu task with problem matchers in VS Code (code-server)', { timeout: 6 * 60_000 }, () => {
  let root: string;
  let home: string;
  let procs: ProcessTracker;
  let browser: Browser | undefined;
  let wb: Workbench;

  before(async () => {
    requireBuilt('extension.js', 'cli.js');
    let workspace: string;
    ({ root, home, workspace, procs } = testRoot('tpu-task'));
    fs.mkdirSync(path.join(workspace, 'recipes'));
    fs.writeFileSync(path.join(workspace, 'recipes', 'bad.sh'), 'export PYTHONUNBUFFERED=1\npython3 bad.py\n');
    fs.writeFileSync(path.join(workspace, 'bad.py'), BAD_PY);
    fs.mkdirSync(path.join(workspace, '.vscode'));
    fs.writeFileSync(
      path.join(workspace, '.vscode', 'tasks.json'),
      JSON.stringify({ version: '2.0.0', tasks: [{ type: 'tpu', label: 'bad on solo', recipe: 'recipes/bad.sh', vm: 'solo', group: { kind: 'build', isDefault: true } }] }, null, 2),
    );
    const env = testEnv(home);
    await startEmulator(procs, env);
    cliRunner(procs, env)('vm', 'create', 'solo', '--type', 'v5litepod-1');
    ({ browser, wb } = await openVsCode(procs, { root, workspace, env }));
  });

  after(() => teardown({ browser, procs, home, root, failed: steps.failed, logsName: 'logs-tpu-task' }));

  // A failed step keeps the extension host's, code-server's and the emulator's logs (teardown) and a screenshot.
  const steps = stepper('tpu-task', (file) => wb.screenshot(path.join(ARTIFACTS, file)));

  steps.step('the traceback is a Problem at the local file, and opening it lands on the line', async () => {
    await wb.openViewContainer('TPU');
    // The default build task: run without a pick.
    await wb.runCommand('Tasks: Run Build Task');
    const row = wb.page.locator('.markers-panel .monaco-list-row').filter({ hasText: /NameError: name 'missing_name' is not defined/ }).first();
    for (const deadline = Date.now() + 120_000; !(await row.isVisible().catch(() => false)); await wb.page.waitForTimeout(1000)) {
      if (Date.now() > deadline) assert.fail('no Problem for the traceback within 120 s');
      // The panel is opened (again) until the entry shows: the task's terminal may take the panel first.
      if (!(await wb.page.locator('.markers-panel').isVisible().catch(() => false))) {
        await wb.runCommand('View: Focus Problems (Errors, Warnings, Infos)').catch(() => undefined);
      }
    }
    const text = (await row.innerText()).replace(/\s+/g, ' ');
    assert.match(text, new RegExp(`\\[Ln ${BAD_LINE}, Col 1\\]`), text);
    const fileRow = wb.page.locator('.markers-panel .monaco-list-row').filter({ hasText: 'bad.py' }).first();
    assert.ok(await fileRow.isVisible(), 'the Problem is filed under the local bad.py');
    await wb.screenshot(path.join(ARTIFACTS, 'tpu-task-problems.png'));
    await row.click();
    await wb.page.keyboard.press('Enter');
    await wb.page.locator('.tab.active').filter({ hasText: 'bad.py' }).waitFor({ timeout: 15_000 });
    const status = wb.page.locator('.statusbar-item').filter({ hasText: /^Ln \d+, Col \d+/ }).first();
    await status.waitFor({ timeout: 15_000 });
    // The whole line is selected (the matcher gives a line, no column).
    assert.match(await status.innerText(), new RegExp(`^Ln ${BAD_LINE}, Col \\d+`));
    await wb.screenshot(path.join(ARTIFACTS, 'tpu-task-editor.png'));
  });
});
