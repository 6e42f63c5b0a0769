/// <reference lib="dom" />
/**
 * The built run-view bundle in headless Chromium: logs render, filter and search (and stay text, never HTML),
 * a million lines stay virtual, charts draw with uPlot, and a real torch_xla profile renders its views.
 * Screenshots go to test-artifacts/webview/.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { healthFindings, parseXlaMetricsReport } from '../../extension/src/core/profiles/xla-metrics';
import { profileWasm } from '../helpers/profiles';
import { XLA_VENV, xlaTrainerCommand } from '../helpers/trainer-venv';
import { artifacts, cspViolations, openHarness, post, posted, postProfile, repo } from './harness';

const rows = (page: Page): Promise<string[]> => page.$$eval('.log-rows .row:not([hidden])', (els) => els.map((e) => e.textContent ?? ''));

describe('run view webview (built bundle, headless Chromium)', () => {
  let browser: Browser;
  let page: Page;
  before(async () => {
    assert.ok(existsSync(path.join(repo, 'dist/webview.js')), 'run `npm run build` first');
    ({ browser, page } = await openHarness());
  });
  after(async () => browser?.close());

  it('renders every worker\'s lines, with ANSI colours, status chips, filters and search', async () => {
    assert.deepEqual(await posted(page), [{ type: 'ready' }]);
    await post(page, { type: 'runState', runId: 'run-test', state: 'running', workers: 4 });
    for (let w = 0; w < 4; w++) {
      const lines = Array.from({ length: 50 }, (_, i) => `step ${i + 1} loss ${(5 - i * 0.05 - w * 0.01).toFixed(4)} lr 3.000e-04 grad_norm 2.0 step_time_s ${(0.08 + w * 0.01).toFixed(4)} tokens_per_s ${12000 + w * 100} mfu - mem 900.0MiB`);
      lines.splice(10, 0, `\x1b[32mgreen ok\x1b[0m from worker ${w}`, 'WARNING: something odd');
      if (w === 2) lines.splice(20, 0, 'Traceback (most recent call last):', 'RuntimeError: boom on w2');
      await post(page, { type: 'logLines', worker: w, lines });
    }
    await post(page, { type: 'logLines', worker: 1, lines: ['<img src=x onerror="window.pwned=1"> <b>bold?</b>'] });
    await post(page, { type: 'workerStatus', worker: 2, state: 'exited', exitCode: 1 });
    await post(page, { type: 'workerStatus', worker: 3, state: 'preempted' });
    await page.waitForTimeout(100);
    const visible = await rows(page);
    assert.ok(visible.length > 10);
    assert.match(visible.at(-1)!, /<img src=x/, 'follow mode shows the newest line, as text');
    assert.equal(await page.$$eval('.log-rows img, .log-rows b', (e) => e.length), 0, 'log lines never become HTML');
    assert.equal(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned), undefined);
    const chips = await page.$$eval('.chip', (els) => els.map((e) => e.textContent));
    assert.deepEqual(chips, ['w0 · running', 'w1 · running', 'w2 · exit 1', 'w3 · preempted']);

    // ANSI: the green span is coloured, escapes are gone.
    await page.fill('.search', 'green ok');
    await page.waitForTimeout(50);
    assert.equal(await page.textContent('.count'), '0 of 4');
    await page.press('.search', 'Enter');
    await page.waitForTimeout(50);
    assert.equal(await page.textContent('.count'), '1 of 4');
    const colour = await page.$eval('.row.cursor .text span', (e) => (e as HTMLElement).style.color);
    assert.match(colour, /ansiGreen/);
    assert.equal(await page.$$eval('.row.cursor mark', (e) => e.map((m) => m.textContent).join()), 'green ok');
    await page.press('.search', 'Shift+Enter');
    await page.waitForTimeout(50);
    assert.equal(await page.textContent('.count'), '4 of 4');
    await page.fill('.search', 'loss 4\\.[0-9]+');
    await page.waitForTimeout(50);
    assert.match((await page.textContent('.count')) ?? '', /^0 of \d+$/);
    await page.fill('.search', '([');
    assert.equal(await page.textContent('.count'), 'invalid regex');
    await page.fill('.search', '');

    // Level filter: errors only → the traceback of w2.
    await page.selectOption('.level', '2');
    await page.waitForTimeout(50);
    assert.deepEqual(await rows(page), ['w2Traceback (most recent call last):', 'w2RuntimeError: boom on w2']);
    await page.selectOption('.level', '0');

    // Worker filter: hide w0..w2 → only w3's lines.
    for (const w of [0, 1, 2]) await page.click(`.chip:nth-child(${w + 1})`);
    await page.waitForTimeout(50);
    assert.ok((await rows(page)).every((r) => r.startsWith('w3')));
    for (const w of [0, 1, 2]) await page.click(`.chip:nth-child(${w + 1})`);

    await page.click('text=First error');
    await page.waitForTimeout(50);
    assert.equal(await page.textContent('.row.cursor'), 'w2Traceback (most recent call last):');
    await page.keyboard.press('ArrowDown');
    await page.focus('.log-scroller');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Control+c');
    const copies = (await posted(page)).filter((m) => m.type === 'copy');
    assert.deepEqual(copies.at(-1), { type: 'copy', text: '[w2] RuntimeError: boom on w2' });
    await page.screenshot({ path: path.join(artifacts, 'logs.png') });
  });

  it('says "preempted" in the header of a preempted run, in the warning colour of its worker chips', async () => {
    const header = () => page.$eval('.run-state', (e) => ({ text: e.textContent, colour: getComputedStyle(e).color }));
    await post(page, { type: 'runState', runId: 'run-test', state: 'failed', summary: 'w2: exit code 1' });
    const failed = await header();
    await post(page, { type: 'runState', runId: 'run-test', state: 'preempted', summary: 'the VM went PREEMPTED' });
    const preempted = await header();
    assert.equal(preempted.text, 'preempted — the VM went PREEMPTED');
    const chip = await page.$eval('.chip[data-state="preempted"]', (e) => getComputedStyle(e).borderTopColor);
    assert.equal(preempted.colour, chip, 'the header and the preempted chip share the warning colour');
    assert.notEqual(preempted.colour, failed.colour, 'preempted does not read as failed');
    await post(page, { type: 'runState', runId: 'run-test', state: 'running', workers: 4 });
  });

  it('keeps a million lines virtual: few DOM rows wherever it is scrolled', async () => {
    const t = await page.evaluate(() => {
      const view = (window as unknown as { tpwRunView: { logs: { append(w: number, l: string[]): void; render(): void; store: { length: number } } } }).tpwRunView.logs;
      const t0 = performance.now();
      for (let w = 0; w < 50; w++) {
        const lines = new Array<string>(20000);
        for (let i = 0; i < 20000; i++) lines[i] = `I1122 04:00:00.000 ${i} worker ${w} line ${i} some typical log text with numbers ${i * 7}`;
        view.append(w + 10, lines);
      }
      const ingest = performance.now() - t0;
      const scroller = document.querySelector('.log-scroller') as HTMLElement;
      const frames: number[] = [];
      let dom = 0;
      for (let k = 0; k < 60; k++) {
        scroller.scrollTop = (scroller.scrollHeight * k) / 60;
        const f0 = performance.now();
        view.render();
        frames.push(performance.now() - f0);
        dom = Math.max(dom, document.querySelectorAll('.log-rows .row').length);
      }
      frames.sort((a, b) => a - b);
      return { ingest, p95: frames[Math.floor(frames.length * 0.95)], lines: view.store.length, dom };
    });
    assert.ok(t.lines >= 1_000_000);
    assert.ok(t.dom < 100, `only on-screen rows exist, at every scroll position (${t.dom})`);
    // How fast is for test/bench/runview.bench.ts to say; printed here for the record only.
    console.log(`# 1M lines: ingest ${t.ingest.toFixed(0)} ms, scroll render p95 ${t.p95.toFixed(2)} ms`);
    await page.screenshot({ path: path.join(artifacts, 'logs-1m.png') });
  });

  it('draws metrics charts with one series per worker', async () => {
    await page.click('#tab-metrics');
    await post(page, { type: 'metrics', records: [{ step: 51, worker: 0, loss: 2.5, mfu: 0.41, lr: 1e-4, step_time_s: 0.07, tokens_per_s: 13000, mem_bytes: 9e8 }] });
    // The tab click already draws the step-line records (which carry no MFU); the posted record's MFU chart
    // comes a frame later, so wait for that chart itself.
    await page.waitForSelector('.chart[data-metric="mfu"] canvas');
    const charts = await page.$$eval('.chart', (els) => els.map((e) => ({ metric: (e as HTMLElement).dataset.metric, series: e.querySelectorAll('.u-legend .u-series').length })));
    assert.deepEqual(charts.map((c) => c.metric), ['loss', 'lr', 'step_time_s', 'tokens_per_s', 'mfu', 'mem_bytes']);
    assert.equal(charts[0].series, 1 + 4, 'step + one series per worker that logged steps');
    const painted = await page.$eval('.chart[data-metric="loss"] canvas', (c) => {
      const g = (c as HTMLCanvasElement).getContext('2d')!;
      const d = g.getImageData(0, 0, (c as HTMLCanvasElement).width, (c as HTMLCanvasElement).height).data;
      let n = 0;
      for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
      return n;
    });
    assert.ok(painted > 500, `the loss chart has ink (${painted} px)`);
    await page.screenshot({ path: path.join(artifacts, 'metrics.png') });
    assert.deepEqual(await cspViolations(page), [], 'logs and charts run under the panel\'s CSP');
  });

  it('charts only the metrics some worker logs, in the usual order as they appear', async () => {
    const fresh = await openHarness();
    try {
      const p = fresh.page;
      await p.click('#tab-metrics');
      await post(p, { type: 'metrics', records: [1, 2, 3].map((step) => ({ step, worker: 0, loss: 5 - step })) });
      await p.waitForSelector('.chart canvas');
      const metrics = () => p.$$eval('.chart', (els) => els.map((e) => (e as HTMLElement).dataset.metric));
      assert.deepEqual(await metrics(), ['loss'], 'no empty charts for what nobody logs');
      await post(p, { type: 'metrics', records: [{ step: 4, worker: 1, loss: 1, mem_bytes: 1e9, lr: 1e-3 }] });
      await p.waitForFunction(() => document.querySelectorAll('.chart').length >= 3);
      await p.waitForTimeout(100);
      assert.deepEqual(await metrics(), ['loss', 'lr', 'mem_bytes'], 'a new worker rebuilds the charts without leaving the old ones');
      assert.equal(await p.$$eval('.chart[data-metric="loss"] .u-legend .u-series', (e) => e.length), 1 + 2, 'step + w0 + w1');
    } finally {
      await fresh.browser.close();
    }
  });
});


describe('run view in a narrow split (beside a recipe)', () => {
  let browser: Browser;
  let page: Page;
  before(async () => {
    ({ browser, page } = await openHarness());
    await page.setViewportSize({ width: 420, height: 640 });
  });
  after(async () => browser?.close());

  const LONG = `step 7 ${'a-long-hydra-override-echo=0123456789 '.repeat(12)}END`;

  it('lays the header and the log tools out on the width there is: nothing runs off the side', async () => {
    await post(page, { type: 'runState', runId: '20261128-201500-a1b2', state: 'running', workers: 4, summary: 'syncing the workspace to every worker of a v5litepod-16' });
    for (let w = 0; w < 4; w++) await post(page, { type: 'logLines', worker: w, lines: ['short line', LONG, `after the long line on w${w}`] });
    await page.waitForTimeout(100);
    const overflow = await page.evaluate(() =>
      ['header', '.toolbar', 'body'].map((sel) => {
        const e = document.querySelector(sel) as HTMLElement;
        return { sel, scroll: e.scrollWidth, client: e.clientWidth };
      }),
    );
    for (const o of overflow) assert.ok(o.scroll <= o.client + 1, `${o.sel} overflows: ${o.scroll} > ${o.client}`);
    const tabs = await page.$eval('.tabs', (e) => e.getBoundingClientRect().width);
    assert.ok(tabs > 380, `the tabs take their own line (${tabs}px)`);
  });

  it('cuts long lines at the edge until Wrap is on, then shows every character, rows as tall as they need', async () => {
    const longRow = () =>
      page.$$eval('.log-rows .row:not([hidden])', (els, end) => {
        const row = els.find((e) => (e.textContent ?? '').endsWith(end as string)) as HTMLElement | undefined;
        const next = row?.nextElementSibling as HTMLElement | null;
        return row ? { height: row.getBoundingClientRect().height, cut: row.scrollWidth > row.clientWidth + 1, bottom: row.getBoundingClientRect().bottom, nextTop: next?.getBoundingClientRect().top } : undefined;
      }, 'END');
    const before = await longRow();
    assert.ok(before, 'the long line is on screen');
    assert.equal(before.height, 18, 'one line high');
    assert.equal(before.cut, true, 'cut at the edge');
    await page.click('button:text-is("Wrap")');
    await page.waitForTimeout(100);
    assert.equal(await page.getAttribute('button:text-is("Wrap")', 'aria-pressed'), 'true');
    const after = await longRow();
    assert.ok(after, 'the long line is still on screen');
    assert.ok(after.height >= 18 * 4, `wrapped over several lines (${after.height}px)`);
    assert.equal(after.cut, false, 'nothing cut');
    assert.ok(after.nextTop !== undefined && after.nextTop >= after.bottom - 0.5, 'the next row starts below it');
    const all = (await rows(page)).join('\n');
    assert.match(all, /after the long line on w3$/m, 'following the newest line still shows it');
    await page.screenshot({ path: path.join(artifacts, 'runview-narrow-wrap.png') });
    await page.click('button:text-is("Wrap")');
    await page.waitForTimeout(100);
    assert.equal((await longRow())?.height, 18, 'Wrap off: one line again');
  });
});

describe('profile views from a real torch_xla capture', () => {
  before(() => assert.ok(existsSync(XLA_VENV), `the torch_xla venv is missing at ${XLA_VENV}: run bash scripts/setup.sh --test`));
  let browser: Browser;
  let page: Page;
  const out = mkdtempSync(path.join(tmpdir(), 'tpw-webview-profile-'));
  before(async () => {
    const run = xlaTrainerCommand(['model=tiny-llama', 'max_steps=7', `output_dir=${out}`, 'profile_step=5', 'profile_steps=2']);
    await promisify(execFile)(run.file, run.args, { cwd: out, env: run.env, timeout: 240_000 });
    ({ browser, page } = await openHarness());
  });
  after(async () => browser?.close());

  it('renders steps, op profile, timeline and health', async () => {
    const dir = path.join(out, 'profile/plugins/profile');
    const run = readdirSync(dir)[0];
    const file = path.join(dir, run, readdirSync(path.join(dir, run)).find((f) => f.endsWith('.xplane.pb'))!);
    const summary = profileWasm().analyze(file);
    await page.click('#tab-profiles');
    await post(page, { type: 'profiles', captures: [{ id: 'c1', label: `w0 · ${run}`, worker: 0, location: file }] });
    assert.equal(await page.getAttribute('.captures button', 'data-ready'), 'false');
    // The host analyzed it in the background: the list says so, and the click still asks the host for it.
    await post(page, { type: 'profiles', captures: [{ id: 'c1', label: `w0 · ${run}`, worker: 0, location: file, ready: true }] });
    assert.equal(await page.getAttribute('.captures button', 'data-ready'), 'true');
    assert.match((await page.textContent('.captures button')) ?? '', / ✓$/);
    await page.click('.captures button');
    assert.deepEqual((await posted(page)).at(-1), { type: 'openProfile', id: 'c1' });
    await postProfile(page, 'c1', summary, true);
    assert.equal(await page.getAttribute('.profile-body', 'data-prefetched'), 'true');
    await post(page, { type: 'health', worker: 0, findings: healthFindings(parseXlaMetricsReport(readFileSync(path.join(out, 'xla_metrics.txt'), 'utf8'))) });
    await page.waitForSelector('.steps table');
    assert.equal(await page.$$eval('.steps tbody tr', (r) => r.length), 2, 'two profiled steps');
    const cats = await page.$$eval('.ops details summary', (s) => s.map((e) => e.textContent ?? ''));
    // Categories from the program's HLO, by XLA's rules (a dot is 'dot').
    assert.ok(cats.some((c) => c.startsWith('dot')), cats.join('\n'));
    assert.ok(await page.$$eval('.ops td', (t) => t.some((e) => /^dot(\.\d+)?$/.test(e.textContent ?? ''))));
    assert.match((await page.textContent('.health')) ?? '', /No recompilation/);
    const drawn = await page.evaluate(() => new Promise<number>((r) => requestAnimationFrame(() => r((window as unknown as { tpwRunView: { profiles: { timeline: { drawn: number } } } }).tpwRunView.profiles.timeline.drawn))));
    assert.ok(drawn > 100, `timeline drew ${drawn} events`);
    await page.screenshot({ path: path.join(artifacts, 'profile.png'), fullPage: true });
    assert.deepEqual(await cspViolations(page), [], 'profile views run under the panel\'s CSP');
    await page.click('text=Export Chrome trace JSON…');
    assert.deepEqual((await posted(page)).at(-1), { type: 'exportTrace', id: 'c1' });
  });

  it('the timeline works from the keyboard, and outlines events in high contrast', async () => {
    await page.focus('.timeline canvas');
    await page.keyboard.press('ArrowDown');
    const first = await page.textContent('.timeline .readout');
    assert.match(first ?? '', /^.+ — .+ at .+ · .+ \(event \d+ of \d+\)$/, `read out: ${first}`);
    assert.equal(await page.getAttribute('.timeline .readout', 'role'), 'status');
    await page.keyboard.press(']');
    const second = await page.textContent('.timeline .readout');
    const nth = (t: string | null) => Number(/event (\d+) of/.exec(t ?? '')?.[1]);
    assert.equal(nth(second), Math.min(nth(first) + 1, Number(/of (\d+)\)/.exec(first ?? '')?.[1])), `${first} → ${second}`);
    await page.keyboard.press('Enter'); // zooms to it: the event fills most of the view
    await page.keyboard.press('ArrowDown');
    assert.notEqual(await page.textContent('.timeline .readout'), second, 'another line');

    // High contrast: VS Code marks the body and sets its colours; the events get the contrast border.
    const countBorderPixels = async () => {
      await page.focus('.timeline canvas');
      await page.keyboard.press('0'); // the whole capture again (and a redraw)
      return page.evaluate(() => new Promise<number>((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => {
        const c = document.querySelector('.timeline canvas') as HTMLCanvasElement;
        const d = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4) if (d[i] === 243 && d[i + 1] === 133 && d[i + 2] === 24) n++;
        resolve(n);
      }))));
    };
    assert.equal(await countBorderPixels(), 0, 'no orange before the theme changes');
    await page.evaluate(() => {
      document.body.classList.add('vscode-high-contrast');
      document.body.style.setProperty('--vscode-contrastBorder', '#f38518');
      document.body.style.setProperty('--vscode-editor-background', '#000000');
    });
    const orange = await countBorderPixels();
    assert.ok(orange > 100, `events outlined in the contrast border: ${orange} pixels`);
    await page.screenshot({ path: path.join(artifacts, 'profile-high-contrast.png'), fullPage: true });
    await page.evaluate(() => document.body.classList.remove('vscode-high-contrast'));
  });

  it('real TPU and TensorFlow captures: the overview, the roofline column, and what an op-less capture holds', async () => {
    const real = path.join(repo, 'test/fixtures/profiles/real');
    const tpu = profileWasm().analyze(path.join(real, 'tpu-v6e-4-inference.xplane.pb'));
    await postProfile(page, 'c1', tpu);
    await page.waitForSelector('.overview p');
    assert.match((await page.textContent('.overview p')) ?? '', /^4 × TPU v6 Lite on 1 host: devices ran ops .+ \(13\.4% idle\)\. Peak 918 TFLOP\/s, 1638 GB\/s HBM per chip\.$/);
    assert.match((await page.textContent('.steps p')) ?? '', /No steps: .* 17 ops ran; see the op profile\./);
    const heads = await page.$$eval('.ops details[open] th', (t) => t.map((e) => e.textContent));
    assert.deepEqual(heads.slice(-2), ['FLOP/byte', 'bound by']);
    const tf = profileWasm().analyze(path.join(real, 'tf-8gpu-multi-worker.xplane.pb'));
    await postProfile(page, 'c1', tf);
    await page.waitForSelector('.ops p.muted');
    assert.match((await page.textContent('.ops p.muted')) ?? '', /^No XLA ops ran on a device in this capture\. It holds [\d,. k]+ events: \/host:CPU \(/);
    assert.equal(await page.$$eval('.steps tbody tr', (r) => r.length), 1, "one step, from the devices' Steps lines");
    await page.screenshot({ path: path.join(artifacts, 'profile-real-tf.png'), fullPage: true });
    // H200, CUDA command buffers on: 8 annotated steps, of which xprof keeps 6 (it drops the first and the last), and
    // instead of an op table, what the kernels named and the flag.
    const graphs = profileWasm().analyze(path.join(real, 'h200-jax-transformer.xplane.pb'));
    await postProfile(page, 'c1', graphs);
    await page.waitForSelector('.ops p.muted');
    assert.match((await page.textContent('.overview p')) ?? '', /^1 × Nvidia GPU \(Hopper\) on 1 host:/);
    assert.equal(await page.textContent('.steps h2'), 'Step time (step annotations: the device work under each, as xprof groups it)');
    assert.equal(await page.$$eval('.steps tbody tr', (r) => r.length), 6);
    assert.match((await page.textContent('.ops p.muted')) ?? '', /^1720 kernels .*\(command_buffer_1 ×1720\).*XLA_FLAGS=--xla_gpu_enable_command_buffer= /);
    await page.screenshot({ path: path.join(artifacts, 'profile-real-h200-command-buffers.png'), fullPage: true });
  });

  it('compares hosts side by side: step time per host, the slowest named, ops combined', async () => {
    const dir = path.join(out, 'profile/plugins/profile');
    const run = readdirSync(dir)[0];
    const trainer = path.join(dir, run, readdirSync(path.join(dir, run)).find((f) => f.endsWith('.xplane.pb'))!);
    const tfFile = path.join(repo, 'test/fixtures/profiles/real/tf-8gpu-multi-worker.xplane.pb');
    await post(page, { type: 'profiles', captures: [{ id: 'h0', label: 'w0', worker: 0, location: trainer }, { id: 'h1', label: 'w1', worker: 1, location: tfFile }] });
    await page.click('text=Compare hosts (2)');
    assert.deepEqual((await posted(page)).at(-1), { type: 'compareProfiles', ids: ['h0', 'h1'] });
    const hosts = [trainer, tfFile].map((file) => ({ file, summary: profileWasm().analyze(file) }));
    const m = profileWasm().hosts([trainer, tfFile]);
    const avg = (k: number) => hosts[k].summary.steps.reduce((a, st) => a + st.totalUs, 0) / hosts[k].summary.steps.length;
    const slowest = avg(0) > avg(1) ? m.hosts[0].host : m.hosts[1].host;
    assert.equal(m.slowest, slowest);
    await post(page, { type: 'profileHosts', ...m, errors: [] });
    await page.waitForSelector('.hosts table');
    const rows = await page.$$eval('.hosts table:first-of-type tbody tr', (r) => r.map((e) => Array.from(e.querySelectorAll('td'), (td) => td.textContent)));
    assert.deepEqual(rows.map((r) => r[0]), m.hosts.map((h) => (h.host === slowest ? `${h.host} (slowest)` : h.host)));
    assert.deepEqual(rows.map((r) => r[1]), [String(hosts[0].summary.steps.length), '1']);
    assert.match((await page.textContent('.hosts p')) ?? '', new RegExp(`^Slowest host: ${slowest.replace(/[.:]/g, '\\$&')} `));
    assert.ok((await page.$$eval('.hosts table:nth-of-type(2) tbody tr', (r) => r.length)) > 0, 'the ops of the hosts, combined');
    await page.screenshot({ path: path.join(artifacts, 'profile-hosts.png'), fullPage: true });
  });

  it('shows a clear error for a broken capture', async () => {
    await post(page, { type: 'profileError', id: 'c1', message: 'the profile is truncated or corrupt' });
    await page.waitForSelector('.profiles .status.error');
    assert.match((await page.textContent('.profiles .status')) ?? '', /Could not open the profile: the profile is truncated/);
  });

  it('labels the workers of a run with slices sNwM, in chips and in the gutter (a GKE or multislice run)', async () => {
    const h = await openHarness();
    try {
      await post(h.page, { type: 'runState', runId: 'gke-run', state: 'running', workers: 8, workersPerSlice: 4 });
      await post(h.page, { type: 'logLines', worker: 5, lines: ['hello from slice 1, host 1'] });
      await h.page.waitForTimeout(100);
      const chips = await h.page.$$eval('.chip', (els) => els.map((e) => e.textContent));
      assert.deepEqual(chips, ['s0w0 · running', 's0w1 · running', 's0w2 · running', 's0w3 · running', 's1w0 · running', 's1w1 · running', 's1w2 · running', 's1w3 · running']);
      assert.deepEqual(await h.page.$$eval('.log-rows .row:not([hidden]) .gutter', (els) => els.map((e) => e.textContent)), ['s1w1']);
    } finally {
      await h.browser.close();
    }
  });
});
