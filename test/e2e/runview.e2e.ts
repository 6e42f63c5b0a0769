/**
 * The run view inside real VS Code (code-server): "TPU: Open Run View", then a real torch_xla profile opened
 * from the Profiles tab through VS Code's own file dialog, parsed in the background by the extension host's
 * worker thread (dist/profile-worker.js, running dist/profile.wasm) as soon as it is listed, and rendered in the
 * webview when clicked.
 * Run after `npm run build`:
 *
 *   node --import tsx --test test/e2e/runview.e2e.ts
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, FrameLocator } from 'playwright-core';
import { profileWasm } from '../helpers/profiles';
import type { ProcessTracker } from './processes';
import { ARTIFACTS, openVsCode, requireBuilt, teardown, testEnv, testRoot } from './session';
import { XLA_VENV, xlaTrainerCommand } from '../helpers/trainer-venv';
import type { Workbench } from './workbench';

describe('run view in VS Code (code-server)', { timeout: 10 * 60_000 }, () => {
  before(() => assert.ok(fs.existsSync(XLA_VENV), `the torch_xla venv is missing at ${XLA_VENV}: run bash scripts/setup.sh --test`));
  let root: string;
  let home: string;
  let procs: ProcessTracker;
  let browser: Browser | undefined;
  let wb: Workbench;
  let xplane: string;

  before(async () => {
    requireBuilt('extension.js', 'profile-worker.js', 'profile.wasm');
    let workspace: string;
    ({ root, home, workspace, procs } = testRoot('runview'));
    fs.mkdirSync(path.join(workspace, 'recipes'));
    fs.writeFileSync(path.join(workspace, 'recipes', 'noop.sh'), 'echo hi\n');
    const out = path.join(workspace, 'run1');
    const capture = xlaTrainerCommand(['model=tiny-llama', 'max_steps=7', `output_dir=${out}`, 'profile_step=5', 'profile_steps=2']);
    execFileSync(capture.file, capture.args, { cwd: workspace, env: capture.env, stdio: 'ignore', timeout: 240_000 });
    const dir = path.join(out, 'profile/plugins/profile');
    const run = fs.readdirSync(dir)[0];
    xplane = path.join(dir, run, fs.readdirSync(path.join(dir, run)).find((f) => f.endsWith('.xplane.pb'))!);
    ({ browser, wb } = await openVsCode(procs, { root, workspace, env: testEnv(home) }));
  });

  after(() => teardown({ browser, procs, home, root, failed: false, logsName: 'logs-runview' }));

  /** The run view's document: VS Code nests the webview in two iframes. */
  const view = (): FrameLocator => wb.page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame');

  test('opens, parses a real profile on the extension host, and renders it', async (t) => {
    t.after(async () => {
      await wb.screenshot(path.join(ARTIFACTS, 'runview-last.png')).catch(() => undefined);
    });
    // The TPU container shows once the extension's contributions are loaded (then its commands are in the palette).
    await wb.openViewContainer('TPU');
    try {
      await wb.runCommand('TPU: Open Run View');
    } catch {
      await wb.page.keyboard.press('Escape');
      await wb.runCommand('TPU: Open Run View');
    }
    await view().locator('#tab-profiles').click({ timeout: 60_000 });
    await view().getByText('Open profile file…').click();
    // VS Code's own (simple) file dialog resolves what is typed as it goes, and under load can still be
    // validating an older value when Enter comes: type, let it settle, accept; again while it stays open.
    const input = wb.page.locator('.quick-input-widget input.input');
    await input.waitFor({ state: 'visible', timeout: 15_000 });
    for (let attempt = 0; attempt < 4 && (await input.isVisible()); attempt++) {
      await input.fill('');
      await wb.page.keyboard.type(xplane, { delay: 5 });
      await wb.page.waitForTimeout(2000);
      await wb.page.keyboard.press('Enter');
      await wb.page.waitForTimeout(1500);
    }
    // Listed, the capture is analyzed in the background (core/profiles/prefetch.ts) and marked ready; opening it
    // then shows that analysis: the host says the click started no parse.
    await view().locator('.captures button[data-ready="true"]').first().click({ timeout: 60_000 });
    await view().locator('.steps tbody tr').first().waitFor({ timeout: 60_000 });
    assert.equal(await view().locator('.profile-body').getAttribute('data-prefetched'), 'true', 'opened from the prefetched analysis');
    assert.equal(await view().locator('.steps tbody tr').count(), 2, 'two profiled steps');
    // Categories come from the program's HLO in the capture (as xprof takes them): the model's matmuls are `dot`.
    const categories = await view().locator('.ops details summary').allTextContents();
    assert.ok(categories.some((t) => t.startsWith('dot')), `a dot category among: ${categories.join(' | ')}`);
    // The timeline's columns are views into a few shared buffers (slabs): each line must still arrive as its own
    // events through VS Code's postMessage. Pick a line from the keyboard: its event count is a line's of the capture.
    const lineLengths = new Set(profileWasm().analyze(xplane).timeline.lines.map((l) => l.start.length));
    await view().locator('.timeline canvas').focus();
    await wb.page.keyboard.press('ArrowDown');
    const readout = (await view().locator('.timeline .readout').textContent()) ?? '';
    const m = /^(.+?) — .* \(event \d+ of (\d+)\)$/.exec(readout);
    assert.ok(m && m[1] !== 'undefined' && lineLengths.has(Number(m[2])), `readout "${readout}": a named event of a line of ${[...lineLengths].join('/')} events`);
    await wb.settle();
    await wb.screenshot(path.join(ARTIFACTS, 'runview-profile.png'));
  });
});
