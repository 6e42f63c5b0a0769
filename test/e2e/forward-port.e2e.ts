/**
 * "Forward Port…" on a worker in a real VS Code (code-server): the worker's context menu offers it, the quick
 * pick offers TensorBoard, Jupyter and the profiler server, "Other port…" takes a port typed in, and the
 * notification names the local port, where a real HTTP server listening on the emulated worker's loopback
 * answers; "Stop Forwarding" closes that port. Run after `npm run build`:
 *
 *   node --import tsx --test test/e2e/forward-port.e2e.ts
 *
 * Screenshots: test-artifacts/e2e/forward-*.png.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe } from 'node:test';
import type { Browser } from 'playwright-core';
import { freePort, httpGet } from '../helpers/worker-server';
import type { ProcessTracker } from './processes';
import { ARTIFACTS, cliRunner, openVsCode, requireBuilt, startEmulator, stepper, teardown, testEnv, testRoot, VENV } from './session';
import type { Workbench } from './workbench';

const VIEW = 'TPU VMs';

describe('Forward Port… in VS Code (code-server)', { timeout: 6 * 60_000 }, () => {
  let root: string;
  let home: string;
  let procs: ProcessTracker;
  let browser: Browser | undefined;
  let wb: Workbench;
  let port = 0;

  before(async () => {
    requireBuilt('extension.js', 'cli.js');
    let workspace: string;
    ({ root, home, workspace, procs } = testRoot('forward'));
    fs.mkdirSync(path.join(workspace, 'recipes'));
    fs.writeFileSync(path.join(workspace, 'recipes', 'noop.sh'), 'echo hi\n');
    const env = testEnv(home);
    await startEmulator(procs, env);
    cliRunner(procs, env)('vm', 'create', 'solo', '--type', 'v5litepod-1');
    // An emulated worker's loopback is this machine's: a server here listening on 127.0.0.1 is "on the worker".
    const site = path.join(root, 'site');
    fs.mkdirSync(site);
    fs.writeFileSync(path.join(site, 'hello.txt'), 'tensorboard stand-in\n');
    port = await freePort();
    procs.spawn('http-server', path.join(VENV, 'bin/python3'), ['-m', 'http.server', String(port), '--bind', '127.0.0.1', '--directory', site], { env });
    ({ browser, wb } = await openVsCode(procs, { root, workspace, env }));
  });

  after(() => teardown({ browser, procs, home, root, failed: steps.failed, logsName: 'logs-forward' }));

  // A failed step keeps the extension host's, code-server's and the emulator's logs (teardown) and a screenshot.
  const steps = stepper('forward', (file) => wb.screenshot(path.join(ARTIFACTS, file)));

  steps.step("the worker's menu forwards a port, the notification names it, VS Code's Ports view lists it, and Stop Forwarding closes it", async () => {
    // The Ports view open from the start (a later palette command would clear the notification this reads).
    await wb.runCommand('Ports: Focus on Ports View');
    await wb.page.locator('.part.panel').getByText(/Forward a Port|No forwarded ports/).first().waitFor({ timeout: 30_000 }).catch(() => undefined);
    await wb.openViewContainer('TPU');
    const worker = wb.row(VIEW, /^\s*w0\s*127\./);
    await worker.waitFor({ timeout: 60_000 });
    await wb.contextMenu(worker, 'Forward Port…');
    await wb.waitQuickInputTitle(/^Forward Port from solo worker 0/);
    const offered = await wb.page.locator('.quick-input-widget .quick-input-list .monaco-list-row .label-name').allInnerTexts();
    for (const label of ['TensorBoard', 'Jupyter', 'Profiler server (torch_xla)', 'Other port…']) assert.ok(offered.some((o) => o.startsWith(label)), `${label} in ${offered.join(', ')}`);
    await wb.screenshot(path.join(ARTIFACTS, 'forward-pick.png'));
    await wb.acceptQuickPick('Other port…');
    await wb.waitQuickInputTitle(/^Forward Port from solo worker 0/);
    await wb.typeQuickInput(String(port));
    await wb.page.keyboard.press('Enter');
    const text = await wb.waitForNotification(/is at localhost:\d+/);
    const local = Number(/is at localhost:(\d+)/.exec(text)?.[1]);
    assert.match(text, new RegExp(`worker 0 of solo port ${port} is at localhost:${local}`));
    assert.notEqual(local, port, 'the emulator takes a free local port, not the forwarded number');
    const page = await httpGet(`http://127.0.0.1:${local}/hello.txt`);
    assert.equal(page.body, 'tensorboard stand-in\n', "the worker's server answers on the local port");
    await wb.screenshot(path.join(ARTIFACTS, 'forward-notification.png'));
    // Visible after the notification: the status bar, and VS Code's Ports view (its tunnel API), with what it is.
    await wb.page.locator('.statusbar-item').filter({ hasText: `Port ${port}: localhost:${local}` }).waitFor({ timeout: 15_000 });
    const listed = wb.page.locator('.part.panel .monaco-list-row').filter({ hasText: String(local) }).filter({ hasText: `solo w0:${port}` });
    await listed.first().waitFor({ timeout: 30_000 });
    await wb.screenshot(path.join(ARTIFACTS, 'forward-ports-view.png'));

    await wb.page.locator('.notifications-toasts .notification-toast').filter({ hasText: /is at localhost:/ }).getByRole('button', { name: 'Stop Forwarding' }).click();
    for (const deadline = Date.now() + 15_000; ; await wb.page.waitForTimeout(250)) {
      const gone = await httpGet(`http://127.0.0.1:${local}/hello.txt`, 2000).then(
        () => false,
        (e: Error) => /ECONNREFUSED/.test(e.message),
      );
      if (gone) break;
      if (Date.now() > deadline) assert.fail(`localhost:${local} still answers after Stop Forwarding`);
    }
    await listed.first().waitFor({ state: 'detached', timeout: 15_000 });
    assert.equal(await wb.page.locator('.statusbar-item').filter({ hasText: `localhost:${local}` }).count(), 0, 'the status bar no longer lists it');
  });
});
