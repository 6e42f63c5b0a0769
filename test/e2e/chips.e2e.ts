/**
 * The run view's Chips tab in a real VS Code (code-server 4.100.3) through headless Chromium: the demo run
 * (recipes/tiny-llama.sh on a 4-worker v5litepod-16 of the emulator) shows every worker's 4 chips moving while it
 * trains, read from each worker's libtpu metrics service through the extension's SSH connections, and idle once it
 * ended; `tpw top RUN --once` prints the same chips in a terminal. Run after `npm run build`:
 *
 *   node --import tsx --test test/e2e/chips.e2e.ts
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe } from 'node:test';
import type { Browser, FrameLocator } from 'playwright-core';
import { REPO, type CodeServer } from './code-server';
import { delay, type ProcessTracker } from './processes';
import { ARTIFACTS, cliRunner, openVsCode, requireBuilt, startEmulator, stepper, teardown, testEnv, testRoot, VENV } from './session';
import { testAddressPrefix } from '../helpers/loopback';
import type { Workbench } from './workbench';

const VM = 'chips-pod';
const ADDRESS_PREFIX = testAddressPrefix(64);
/** Long enough for a cold torch import on four workers sharing two cores. */
const RUN_TIMEOUT_MS = Number(process.env.TPW_E2E_RUN_TIMEOUT_MS ?? 8 * 60_000);

describe('Chips tab in VS Code (code-server): the demo run\'s chips, live', { timeout: 20 * 60_000 }, () => {
  let root: string;
  let home: string;
  let env: NodeJS.ProcessEnv;
  let procs: ProcessTracker;
  let browser: Browser | undefined;
  let server: CodeServer | undefined;
  let wb: Workbench;
  let cli: (...args: string[]) => string;

  before(async () => {
    requireBuilt('extension.js', 'cli.js', 'webview.js', 'emulator.js');
    let workspace: string;
    ({ root, home, workspace, procs } = testRoot('chips'));
    for (const dir of ['recipes', 'trainer']) {
      fs.cpSync(path.join(REPO, dir), path.join(workspace, dir), { recursive: true, filter: (src) => !/(__pycache__|\.pytest_cache|\.egg-info|outputs)$/.test(src) });
    }
    env = testEnv(home, { TPW_VENV: VENV, TPW_EMULATOR_OPTIONS: JSON.stringify({ addressPrefix: ADDRESS_PREFIX }) });
    cli = cliRunner(procs, env);
    await startEmulator(procs, env);
    cli('vm', 'create', VM, '--type', 'v5litepod-16');
    ({ server, browser, wb } = await openVsCode(procs, { root, workspace, env }));
  });

  after(() => teardown({ browser, procs, server, home, env, root, failed: steps.failed, logsName: 'logs-chips' }));

  const steps = stepper('chips', (file) => wb.screenshot(path.join(ARTIFACTS, file)), 3 * 60_000);
  const step = steps.step;

  /** The run view's document: VS Code nests the webview in two iframes. */
  const view = (): FrameLocator => wb.page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame');
  /** Every chip's duty cycle on screen, by worker. */
  const duties = async (): Promise<Map<number, number[]>> => {
    const out = new Map<number, number[]>();
    for (const fig of await view().locator('.tpu-chips-worker[data-state="ok"]').all()) {
      const w = Number(await fig.getAttribute('data-worker'));
      out.set(w, (await fig.locator('td.duty .value').allTextContents()).map((t) => parseFloat(t)));
    }
    return out;
  };
  const waitDuties = async (what: string, ok: (d: Map<number, number[]>) => boolean, timeoutMs: number): Promise<Map<number, number[]>> => {
    let last = new Map<number, number[]>();
    for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await delay(500)) {
      last = await duties().catch(() => last);
      if (ok(last)) return last;
    }
    throw new Error(`${what}: the Chips tab shows ${JSON.stringify([...last])}`);
  };
  const all4 = (d: Map<number, number[]>, each: (chips: number[]) => boolean): boolean => [0, 1, 2, 3].every((w) => d.get(w)?.length === 4 && each(d.get(w)!));

  step('"Run on TPU" on the demo recipe: every worker\'s 4 chips move in the Chips tab while it trains', async () => {
    await wb.openFile('recipes/tiny-llama.sh');
    await wb.runCommand('TPU: Run on TPU');
    await view().locator('#tab-chips').click({ timeout: 120_000 });
    // Every worker has had a busy moment (compiling or stepping): each one's chips were read above zero.
    const busy = new Set<number>();
    await waitDuties('every worker busy at some point', (d) => {
      for (const [w, chips] of d) if (chips.length === 4 && chips.every((c) => c > 0)) busy.add(w);
      return busy.size === 4;
    }, RUN_TIMEOUT_MS);
    assert.match((await view().locator('.tpu-chips-summary').textContent()) ?? '', /Idlest chip: w\d chip \d .* Fullest HBM: w\d chip \d/);
    // The sparkline grows with each reading: on a busy machine the first busy reading may still be its only one.
    const sparkline = view().locator('.tpu-chips-worker[data-worker="0"] td.duty polyline').first();
    for (const deadline = Date.now() + RUN_TIMEOUT_MS; !((await sparkline.getAttribute('points')) ?? '').includes(' '); await delay(500)) {
      assert.ok(Date.now() < deadline, 'a sparkline with more than one reading');
    }
    await wb.screenshot(path.join(ARTIFACTS, 'chips-training.png'));

    // The same chips in a terminal, through the CLI's own SSH connections.
    const runId = (JSON.parse(cli('runs', '--json')) as { runId: string }[])[0].runId;
    const table = cli('top', runId, '--once').split('\n');
    for (let w = 0; w < 4; w++) for (let c = 0; c < 4; c++) assert.ok(table.some((l) => new RegExp(`^w${w}\\s+${c}\\s+\\d+\\.\\d\\d%\\s+\\d+\\.\\d\\d GiB / 16\\.00 GiB`).test(l)), table.join('\n'));
  }, { timeout: RUN_TIMEOUT_MS + 60_000 });

  step('when the run ends, every chip goes idle', async () => {
    const text = await wb.waitForNotification(/Run (finished|failed|cancelled)/, RUN_TIMEOUT_MS);
    assert.match(text, /Run finished/, text);
    await waitDuties('every chip idle', (d) => all4(d, (chips) => chips.every((c) => c === 0)), 60_000);
    assert.match((await view().locator('.tpu-chips-summary').textContent()) ?? '', /Idlest chip: w0 chip 0 \(0\.0%\)/);
    await wb.settle();
    await wb.screenshot(path.join(ARTIFACTS, 'chips-idle.png'));
  }, { timeout: RUN_TIMEOUT_MS + 90_000 });
});
