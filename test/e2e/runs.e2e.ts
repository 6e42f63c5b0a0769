/**
 * Runs in a real VS Code (code-server 4.100.3) driven through headless Chromium, each checked by its outcome:
 * a run reattached after "Developer: Reload Window" (a new extension host) (listed as running, its output continuing with no
 * line lost or repeated), "Run Again" from the Runs view, two runs at once each in a channel of its own,
 * "Download Logs", a changed host key refused naming the worker, and HF_TOKEN from "TPU: Set Secret" reaching
 * the program and nothing else. The recipes live in the test's own workspace (no torch). Run after
 * `npm run build`:
 *
 *   node --import tsx --test test/e2e/runs.e2e.ts
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe } from 'node:test';
import type { Browser } from 'playwright-core';
import { argvHolding } from '../helpers/argv';
import { findLogs, type CodeServer } from './code-server';
import { delay, type ProcessTracker } from './processes';
import { ARTIFACTS, cliRunner, openVsCode, requireBuilt, startEmulator, stepper, teardown, testEnv, testRoot } from './session';
import type { Workbench } from './workbench';

const VM = 'pod';
/** A second VM, for two runs at once. */
const SIDE = 'side';
const LINES = 90;
/** A numbered line every 0.5 s for 45 s on every worker: long enough to reload the window (slow on 2 cores) mid-run. */
const COUNT_RECIPE = `#!/usr/bin/env bash\n# e2e: a slow run with numbered lines, and a metrics.jsonl line (loss 200 - i) for each.\nbash -c 'mkdir -p "$TPW_RUN_DIR/output"; for i in $(seq 1 ${LINES}); do echo "count $i"; echo "{\\"step\\":$i,\\"loss\\":$((200 - i))}" >> "$TPW_RUN_DIR/output/metrics.jsonl"; sleep 0.5; done'\n`;
/** Says whether HF_TOKEN is set and its sha256 (never the value), then stays up long enough for ps to look. */
const SECRET_RECIPE = `#!/usr/bin/env bash\n# e2e: is HF_TOKEN there?\nbash -c 'if [ -n "$HF_TOKEN" ]; then echo "HF_TOKEN set: yes sha256=$(printf %s "$HF_TOKEN" | sha256sum | cut -d" " -f1)"; else echo "HF_TOKEN set: no"; fi; sleep 8'\n`;

interface NodeJson {
  name: string;
  networkEndpoints: { ipAddress: string; port?: number }[];
}

interface RunJson {
  runId: string;
  node: string;
  recipe: string;
  status: string;
  startedAt: string;
}

describe('Runs in VS Code (code-server): reattach, run again, download logs, host keys, secrets', { timeout: 25 * 60_000 }, () => {
  let root: string;
  let home: string;
  let workspace: string;
  let env: NodeJS.ProcessEnv;
  let procs: ProcessTracker;
  let browser: Browser | undefined;
  let server: CodeServer | undefined;
  let wb: Workbench;

  const shot = (name: string): Promise<void> => wb.screenshot(path.join(ARTIFACTS, name));
  let cli: (...args: string[]) => string;
  const runsJson = (): RunJson[] => JSON.parse(cli('runs', '--json')) as RunJson[];
  /** The output channel's backing files (one per extension host that had the channel), oldest first. */
  const channelFiles = (name: string): string[] =>
    // The backing file is `<n>-<name>.log`, with characters such as ':' dropped from the name.
    findLogs(server!.userDataDir, `${name.replace(/:/g, '')}.log`)
      .filter((f) => path.basename(f).replace(/^\d+-/, '') === `${name.replace(/:/g, '')}.log`)
      .sort((a, b) => fs.statSync(a).birthtimeMs - fs.statSync(b).birthtimeMs);
  const read = (file: string): string => fs.readFileSync(file, 'utf8');
  /** Waits until `file` (or the newest file of a channel) matches. */
  const waitFor = async (what: string, get: () => string, re: RegExp, timeoutMs = 60_000): Promise<string> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const text = get();
      if (re.test(text)) return text;
      if (Date.now() > deadline) throw new Error(`${what} never matched ${re}; it has:\n${text.slice(-3000)}`);
      await delay(250);
    }
  };
  const newestChannel = (name: string): string => {
    const files = channelFiles(name);
    return files.length ? read(files[files.length - 1]) : '';
  };
  const runsRow = (text: RegExp) => wb.row('Runs', text);
  const openRunsPane = async (): Promise<void> => {
    await wb.openViewContainer('TPU');
    const header = wb.page.locator('.part.sidebar .pane-header[aria-label^="Runs"]');
    // After a reload the container can be restored as selected with the sidebar hidden: one more click shows it.
    if (!(await header.isVisible())) {
      await header.waitFor({ timeout: 5_000 }).catch(() => wb.page.locator('.activitybar .action-item a[aria-label^="TPU"]').first().click());
    }
    await header.waitFor({ timeout: 60_000 });
    if ((await header.getAttribute('aria-expanded')) === 'false') await header.click();
  };
  /**
   * "Run on TPU" with no recipe open: it asks which of the workspace's recipes (there are two), then which VM
   * when there are several READY ones.
   */
  const runOnTpu = async (recipe: string, vm: string): Promise<void> => {
    await wb.runCommand('View: Close All Editors');
    await wb.page.locator('.tabs-container .tab').first().waitFor({ state: 'detached', timeout: 10_000 }).catch(() => undefined);
    await wb.runCommand('TPU: Run on TPU');
    await wb.waitQuickInputTitle(/Run on TPU: recipe/);
    await wb.acceptQuickPick(recipe);
    if (await wb.quickInputTitle(/target VM/, 5_000)) await wb.acceptQuickPick(vm);
  };

  before(async () => {
    requireBuilt('extension.js', 'cli.js');
    ({ root, home, workspace, procs } = testRoot('runs'));
    fs.mkdirSync(path.join(workspace, 'recipes'));
    fs.writeFileSync(path.join(workspace, 'recipes', 'count.sh'), COUNT_RECIPE);
    fs.writeFileSync(path.join(workspace, 'recipes', 'secret.sh'), SECRET_RECIPE);
    // No HF_TOKEN of the caller's: the secret step must see only the one it stores.
    env = testEnv(home, {}, ['HF_TOKEN']);
    cli = cliRunner(procs, env);
    await startEmulator(procs, env);
    cli('vm', 'create', VM, '--type', 'v5litepod-16');
    // This file reads runs' output in the "TPU Run" channels, which are opt-in (the run view has it either way).
    ({ server, browser, wb } = await openVsCode(procs, { root, workspace, env, settings: { 'tpuWorkbench.run.outputChannel': true } }));
  });

  after(() => teardown({ browser, procs, server, home, env, root, failed: steps.failed, logsName: 'logs-runs' }));

  const steps = stepper('runs', (file) => shot(file), 4 * 60_000);
  const step = steps.step;
  let firstRunId = '';

  step('a run reattaches after a window reload (new extension host): listed as running, no line lost or repeated', async () => {
    await openRunsPane();
    await runOnTpu('count.sh', VM);
    // Some lines from every worker, but far from the end, before the restart.
    const before = await waitFor('"TPU Run"', () => newestChannel('TPU Run'), /^\[w3\] count 4$/m, 90_000);
    assert.doesNotMatch(before, new RegExp(`count ${LINES}$`, 'm'), 'the run is still going at the restart');
    const filesBefore = new Set(channelFiles('TPU Run'));
    const running = runsJson();
    assert.equal(running.length, 1);
    assert.equal(running[0].status, 'running');
    firstRunId = running[0].runId;

    // code-server has no "Restart Extension Host"; reloading the window ends this extension host and starts a
    // new one, as closing and reopening VS Code does.
    await wb.runCommand('Developer: Reload Window');
    await wb.page.waitForSelector('.monaco-workbench', { timeout: 90_000 });
    await wb.page.waitForSelector('.activitybar .action-item', { timeout: 90_000 });
    // The new extension host's "TPU Run" is a new channel (a new backing file): the reattached run's output.
    await waitFor('a new "TPU Run" channel', () => channelFiles('TPU Run').filter((f) => !filesBefore.has(f)).map(read).join('\n'), new RegExp(`Reattached to run ${firstRunId}`), 90_000);
    const current = (): string => channelFiles('TPU Run').filter((f) => !filesBefore.has(f)).map(read).join('\n');
    // Listed as running in the Runs view of the restarted extension, before it ends.
    await openRunsPane();
    await runsRow(/count\.sh on pod.*running/).first().waitFor({ timeout: 30_000 });
    assert.doesNotMatch(current(), /workers ok/, 'the run was still going when the Runs view listed it as running');
    await wb.settle();
    await shot('runs-reattached.png');

    const text = await wb.waitForNotification(/Run (finished|failed|cancelled): count\.sh/, 90_000);
    assert.match(text, /Run finished: count\.sh on pod, all 4 workers ok/, text);
    const output = await waitFor('"TPU Run" after the restart', current, /4\/4 workers ok/, 10_000);
    for (let w = 0; w < 4; w++) {
      const numbers = output
        .split('\n')
        .filter((l) => l.startsWith(`[w${w}] `))
        .map((l) => l.slice(`[w${w}] `.length));
      assert.deepEqual(numbers, Array.from({ length: LINES }, (_, i) => `count ${i + 1}`), `worker ${w}: every line once, in order`);
    }
    await runsRow(/count\.sh on pod.*succeeded/).first().waitFor({ timeout: 30_000 });
    assert.equal(runsJson()[0].status, 'succeeded');
    await wb.dismissNotifications();
  });

  step('"Run Again" starts a new run of the same recipe on the same VM; a run on another VM meanwhile gets its own channel', async () => {
    cli('vm', 'create', SIDE, '--type', 'v5litepod-1');
    await openRunsPane();
    await wb.contextMenu(runsRow(/count\.sh on pod.*succeeded/).first(), 'Run Again');
    const again = await waitFor('the run registry', () => JSON.stringify(runsJson()), /"status": ?"running"/, 90_000);
    const runs = JSON.parse(again) as RunJson[];
    assert.equal(runs.length, 2);
    const [second, first] = runs;
    assert.notEqual(second.runId, first.runId);
    assert.equal(second.recipe, first.recipe, 'the same recipe');
    assert.equal(second.node, first.node, 'on the same VM');
    await waitFor('"TPU Run"', () => newestChannel('TPU Run'), /^\[w0\] count 2$/m, 60_000);

    // A second run while that one goes on: on the other VM, in a channel of its own.
    await runOnTpu('count.sh', SIDE);
    const side = await waitFor('"TPU Run: count.sh on side"', () => newestChannel('TPU Run: count.sh on side'), /^\[w0\] count 2$/m, 90_000);
    assert.doesNotMatch(side, /^\[w[123]\] /m, 'only the 1-worker VM\'s lines');
    await wb.page.locator('.statusbar-item').filter({ hasText: 'TPU: 2 runs' }).waitFor({ timeout: 15_000 });
    // Show Run Output asks which.
    await wb.runCommand('TPU: Show Run Output');
    await wb.waitQuickInputTitle(/Show Run Output/);
    const items = await wb.page.locator('.quick-input-widget .quick-input-list .monaco-list-row').allInnerTexts();
    assert.ok(items.some((t) => t.includes('count.sh on pod')) && items.some((t) => t.includes('count.sh on side')), items.join(' | '));
    await shot('runs-two-at-once.png');
    await wb.acceptQuickPick();

    // Both end (the notifications may overlap or fade; the registry says how each ended).
    await waitFor('the run registry', () => runsJson().map((r) => r.status).join(' '), /^succeeded succeeded succeeded$/, 120_000);
    await waitFor('"TPU Run"', () => newestChannel('TPU Run'), /4\/4 workers ok/, 10_000);
    const main = newestChannel('TPU Run');
    assert.match(main, new RegExp(`^\\[w3\\] count ${LINES}$`, 'm'));
    assert.doesNotMatch(main, /on side/, 'the other run is not in "TPU Run"');
    assert.match(await waitFor('"TPU Run: count.sh on side"', () => newestChannel('TPU Run: count.sh on side'), /1\/1 workers ok/, 10_000), /w0=0$/m);
    await wb.dismissNotifications();
  });

  step('"Download Logs" writes every worker\'s log into the workspace', async () => {
    await openRunsPane();
    const row = wb.row('Runs', /count\.sh on pod.*succeeded/).last(); // newest first: the last pod row is the first run
    await wb.contextMenu(row, 'Download Logs');
    const dir = path.join(workspace, '.tpw', 'logs', firstRunId);
    for (const deadline = Date.now() + 60_000; !(fs.existsSync(path.join(dir, 'w3.log')) && fs.existsSync(path.join(dir, 'w0.log'))); await delay(250)) {
      if (Date.now() > deadline) throw new Error(`no logs in ${dir}: ${fs.existsSync(dir) ? fs.readdirSync(dir).join(', ') : 'no folder'}`);
    }
    await delay(500);
    assert.deepEqual(fs.readdirSync(dir).sort(), ['w0.log', 'w1.log', 'w2.log', 'w3.log']);
    const expected = Array.from({ length: LINES }, (_, i) => `count ${i + 1}`).join('\n') + '\n';
    for (let w = 0; w < 4; w++) assert.equal(fs.readFileSync(path.join(dir, `w${w}.log`), 'utf8'), expected, `w${w}.log is that worker's whole log`);
    // And worker 0's is opened.
    await wb.page.locator('.tabs-container .tab.active[aria-label^="w0.log"]').waitFor({ timeout: 15_000 });
  });

  step('"Open Run View" on a running run: every worker\'s log from its first line, metrics charted while it runs', async () => {
    // Earlier runs' panels (hidden tabs keep their webviews) would be found first: start from none.
    const webviews = wb.page.locator('iframe.webview.ready');
    await wb.runCommand('View: Close All Editors');
    for (const deadline = Date.now() + 30_000; (await webviews.count()) > 0; await delay(250)) {
      if (Date.now() > deadline) throw new Error(`${await webviews.count()} webviews left after closing every editor`);
    }
    await openRunsPane();
    await wb.contextMenu(runsRow(/count\.sh on pod.*succeeded/).first(), 'Run Again');
    const started = await waitFor('the run registry', () => JSON.stringify(runsJson()), /"status": ?"running"/, 90_000);
    const runId = (JSON.parse(started) as RunJson[])[0].runId;
    await waitFor('"TPU Run"', () => newestChannel('TPU Run'), /^\[w3\] count 3$/m, 60_000);
    // The run started here has its panel already: "Open Run View" shows that one, it opens no second.
    await webviews.first().waitFor({ timeout: 30_000 });
    await wb.contextMenu(runsRow(/count\.sh on pod.*running/).first(), 'Open Run View');
    await delay(1500);
    assert.equal(await webviews.count(), 1, 'one run view for the run');
    // Its live metrics come over the run's own connections (no second set per worker).
    const own = webviews.first().contentFrame().locator('iframe#active-frame').contentFrame();
    await own.locator('#tab-metrics').click();
    await own.locator('figure.chart[data-metric="loss"]').waitFor({ timeout: 30_000 });
    assert.equal(runsJson().find((r) => r.runId === runId)?.status, 'running', 'the run\'s own panel charts while it runs');
    // Closed, then opened from the Runs view: a panel that follows the recorded run on its own, from each log's first byte.
    await wb.runCommand('View: Close All Editors');
    await webviews.first().waitFor({ state: 'detached', timeout: 30_000 });
    await wb.contextMenu(runsRow(/count\.sh on pod.*running/).first(), 'Open Run View');
    // VS Code nests the webview in two iframes.
    const view = webviews.first().contentFrame().locator('iframe#active-frame').contentFrame();
    await view.locator('.chips .chip').nth(3).waitFor({ timeout: 60_000 });
    await view.locator('#tab-metrics').click();
    await view.locator('figure.chart[data-metric="loss"]').waitFor({ timeout: 30_000 });
    const legend = await view.locator('figure.chart[data-metric="loss"] .u-legend').innerText();
    for (let w = 0; w < 4; w++) assert.match(legend, new RegExp(`w${w}`), `worker ${w} is charted`);
    assert.equal(runsJson().find((r) => r.runId === runId)?.status, 'running', 'the chart came while the run was still going: live');
    await wb.settle();
    await shot('runs-runview-live.png');
    // The panel's own watch ends with the run: every worker's chip says exit 0 over all its lines, none lost.
    await view.locator('#tab-logs').click();
    for (let w = 0; w < 4; w++) {
      const chip = view.locator('.chips .chip').nth(w);
      for (const deadline = Date.now() + 90_000; !(await chip.getAttribute('title'))?.startsWith(`Worker ${w}: exit 0, ${LINES} lines`); await delay(500)) {
        if (Date.now() > deadline) throw new Error(`worker ${w}'s chip: ${await chip.getAttribute('title')}`);
      }
    }
    await waitFor('the run registry', () => runsJson().map((r) => r.status).join(' '), /^succeeded( succeeded)+$/, 60_000);
    await shot('runs-runview-done.png');
    await wb.page.keyboard.press('Escape');
    await wb.runCommand('View: Close All Editors');
  });

  step('a changed host key for worker 1 is refused with a message naming the worker', async () => {
    const node = (JSON.parse(cli('vm', 'list', '--json')) as NodeJson[]).find((n) => n.name.endsWith(`/${VM}`));
    assert.ok(node, 'the VM is listed');
    const w1 = node.networkEndpoints[1];
    const knownHosts = path.join(home, 'known_hosts');
    const original = read(knownHosts);
    // Recorded as `[ip]:<ssh port>` (the endpoint's own port is the TPU runtime's, not SSH's).
    const lines = original.split('\n');
    const at = lines.findIndex((l) => l.startsWith(`[${w1.ipAddress}]:`) || l.startsWith(`${w1.ipAddress} `));
    assert.ok(at >= 0, `worker 1 (${w1.ipAddress}) is in ${knownHosts}:\n${original}`);
    // Another ed25519 key where worker 1's was: what a man in the middle, or a recreated VM, looks like.
    const keyFile = path.join(root, 'other-host-key');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', keyFile]);
    const [type, blob] = read(`${keyFile}.pub`).split(' ');
    lines[at] = `${lines[at].split(' ')[0]} ${type} ${blob}`;
    fs.writeFileSync(knownHosts, lines.join('\n'));
    const runsBefore = runsJson().length;
    try {
      await runOnTpu('count.sh', VM);
      const text = await wb.waitForNotification(/Run on TPU failed|Run failed/, 60_000);
      assert.match(text, new RegExp(`worker 1 \\(${w1.ipAddress.replace(/\./g, '\\.')}:`), text);
      assert.match(text, /host key .*has CHANGED/i, text);
      await wb.settle();
      await shot('host-key-changed.png');
      assert.equal(runsJson().length, runsBefore, 'no run was started');
      assert.equal(read(knownHosts), lines.join('\n'), 'the known_hosts entry is left for the user to decide on');
    } finally {
      fs.writeFileSync(knownHosts, original);
    }
    await wb.dismissNotifications();
  });

  step('"TPU: Set Secret" stores HF_TOKEN; a run gets it, and its value is nowhere else', async () => {
    const secret = `hf_${crypto.randomBytes(16).toString('hex')}`;
    const sha = crypto.createHash('sha256').update(secret).digest('hex');
    await wb.runCommand('TPU: Set Secret');
    await wb.waitQuickInputTitle(/TPU: Set Secret/);
    // Focus moving to the run view (the step before left it the active editor) must not close the pick: an
    // active webview takes focus back by itself a moment after the palette closes, which once closed this pick.
    const editor = await wb.page.locator('.part.editor .editor-group-container').first().boundingBox();
    assert.ok(editor, 'an editor group is shown');
    await wb.page.mouse.click(editor.x + editor.width / 2, editor.y + editor.height * 0.75);
    await wb.page.waitForTimeout(500);
    assert.ok(await wb.quickInputTitle(/TPU: Set Secret/, 1_000), 'the pick stays open when focus moves away');
    await wb.acceptQuickPick('HF_TOKEN');
    await wb.waitQuickInputTitle(/TPU: Set HF_TOKEN/);
    await wb.typeQuickInput(secret);
    await wb.page.keyboard.press('Enter');
    await wb.page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: 10_000 });

    await runOnTpu('secret.sh', VM);
    const output = await waitFor('"TPU Run"', () => newestChannel('TPU Run'), /^\[w3\] HF_TOKEN set: /m, 90_000);
    // While it runs: no process on this machine (the extension host, the workers' shells, the program) has it in argv.
    const ps = execFileSync('ps', ['-eww', '-o', 'args'], { encoding: 'utf8' });
    assert.ok(ps.includes('HF_TOKEN set'), 'the program is running (ps sees its argv)');
    assert.equal(ps.includes(secret), false, 'not in ps');
    assert.deepEqual(argvHolding(secret), [], 'not in any /proc/<pid>/cmdline');
    for (let w = 0; w < 4; w++) assert.match(output, new RegExp(`^\\[w${w}\\] HF_TOKEN set: yes sha256=${sha}$`, 'm'), `worker ${w} got the secret`);
    const text = await wb.waitForNotification(/Run (finished|failed): secret\.sh/, 60_000);
    assert.match(text, /Run finished/, text);

    // Nowhere in the output channels or the extension's logs, the run registry, the workspace, or anything else
    // under TPW_HOME, the workers' sandboxes included: their env files went as soon as the wrappers read them.
    const runId = runsJson()[0].runId;
    const found: string[] = [];
    const scan = (dir: string): void => {
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) scan(p);
        else if (e.isFile() && fs.readFileSync(p, 'latin1').includes(secret)) found.push(p);
      }
    };
    for (const dir of [path.join(server!.userDataDir, 'logs'), home, workspace]) scan(dir);
    assert.deepEqual(found, [], 'the secret is in no file');
    assert.ok(fs.readdirSync(path.join(home, 'runs')).some((n) => n.startsWith(runId)), 'the registry was scanned with this run in it');
    await wb.dismissNotifications();
  });
});
