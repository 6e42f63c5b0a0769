/**
 * "Run on TPU (Task YAML)" in a real VS Code (code-server 4.100.3) driven through headless Chromium: on a
 * SkyPilot task YAML, it asks before creating the missing VM, runs setup and run on every host of the emulator
 * VM with SkyPilot's prefixes and variables (a secret from the environment reaches the program, not the
 * output), and leaves the VM for `tpw down`. Run after `npm run build`:
 *
 *   node --import tsx --test test/e2e/task-yaml.e2e.ts
 */
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe } from 'node:test';
import type { Browser } from 'playwright-core';
import { findLogs, type CodeServer } from './code-server';
import { delay, type ProcessTracker } from './processes';
import { ARTIFACTS, cliRunner, openVsCode, requireBuilt, startEmulator, stepper, teardown, testEnv, testRoot } from './session';
import type { Workbench } from './workbench';

const SECRET = 'e2e-task-secret-41c7';
const TASK = `name: e2e-task
resources:
  accelerators: tpu-v5litepod-16
setup: echo "setup on $SKYPILOT_SETUP_NODE_RANK"
run: |
  echo "hello rank=$SKYPILOT_NODE_RANK of $SKYPILOT_NUM_NODES greeting=$GREETING secret=$(printf %s "$MY_SECRET" | sha256sum | cut -c1-12)"
envs:
  GREETING: hi
secrets:
  MY_SECRET: null
`;

describe('Run on TPU on a SkyPilot task YAML (code-server)', { timeout: 15 * 60_000 }, () => {
  let root: string;
  let home: string;
  let workspace: string;
  let env: NodeJS.ProcessEnv;
  let procs: ProcessTracker;
  let browser: Browser | undefined;
  let server: CodeServer | undefined;
  let wb: Workbench;
  let cli: (...args: string[]) => string;
  const shot = (name: string): Promise<void> => wb.screenshot(path.join(ARTIFACTS, name));
  const channel = (): string =>
    findLogs(server!.userDataDir, 'TPU Task e2e-task.log')
      .map((f) => fs.readFileSync(f, 'utf8'))
      .join('\n');

  before(async () => {
    requireBuilt('extension.js', 'cli.js');
    ({ root, home, workspace, procs } = testRoot('taskyaml'));
    fs.writeFileSync(path.join(workspace, 'task.yaml'), TASK);
    // The secret comes from the environment VS Code was started from, as `tpw launch --secret MY_SECRET` takes it.
    env = testEnv(home, { MY_SECRET: SECRET });
    cli = cliRunner(procs, env);
    await startEmulator(procs, env);
    ({ server, browser, wb } = await openVsCode(procs, { root, workspace, env }));
  });

  after(() => teardown({ browser, procs, server, home, env, root, failed: steps.failed, logsName: 'logs-task-yaml' }));

  const steps = stepper('taskyaml', (file) => shot(file), 6 * 60_000);
  const step = steps.step;

  step('asks before creating the VM, then runs setup and run on every host with SkyPilot prefixes', async () => {
    await wb.openFile('task.yaml');
    await wb.runCommand('TPU: Run on TPU (Task YAML)');
    const dialog = wb.page.locator('.monaco-dialog-box');
    await dialog.waitFor({ timeout: 60_000 });
    assert.match(await dialog.innerText(), /Create TPU VM e2e-task \(tpu-v5litepod-16\)/);
    await shot('task-yaml-confirm.png');
    await dialog.getByRole('button', { name: 'Create and Run' }).click();
    const text = await wb.waitForNotification(/task\.yaml on e2e-task: Run:/, 180_000);
    assert.match(text, /4\/4 workers ok/, text);
    let out = '';
    for (const deadline = Date.now() + 10_000; !/Run: .*4\/4 workers ok/.test(out) && Date.now() < deadline; await delay(250)) out = channel();
    const sha = crypto.createHash('sha256').update(SECRET).digest('hex').slice(0, 12);
    const names = ['head', 'worker1', 'worker2', 'worker3'];
    for (let r = 0; r < 4; r++) {
      assert.ok(out.includes(`(setup ${names[r]}, rank=${r}) setup on ${r}`), out);
      assert.ok(out.includes(`(${names[r]}, rank=${r}) hello rank=${r} of 4 greeting=hi secret=${sha}`), out);
    }
    assert.match(out, /Secrets \(names only\): MY_SECRET/);
    assert.ok(!out.includes(SECRET), 'the secret is not in the output');
    assert.match(cli('vm', 'list'), /e2e-task\s+\S+\s+v5litepod-16\s+READY\s+4/);
    await wb.dismissNotifications();
  });

  step('tpw down deletes it', async () => {
    cli('down', 'e2e-task');
    assert.doesNotMatch(cli('vm', 'list'), /e2e-task/);
  });
});
