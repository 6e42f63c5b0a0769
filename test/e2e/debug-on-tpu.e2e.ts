/**
 * "Debug on TPU" in a real VS Code (code-server) without the Python Debugger extension: the session is TPU
 * Workbench's own `tpu-debugpy` type, whose adapter is the worker's debugpy itself, reached through the run's
 * SSH connection. A breakpoint set with F9 in a local Python file (our `breakpoints` contribution is what lets
 * VS Code set one in a .py file here) stops the program on the emulated worker; VS Code shows the stop in the
 * call stack and the editor at the LOCAL file and line, with the local variables; Continue lets the run end
 * with exit 0. Then "Attach Debugger…" from the Runs view's menu attaches to a run started without a debugger
 * (debugpy injected into its running Python through gdb), stops at a breakpoint in its loop, and after a
 * disconnect the run finishes by itself. Run after `npm run build`:
 *
 *   node --import tsx --test test/e2e/debug-on-tpu.e2e.ts
 *
 * Screenshots: test-artifacts/e2e/debug-*.png.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe } from 'node:test';
import type { Browser } from 'playwright-core';
import type { ProcessTracker } from './processes';
import { ARTIFACTS, cliPath, cliRunner, openVsCode, requireBuilt, startEmulator, stepper, teardown, testEnv, testRoot } from './session';
import type { Workbench } from './workbench';

const HELLO_PY = [
  'import os',
  '',
  '',
  'def add_up(n):',
  '    total = 0',
  '    for i in range(n):',
  '        total += i',
  '    return total',
  '',
  '',
  'print(f"hello total={add_up(4)} worker={os.environ.get(\'TPU_WORKER_ID\')}", flush=True)',
  '',
].join('\n');
const BREAK_LINE = HELLO_PY.split('\n').indexOf('    return total') + 1;
// A run that is already going when the debugger attaches: it loops for about a minute and ends by itself.
const LOOP_PY = ['import time', '', 'total = 0', 'for i in range(1, 601):', '    total += i', '    time.sleep(0.1)', 'print(f"loop done total={total}", flush=True)', ''].join('\n');
const LOOP_LINE = LOOP_PY.split('\n').indexOf('    total += i') + 1;

interface RunJson {
  runId: string;
  status: string;
  exitCodes?: (number | null)[];
}

describe('Debug on TPU in VS Code (code-server), without the Python extension', { timeout: 8 * 60_000 }, () => {
  let root: string;
  let home: string;
  let procs: ProcessTracker;
  let browser: Browser | undefined;
  let wb: Workbench;
  let cli: (...args: string[]) => string;
  let workspace: string;
  let env: NodeJS.ProcessEnv;
  const shot = (name: string): Promise<void> => wb.screenshot(path.join(ARTIFACTS, name));
  const steps = stepper('debug', shot);

  before(async () => {
    requireBuilt('extension.js', 'cli.js');
    ({ root, home, workspace, procs } = testRoot('debug'));
    fs.mkdirSync(path.join(workspace, 'recipes'));
    fs.writeFileSync(path.join(workspace, 'recipes', 'hello.sh'), 'export PYTHONUNBUFFERED=1\npython3 hello.py\n');
    fs.writeFileSync(path.join(workspace, 'hello.py'), HELLO_PY);
    fs.writeFileSync(path.join(workspace, 'loop.py'), LOOP_PY);
    env = testEnv(home);
    await startEmulator(procs, env);
    cli = cliRunner(procs, env);
    cli('vm', 'create', 'solo', '--type', 'v5litepod-1');
    ({ browser, wb } = await openVsCode(procs, { root, workspace, env }));
  });

  after(() => teardown({ browser, procs, home, root, failed: steps.failed, logsName: 'logs-debug' }));

  const editorBreakpoints = () => wb.page.locator('.editor-group-container.active .monaco-editor .glyph-margin-widgets .codicon-debug-breakpoint');

  steps.step('F9 sets a breakpoint in a local Python file', async () => {
    await wb.openFile('hello.py');
    await wb.page.keyboard.press('Control+G');
    await wb.typeQuickInput(`:${BREAK_LINE}`);
    await wb.page.locator('.quick-input-widget .quick-input-list .monaco-list-row').filter({ hasText: `Go to line ${BREAK_LINE}` }).first().waitFor({ timeout: 15_000 });
    await wb.page.keyboard.press('Enter');
    await wb.page.locator('.statusbar-item').filter({ hasText: new RegExp(`^Ln ${BREAK_LINE}, Col`) }).first().waitFor({ timeout: 15_000 });
    await wb.page.keyboard.press('F9');
    await editorBreakpoints().first().waitFor({ timeout: 15_000 });
    assert.equal(await editorBreakpoints().count(), 1);
  });

  steps.step("Debug on TPU from the VM's menu stops at the breakpoint, shown at the local file and line", async () => {
    await wb.openViewContainer('TPU');
    const vm = wb.row('TPU VMs', /solo/).first();
    await vm.waitFor({ timeout: 60_000 });
    await wb.contextMenu(vm, 'Debug on TPU');
    // VS Code opens Run and Debug on the stop: the call stack's top frame is add_up in hello.py at the line.
    const frame = wb.page.locator('.debug-call-stack .monaco-list-row .stack-frame').filter({ hasText: 'add_up' }).first();
    await frame.waitFor({ timeout: 150_000 });
    const text = (await frame.innerText()).replace(/\s+/g, ' ');
    assert.match(text, new RegExp(`add_up hello\\.py ${BREAK_LINE}:\\d+`), text);
    // The debug toolbar is up, and the editor of the local file marks the stopped line.
    await wb.page.locator('.debug-toolbar').waitFor({ state: 'visible', timeout: 15_000 });
    await wb.page.locator('.tabs-container .tab.active[aria-label^="hello.py"]').waitFor({ timeout: 15_000 });
    await wb.page.locator('.editor-group-container.active .monaco-editor .debug-top-stack-frame-line').first().waitFor({ timeout: 15_000 });
    const status = wb.page.locator('.statusbar-item').filter({ hasText: /^Ln \d+, Col \d+/ }).first();
    assert.match(await status.innerText(), new RegExp(`^Ln ${BREAK_LINE}, Col`), 'the cursor is on the stopped line');
    // The worker's values, read through debugpy: the loop has run (0+1+2+3).
    const total = wb.pane('Variables').locator('.monaco-list-row').filter({ hasText: /^\s*total\s*=/ }).first();
    await total.waitFor({ timeout: 15_000 });
    assert.match((await total.innerText()).replace(/\s+/g, ' ').trim(), /^total = 6$/);
    const sessions = JSON.parse(cli('runs', '--json')) as RunJson[];
    assert.equal(sessions[0]?.status, 'running', 'the run waits at the breakpoint');
    await shot('debug-stopped.png');
  });

  steps.step('Continue lets the run end with exit 0 and the session close', async () => {
    await wb.page.locator('.debug-toolbar .action-item .codicon-debug-continue').first().click();
    await wb.page.locator('.debug-toolbar').waitFor({ state: 'hidden', timeout: 60_000 });
    let last: RunJson | undefined;
    for (const deadline = Date.now() + 90_000; ; await wb.page.waitForTimeout(1000)) {
      last = (JSON.parse(cli('runs', '--json')) as RunJson[])[0];
      if (last && last.status !== 'running' && last.status !== 'starting') break;
      if (Date.now() > deadline) assert.fail(`the run did not end: ${JSON.stringify(last)}`);
    }
    assert.equal(last.status, 'succeeded', JSON.stringify(last));
    assert.deepEqual(last.exitCodes, [0]);
    const log = cli('logs', last.runId);
    assert.match(log, /hello total=6 worker=0/);
    await shot('debug-ended.png');
  });

  steps.step("Attach Debugger… from the Runs view's menu stops a run that was started without a debugger, which then ends by itself", async () => {
    // The second recipe only now: "Debug on TPU" above found one recipe and did not ask.
    fs.writeFileSync(path.join(workspace, 'recipes', 'loop.sh'), 'export PYTHONUNBUFFERED=1\npython3 loop.py\n');
    await wb.openFile('loop.py');
    await wb.page.keyboard.press('Control+G');
    await wb.typeQuickInput(`:${LOOP_LINE}`);
    await wb.page.locator('.quick-input-widget .quick-input-list .monaco-list-row').filter({ hasText: `Go to line ${LOOP_LINE}` }).first().waitFor({ timeout: 15_000 });
    await wb.page.keyboard.press('Enter');
    await wb.page.keyboard.press('F9');
    await editorBreakpoints().first().waitFor({ timeout: 15_000 });
    // The CLI syncs the folder it runs in.
    const out = procs.run('cli', process.execPath, [cliPath(), 'run', 'recipes/loop.sh', '--vm', 'solo', '--detach'], { env, cwd: workspace, timeoutMs: 120_000 });
    const runId = /Run (\S+) started on every worker/.exec(out)?.[1] ?? '';
    const started = (JSON.parse(cli('runs', '--json')) as RunJson[]).find((r) => r.runId === runId);
    assert.equal(started?.status, 'running', `the CLI started ${runId} without a debugger`);

    await wb.openViewContainer('TPU');
    const row = wb.row('Runs', /loop\.sh on solo.*running/).first();
    for (const deadline = Date.now() + 30_000; !(await row.isVisible().catch(() => false)); await wb.page.waitForTimeout(500)) {
      if (Date.now() > deadline) assert.fail('the Runs view does not show the running loop.sh');
      await wb.runCommand('TPU: Refresh Runs');
    }
    await wb.contextMenu(row, 'Attach Debugger…');
    const frame = wb.page.locator('.debug-call-stack .monaco-list-row .stack-frame').filter({ hasText: 'loop.py' }).first();
    await frame.waitFor({ timeout: 90_000 });
    assert.match((await frame.innerText()).replace(/\s+/g, ' '), new RegExp(`loop\\.py ${LOOP_LINE}:\\d+`));
    await wb.page.locator('.tabs-container .tab.active[aria-label^="loop.py"]').waitFor({ timeout: 15_000 });
    const i = wb.pane('Variables').locator('.monaco-list-row').filter({ hasText: /^\s*i\s*=/ }).first();
    await i.waitFor({ timeout: 15_000 });
    const valueOf = async (row: typeof i): Promise<number> => Number(/= (\d+)$/.exec((await row.innerText()).replace(/\s+/g, ' ').trim())?.[1]);
    const at = await valueOf(i);
    assert.ok(at > 1 && at < 600, `stopped inside the loop that was already going (i = ${at})`);
    // Stopped before `total += i` runs: the sum of 1..i-1, read from the live process.
    const total = wb.pane('Variables').locator('.monaco-list-row').filter({ hasText: /^\s*total\s*=/ }).first();
    assert.equal(await valueOf(total), ((at - 1) * at) / 2);
    await shot('debug-attached.png');

    // No breakpoints left, then Disconnect: the program goes on without the debugger.
    await wb.runCommand('Remove All Breakpoints');
    await wb.page.locator('.debug-toolbar .action-item .codicon-debug-disconnect').first().click();
    await wb.page.locator('.debug-toolbar').waitFor({ state: 'hidden', timeout: 60_000 });
    const log = cli('logs', runId, '--follow');
    assert.match(log, new RegExp(`loop done total=${(600 * 601) / 2}`));
    const ended = (JSON.parse(cli('runs', '--json')) as RunJson[]).find((r) => r.runId === runId);
    assert.equal(ended?.status, 'succeeded', JSON.stringify(ended));
    // From the palette, with no run going, the command says what to do first.
    await wb.runCommand('TPU: Attach Debugger…');
    await wb.waitForNotification(/Attach Debugger failed: No run is going: start one with "Run on TPU", then attach the debugger to it\./);
  });
});
