/**
 * A newcomer's first hour in a real VS Code (code-server 4.100.3) with the packaged .vsix and an empty workspace
 * (issue 34), each rough edge a step that fails on the code before it: the walkthrough's pictures; "Start Local
 * Emulator" in progress until the view lists it; the sample recipe for an empty workspace, with ▷ Run and Debug
 * on TPU side by side; a typo squiggled without trainer/ in the workspace and named at one line; the tree following
 * VMs made and deleted from a terminal, its ages ticking; tasks for VMs that exist; one run view per run, titled by
 * its id, reused by Run Again, no Output channel unless asked; "stopping" said at once and one stop line in the
 * log; the run view in a narrow split with Wrap; a question before running a recipe with errors; a wizard with no
 * one-answer steps, images from a list and a Retry that keeps the answers. Run after `npm run build`:
 *
 *   node --import tsx --test test/e2e/first-hour.e2e.ts
 *
 * Screenshots (test-artifacts/e2e/): first-hour-walkthrough.png, first-hour-tree.png, first-hour-runview-narrow.png,
 * first-hour-wizard.png, first-hour-recipe.png.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe } from 'node:test';
import type { Browser, FrameLocator } from 'playwright-core';
import { emulatorHeaders } from '../helpers/emulator-http';
import { testAddressPrefix } from '../helpers/loopback';
import { findLogs, type CodeServer } from './code-server';
import { delay, type ProcessTracker } from './processes';
import { ARTIFACTS, cliRunner, openVsCode, requireBuilt, stepper, teardown, testEnv, testRoot } from './session';
import type { Workbench } from './workbench';

const VIEW = 'TPU VMs';
const VM = 'demo';
const STEPS = ['Choose where your TPU VMs live', 'Create a TPU VM', 'Run the sample recipe', 'Watch logs, metrics and profiles', 'Store your secrets'];

/**
 * A recipe whose stop takes seconds (its handler of SIGINT, then of the SIGTERM that follows, sleeps: SIGKILL ends
 * it after the grace period), with one 400-character line.
 */
const COUNT = `bash -c 'trap "echo stopping gracefully; sleep 3; exit 130" INT TERM; echo "long: $(printf "abcdefghij%.0s" $(seq 1 40)) END"; for i in $(seq 1 300); do echo "count $i"; sleep 0.3; done'\n`;
/** The misspelt override is on line 8; the command starts on line 5. */
const BROKEN = `#!/usr/bin/env bash
export PJRT_DEVICE=CPU
export OMP_NUM_THREADS=1

python3 -m tpu_trainer.train \\
    model=tiny-llama \\
    max_steps=20 \\
    optimizer.lrr=1e-2 \\
    num_threads=1
`;

interface RunJson {
  runId: string;
  status: string;
  recipe: string;
}

describe("A newcomer's first hour in VS Code (code-server, packaged .vsix)", { timeout: 25 * 60_000 }, () => {
  let root: string;
  let home: string;
  let workspace: string;
  let env: NodeJS.ProcessEnv;
  let procs: ProcessTracker;
  let browser: Browser | undefined;
  let server: CodeServer | undefined;
  let wb: Workbench;
  let cli: (...args: string[]) => string;

  before(async () => {
    requireBuilt('extension.js', 'cli.js', 'emulator.js', 'webview.js');
    ({ root, home, workspace, procs } = testRoot('first-hour'));
    // Workers on this test process's own loopback addresses: the emulator "Start Local Emulator" starts takes them
    // from its environment.
    env = testEnv(home, { TPW_EMULATOR_OPTIONS: JSON.stringify({ addressPrefix: testAddressPrefix(1) }) });
    // A build task that names no VM (read when VS Code opens the folder; the step runs it).
    fs.mkdirSync(path.join(workspace, '.vscode'));
    fs.writeFileSync(
      path.join(workspace, '.vscode', 'tasks.json'),
      JSON.stringify({ version: '2.0.0', tasks: [{ type: 'tpu', label: 'hello', recipe: 'recipes/hello.sh', group: { kind: 'build', isDefault: true } }] }, null, 2),
    );
    cli = cliRunner(procs, env);
    ({ server, browser, wb } = await openVsCode(procs, { root, workspace, env, settings: { 'workbench.colorTheme': 'Default Dark Modern', 'terminal.integrated.gpuAcceleration': 'off' } }));
  });

  after(() => teardown({ browser, procs, server, home, env, root, failed: steps.failed, logsName: 'logs-first-hour' }));

  const steps = stepper('first-hour', (file) => wb.screenshot(path.join(ARTIFACTS, file)), 4 * 60_000);
  const step = steps.step;
  const shot = (name: string): Promise<void> => wb.screenshot(path.join(ARTIFACTS, name));
  const runs = (): RunJson[] => JSON.parse(cli('runs', '--json')) as RunJson[];
  const waitFor = async <T>(what: string, probe: () => T | Promise<T>, ok: (v: T) => boolean, timeoutMs: number): Promise<T> => {
    for (const deadline = Date.now() + timeoutMs; ; await delay(250)) {
      const v = await probe();
      if (ok(v)) return v;
      if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(v)} after ${timeoutMs / 1000} s`);
    }
  };
  const stepButton = (title: string) => wb.page.locator('.getting-started-step').filter({ hasText: title }).first();
  const openWalkthrough = async (): Promise<void> => {
    await wb.runCommand('TPU: Get Started');
    await wb.page.getByText('Get started with TPU Workbench').first().waitFor({ timeout: 30_000 });
  };
  const runsRow = (text: RegExp) => wb.row('Runs', text);
  /** The tree row whose label is exactly `name` (a row's text runs its label into its description). */
  const vmRow = (name: string) => wb.pane(VIEW).locator('.monaco-list-row').filter({ has: wb.page.locator('.label-name', { hasText: new RegExp(`^${name}$`) }) });
  const tabs = () => wb.page.locator('.tabs-container .tab');
  /** The run view's page (VS Code nests a webview in two iframes). */
  const runView = (): FrameLocator => wb.page.locator('iframe.webview.ready').first().contentFrame().locator('iframe#active-frame').contentFrame();
  const runViewText = (): Promise<string> =>
    runView().locator('body').evaluate(() => (window as unknown as { tpwRunView: { logs: { store: { text: string[] } } } }).tpwRunView.logs.store.text.join('\n'));
  const editorTitleAction = (label: string) => wb.page.locator(`.part.editor .editor-actions .action-label[aria-label^="${label}"]`).first();

  step('the walkthrough shows pictures of what each step does, not text', async () => {
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
    await stepButton(STEPS[1]).click();
    // An SVG step's media is drawn in a webview of its own; the old Markdown media was a page of text.
    const media = wb.page.locator('.getting-started-media');
    await media.locator('iframe, img').first().waitFor({ timeout: 30_000 });
    assert.doesNotMatch(await media.innerText(), /From a terminal/, 'no Markdown text as the media');
    await wb.settle();
    await shot('first-hour-walkthrough.png');
  });

  step('"Start Local Emulator" shows progress until the view lists it; the walkthrough step is ticked by then', async () => {
    await wb.openViewContainer('TPU');
    const started = Date.now();
    await wb.pane(VIEW).getByRole('button', { name: 'Start Local Emulator' }).click();
    const progress = wb.page.locator('.notifications-toasts .notification-toast').filter({ hasText: 'Local TPU emulator' });
    await progress.first().waitFor({ timeout: 15_000 });
    await wb.pane(VIEW).getByText('No TPU VMs yet').waitFor({ timeout: 120_000 });
    await progress.first().waitFor({ state: 'detached', timeout: 30_000 });
    console.log(`# Start Local Emulator: ${((Date.now() - started) / 1000).toFixed(1)} s from the click to the listed view`);
    assert.ok(fs.existsSync(path.join(home, 'emulator', 'endpoint.json')), 'the emulator runs under the TPW_HOME given to VS Code');
    await openWalkthrough();
    assert.equal(await stepButton(STEPS[0]).getAttribute('aria-checked'), 'true', 'ticked when the progress ended');
    await wb.runCommand('View: Close All Editors');
  });

  step('an empty workspace gets the sample recipe, with ▷ Run on TPU and Debug on TPU side by side in its title', async () => {
    await wb.openViewContainer('TPU');
    await wb.pane('Runs').getByRole('button', { name: 'Get the Sample Recipe' }).click();
    await wb.page.locator('.tabs-container .tab.active[aria-label^="tiny-llama.sh"]').waitFor({ timeout: 30_000 });
    assert.equal(fs.readFileSync(path.join(workspace, 'recipes', 'tiny-llama.sh'), 'utf8').includes('python3 -m tpu_trainer.train'), true);
    await editorTitleAction('Run on TPU').waitFor({ timeout: 15_000 });
    await editorTitleAction('Debug on TPU').waitFor({ timeout: 15_000 });
    // The shipped schema stands in for the missing trainer/, said in the status bar.
    await wb.page.locator('.statusbar').getByText(/no trainer\/ in this workspace/).waitFor({ timeout: 30_000 });
    await wb.settle();
    await shot('first-hour-recipe.png');
  });

  step('a typo in a recipe is squiggled without trainer/ in the workspace, and Problems names its own line', async () => {
    fs.writeFileSync(path.join(workspace, 'recipes', 'broken.sh'), BROKEN);
    await wb.openFile('recipes/broken.sh');
    await wb.page.locator('.part.editor .squiggly-error').first().waitFor({ timeout: 60_000 });
    await wb.runCommand('View: Focus Problems (Errors, Warnings, Infos)');
    const problem = wb.page.locator('.part.panel .monaco-list-row').filter({ hasText: 'optimizer.lrr' }).first();
    await problem.waitFor({ timeout: 30_000 });
    assert.match(await problem.innerText(), /\[Ln 8, Col \d+\]/, 'the line the override is on');
  });

  step('the tree follows VMs made and deleted from a terminal, without Refresh, and their ages tick', async () => {
    await wb.openViewContainer('TPU');
    cli('vm', 'create', VM, '--type', 'v5litepod-4');
    cli('vm', 'create', 'gone', '--type', 'v5litepod-1');
    const demo = vmRow(VM);
    await demo.filter({ hasText: 'READY' }).first().waitFor({ timeout: 60_000 });
    await vmRow('gone').filter({ hasText: 'READY' }).first().waitFor({ timeout: 60_000 });
    const age = async (): Promise<string> => /· (\d+[smhd])(?: ·|\s*$)/m.exec(await demo.first().innerText())?.[1] ?? '';
    const first = await age();
    assert.match(first, /^\d+s$/, `a new VM shows its age in seconds: ${await demo.first().innerText()}`);
    await waitFor('the age of the row', age, (a) => a !== first, 10_000);
    const deleted = Date.now();
    cli('vm', 'delete', 'gone');
    await vmRow('gone').first().waitFor({ state: 'detached', timeout: 15_000 });
    console.log(`# a VM deleted from the CLI left the tree ${((Date.now() - deleted) / 1000).toFixed(1)} s after \`tpw vm delete\` started`);
    await wb.widenSidebar(560);
    await wb.settle();
    await shot('first-hour-tree.png');
  });

  step('a `tpu` task with no VM named runs on the VM there is (tasks never name a VM that does not exist)', async () => {
    fs.writeFileSync(path.join(workspace, 'recipes', 'hello.sh'), `bash -c 'echo "hello from worker $TPU_WORKER_ID"'\n`);
    await wb.runCommand('Tasks: Run Build Task');
    const run = await waitFor('the run registry', () => runs().find((r) => r.recipe.endsWith('hello.sh')), (r) => r?.status === 'succeeded', 120_000);
    assert.ok(run, 'the task ran');
    assert.match(cli('logs', run.runId), /hello from worker 0/);
    await wb.page.locator('.part.panel .xterm-rows').getByText(/hello from worker 0/).first().waitFor({ timeout: 30_000 });
  });

  let firstRun: string;
  step('a run gets one run view, titled by its run id, and no Output channel unless asked', async () => {
    fs.writeFileSync(path.join(workspace, 'recipes', 'count.sh'), COUNT);
    await wb.openFile('recipes/count.sh');
    await editorTitleAction('Run on TPU').click();
    const run = await waitFor('the run registry', () => runs()[0], (r) => r?.status === 'running' && r.recipe.endsWith('count.sh'), 120_000);
    firstRun = run.runId;
    await wb.page.locator(`.tabs-container .tab[aria-label^="Run ${firstRun}"]`).waitFor({ timeout: 30_000 });
    await runView().locator('.run-title').filter({ hasText: firstRun }).waitFor({ timeout: 10_000 });
    await waitFor('the run view', runViewText, (t) => /count 3/.test(t), 60_000);
    assert.equal(findLogs(server!.userDataDir, 'TPU Run.log').length, 0, 'no "TPU Run" Output channel: the run view has the lines');
  });

  step('Stop says "stopping" at once, while the workers still stop, and the log ends with one stop line', async () => {
    await wb.openViewContainer('TPU');
    const row = runsRow(/count\.sh on demo/).first();
    await wb.contextMenu(row, 'Stop Run');
    const asked = Date.now();
    // The recipe takes seconds to stop: "stopping" must show inside that window, before the run has ended.
    let shown = 0;
    await Promise.all([
      runsRow(/count\.sh on demo.*stopping/).first().waitFor({ timeout: 4_000 }).then(() => (shown = Date.now() - asked)),
      runView().locator('.run-state').filter({ hasText: /^stopping/ }).waitFor({ timeout: 4_000 }),
    ]);
    const record = JSON.parse(fs.readFileSync(path.join(home, 'runs', `${firstRun}.json`), 'utf8')) as RunJson;
    assert.equal(record.status, 'stopping', 'the registry says it too (tpw runs)');
    assert.doesNotMatch(await runViewText(), /stopped by the user/, 'shown before the run had stopped');
    console.log(`# Stop → "stopping" in the Runs view: ${shown} ms`);
    assert.ok(shown < 1000, `"stopping" took ${shown} ms`);
    await waitFor('the run registry', () => runs().find((r) => r.runId === firstRun)?.status, (s) => s === 'cancelled', 60_000);
    const log = await waitFor('the run view', runViewText, (t) => /tpw: stopped by the user/.test(t), 30_000);
    assert.match(log, /stopping gracefully/, "the program's own handling of the stop is there");
    assert.doesNotMatch(log, /Traceback|KeyboardInterrupt/);
    await runView().locator('.run-state').filter({ hasText: /^cancelled/ }).waitFor({ timeout: 10_000 });
  });

  step('Run Again reuses the run view: still one tab and one editor group, titled by the new run id', async () => {
    const groups = await wb.page.locator('.part.editor .editor-group-container').count();
    await wb.contextMenu(runsRow(/count\.sh on demo.*cancelled/).first(), 'Run Again');
    const again = await waitFor('the run registry', () => runs()[0], (r) => r?.runId !== firstRun && r?.status === 'running', 120_000);
    await wb.page.locator(`.tabs-container .tab[aria-label^="Run ${again.runId}"]`).waitFor({ timeout: 30_000 });
    assert.equal(await tabs().filter({ hasText: /^Run / }).count(), 1, 'one run view tab');
    assert.equal(await wb.page.locator('.part.editor .editor-group-container').count(), groups, 'no new editor group');
    await waitFor('the run view', runViewText, (t) => /count 2/.test(t), 60_000);
    assert.doesNotMatch(await runViewText(), /stopped by the user/, "the page shows the new run only");
  });

  step('the run view in a narrow split: nothing runs off the side, and Wrap shows the long line whole', async () => {
    // Narrow the run view's group by dragging the sash between the groups.
    const sash = wb.page.locator('.part.editor .monaco-sash.vertical').first();
    const box = await sash.boundingBox();
    assert.ok(box, 'two editor groups side by side');
    const editor = (await wb.page.locator('.part.editor').boundingBox())!;
    await wb.page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await wb.page.mouse.down();
    await wb.page.mouse.move(editor.x + editor.width - 430, box.y + box.height / 2, { steps: 8 });
    await wb.page.mouse.up();
    await delay(500);
    const view = runView();
    const overflow = await view.locator('body').evaluate(() =>
      ['header', '.toolbar'].map((sel) => {
        const e = document.querySelector(sel) as HTMLElement;
        return { sel, width: document.body.clientWidth, scroll: e.scrollWidth, client: e.clientWidth };
      }),
    );
    for (const o of overflow) {
      assert.ok(o.width < 500, `the run view is narrow (${o.width}px)`);
      assert.ok(o.scroll <= o.client + 1, `${o.sel} overflows: ${o.scroll} > ${o.client}`);
    }
    await view.locator('button', { hasText: /^Wrap$/ }).click();
    await view.locator('.logs.wrap').waitFor({ timeout: 5_000 });
    // Scroll to the top, where the long line is, and check it is drawn whole.
    await view.locator('.log-scroller').evaluate((e) => (e.scrollTop = 0));
    const long = view.locator('.log-rows .row:not([hidden])').filter({ hasText: /END$/ }).first();
    await long.waitFor({ timeout: 10_000 });
    const h = await long.evaluate((e) => ({ height: e.getBoundingClientRect().height, cut: e.scrollWidth > e.clientWidth + 1 }));
    assert.ok(h.height > 18 * 3 && !h.cut, `the 400-character line wraps whole (${JSON.stringify(h)})`);
    await wb.settle();
    await shot('first-hour-runview-narrow.png');
    await wb.contextMenu(runsRow(/count\.sh on demo.*running/).first(), 'Stop Run');
    await waitFor('the run registry', () => runs()[0]?.status, (s) => s === 'cancelled', 60_000);
  });

  step('a recipe with errors asks before it runs; "Show Problems" runs nothing', async () => {
    const before = runs().length;
    // The recipe opens in the first group, beside the run view (which had the focus).
    await wb.runCommand('View: Focus First Editor Group');
    await wb.openFile('recipes/broken.sh');
    await wb.page.locator('.part.editor .squiggly-error').first().waitFor({ timeout: 60_000 });
    await editorTitleAction('Run on TPU').click();
    const dialog = wb.page.locator('.monaco-dialog-box');
    await dialog.waitFor({ timeout: 30_000 });
    const text = await dialog.innerText();
    assert.match(text, /broken\.sh has an error\. Run it anyway\?/, text);
    assert.match(text, /broken\.sh:8: /, 'the line the override is on, as in Problems');
    assert.match(text, /Don.t Ask Again/);
    await dialog.getByRole('button', { name: 'Show Problems' }).click();
    await dialog.waitFor({ state: 'detached', timeout: 10_000 });
    await delay(1500);
    assert.equal(runs().length, before, 'no run was started');
  });

  step('the wizard asks no one-answer step, picks images from a list, and Retry after a failed create keeps every answer', async () => {
    const ep = JSON.parse(fs.readFileSync(path.join(home, 'emulator', 'endpoint.json'), 'utf8')) as { host: string; restPort: number; token: string };
    const faults = async (method: 'POST' | 'DELETE', body?: object): Promise<void> => {
      const res = await fetch(`http://${ep.host}:${ep.restPort}/emulator/v1/faults`, { method, headers: emulatorHeaders(ep, true), body: body ? JSON.stringify(body) : undefined });
      assert.equal(res.status, 200, `${method} faults: ${res.status} ${await res.text()}`);
    };
    await faults('POST', { capacity: [{ zone: 'us-central2-b', acceleratorType: 'tpu7x-8' }] });
    const quick = wb.page.locator('.quick-input-widget');
    const rows = quick.locator('.quick-input-list .monaco-list-row');
    await wb.runCommand('TPU: Create TPU VM');
    await wb.waitQuickInputTitle(/: name \(/);
    await wb.typeQuickInput('seven');
    await quick.getByText('is not allowed').waitFor({ state: 'detached', timeout: 10_000 });
    await wb.page.keyboard.press('Enter');
    await wb.waitQuickInputTitle(/: zone \(/);
    await wb.acceptQuickPick('us-central2-b');
    await wb.waitQuickInputTitle(/: accelerator type \(/);
    await wb.acceptQuickPick('tpu7x-8');
    // Only Compute Engine makes TPU7x: no control plane to choose.
    await wb.waitQuickInputTitle(/: topology \(/);
    await wb.page.keyboard.press('Enter');
    await wb.waitQuickInputTitle(/: provisioning \(/);
    await wb.acceptQuickPick('On-demand');
    await wb.waitQuickInputTitle(/: review \((\d+)\/\1\)/);
    const title = await quick.locator('.quick-input-title').innerText();
    const total = Number(/\((\d+)\/(\d+)\)/.exec(title)?.[2]);
    assert.equal(total, 6, `name, zone, type, topology, provisioning and the review: ${title}`);
    await wb.acceptQuickPick('Boot image');
    await wb.waitQuickInputTitle(/: boot image \(/);
    await rows.first().filter({ hasText: 'default for tpu7x-8' }).waitFor({ timeout: 15_000 });
    await wb.page.keyboard.press('Enter');
    await wb.waitQuickInputTitle(/: review \(/);
    await rows.first().filter({ hasText: 'Create seven' }).waitFor({ timeout: 15_000 });
    await wb.settle();
    await shot('first-hour-wizard.png');
    await wb.page.keyboard.press('Enter');
    const failed = wb.page.locator('.notifications-toasts .notification-toast').filter({ hasText: /Create TPU VM seven failed/ }).first();
    await failed.waitFor({ timeout: 120_000 });
    await faults('DELETE');
    await failed.getByRole('button', { name: 'Retry…' }).click();
    // The wizard again, at its review, with every answer kept.
    await wb.waitQuickInputTitle(/Create TPU VM seven in us-central2-b: review \(/);
    await rows.first().filter({ hasText: /Create seven.*tpu7x-8/ }).waitFor({ timeout: 15_000 });
    await wb.page.keyboard.press('Enter');
    await vmRow('seven').filter({ hasText: 'READY' }).first().waitFor({ timeout: 120_000 });
  });
});
