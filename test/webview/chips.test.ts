/// <reference lib="dom" />
/**
 * The run view's Chips tab in headless Chromium, fed a recorded stream (test/fixtures/chips/stream.json: what the
 * product's poller read from a 4-worker emulated slice while three workers computed and one idled, with worker 2's
 * libtpu going down halfway). A small multiple per worker with a row per chip and live sparklines, the idlest chip
 * and the fullest HBM named, the worker that stopped answering shown as such; the duty cycle and HBM series join
 * the Metrics tab; chip Health notes sit beside the torch_xla ones. Screenshots go to test-artifacts/webview/.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { ChipsMessage } from '../../protocol/run-view-messages';
import { artifacts, cspViolations, openHarness, post, repo } from './harness';

const stream = JSON.parse(readFileSync(path.join(repo, 'test/fixtures/chips/stream.json'), 'utf8')) as ChipsMessage[];
/** The index of the first message in which worker 2 no longer answers. */
const downAt = stream.findIndex((m) => m.workers.some((w) => w.worker === 2 && w.state !== 'ok'));

const text = (page: Page, sel: string): Promise<string> => page.$eval(sel, (e) => e.textContent ?? '');

describe('the Chips tab (built bundle, headless Chromium, a recorded stream)', () => {
  let browser: Browser;
  let page: Page;
  before(async () => {
    assert.ok(existsSync(path.join(repo, 'dist/webview.js')), 'run `npm run build` first');
    assert.ok(downAt > 2, 'the recording has readings of every worker before worker 2 goes down');
    ({ browser, page } = await openHarness());
    await post(page, { type: 'runState', runId: 'run-chips', state: 'running', workers: 4 });
    await page.click('#tab-chips');
  });
  after(async () => browser?.close());

  it('starts empty, then shows a small multiple per worker with a row and two sparklines per chip', async () => {
    assert.match(await text(page, '#panel-chips .empty'), /No chips yet/);
    for (const m of stream.slice(0, downAt)) await post(page, m);
    assert.equal(await page.$eval('#panel-chips .empty', (e) => (e as HTMLElement).hidden), true);
    assert.deepEqual(await page.$$eval('.tpu-chips-worker', (els) => els.map((e) => (e as HTMLElement).dataset.worker)), ['0', '1', '2', '3']);
    for (let w = 0; w < 4; w++) {
      const chips = await page.$$eval(`.tpu-chips-worker[data-worker="${w}"] tbody tr`, (els) => els.map((e) => (e as HTMLElement).dataset.chip));
      assert.deepEqual(chips, ['0', '1', '2', '3'], `w${w}: a row per chip`);
      const reads = stream.slice(0, downAt).filter((m) => m.workers.some((x) => x.worker === w && x.state === 'ok')).length;
      const points = await page.$eval(`.tpu-chips-worker[data-worker="${w}"] tr[data-chip="0"] td.duty polyline`, (e) => (e.getAttribute('points') ?? '').split(' ').length);
      assert.equal(points, reads, `w${w}: the duty sparkline has one point per reading`);
    }
    // The latest reading's values, as tpu-info prints them.
    const last = stream.slice(0, downAt).flatMap((m) => m.workers).filter((w) => w.worker === 0 && w.state === 'ok').at(-1)!;
    assert.equal(await text(page, '.tpu-chips-worker[data-worker="0"] tr[data-chip="1"] td.duty .value'), `${last.chips[1].dutyCyclePct.toFixed(1)}%`);
    assert.equal(await text(page, '.tpu-chips-worker[data-worker="0"] tr[data-chip="1"] td.hbm .value'), `${(last.chips[1].hbmUsedBytes / 2 ** 30).toFixed(2)} GiB / 16.00 GiB`);
  });

  it('names the idlest chip (the idling worker\'s) and the fullest HBM (a computing worker\'s), and marks their rows', async () => {
    const summary = await text(page, '.tpu-chips-summary');
    assert.match(summary, /Idlest chip: w3 chip 0 \(0\.0%\)/);
    assert.match(summary, /Fullest HBM: w[012] chip \d \(0\.\d\d GiB \/ 16\.00 GiB\)/);
    assert.equal(await page.$$eval('.tpu-chips-worker[data-worker="3"] tr.idlest', (e) => e.length), 1);
    assert.equal(await page.$$eval('tr.fullest', (e) => e.length), 1);
    await page.screenshot({ path: path.join(artifacts, 'chips-training.png') });
  });

  it('shows a worker whose libtpu stopped answering as such, keeping its lines, and the others going on', async () => {
    const before = await page.$eval('.tpu-chips-worker[data-worker="0"] tr[data-chip="0"] td.duty polyline', (e) => e.getAttribute('points'));
    for (const m of stream.slice(downAt)) await post(page, m);
    assert.equal(await page.$eval('.tpu-chips-worker[data-worker="2"]', (e) => (e as HTMLElement).dataset.state), 'no-libtpu');
    assert.match(await text(page, '.tpu-chips-worker[data-worker="2"] .tpu-chips-status'), /no TPU program/);
    assert.match(await page.$eval('.tpu-chips-worker[data-worker="2"] .tpu-chips-status', (e) => (e as HTMLElement).title), /nothing listens on localhost:8431/);
    assert.equal(await page.$$eval('.tpu-chips-worker[data-worker="2"] tbody tr', (e) => e.length), 4, 'its last lines stay, dimmed');
    assert.match(await text(page, '.tpu-chips-summary'), /Not read: w2/);
    const now = await page.$eval('.tpu-chips-worker[data-worker="0"] tr[data-chip="0"] td.duty polyline', (e) => e.getAttribute('points'));
    assert.notEqual(now, before, 'w0 kept moving');
    // The program ended: the last readings are idle chips with nothing in HBM.
    assert.equal(await text(page, '.tpu-chips-worker[data-worker="1"] tr[data-chip="0"] td.duty .value'), '0.0%');
    assert.equal(await text(page, '.tpu-chips-worker[data-worker="1"] tr[data-chip="0"] td.hbm .value'), '0.00 GiB / 16.00 GiB');
    await page.screenshot({ path: path.join(artifacts, 'chips-worker-down.png') });
    assert.deepEqual(await cspViolations(page), []);
  });

  it('charts duty cycle and HBM per worker on the Metrics tab\'s step axis', async () => {
    await page.click('#tab-metrics');
    for (let w = 0; w < 4; w++) await post(page, { type: 'metrics', records: [1, 2, 3].map((step) => ({ step, worker: w, loss: 3 - step * 0.1 })) });
    // Readings come after the trainer logged step 3: they are charted there.
    await post(page, stream[1]);
    await page.waitForSelector('.chart[data-metric="duty_cycle"]');
    await page.waitForSelector('.chart[data-metric="hbm"]');
    const series = await page.$$eval('.chart[data-metric="duty_cycle"] .u-legend .u-series th', (els) => els.map((e) => e.textContent?.trim()));
    assert.deepEqual(series.filter((s) => /^w\d$/.test(s ?? '')), ['w0', 'w1', 'w2', 'w3']);
    const order = await page.$$eval('.chart', (els) => els.map((e) => (e as HTMLElement).dataset.metric));
    assert.deepEqual(order.slice(-2), ['duty_cycle', 'hbm'], 'after the trainer\'s charts');
  });

  it('keeps chip Health notes beside the torch_xla ones of the same worker', async () => {
    await post(page, { type: 'health', worker: 1, findings: [{ severity: 'warning', title: 'Recompiled 3 times after step 2', detail: 'x' }] });
    await post(page, { type: 'health', worker: 1, source: 'chips', findings: [{ severity: 'warning', title: 'Chip 2 idle for 45 s while training', detail: 'y' }] });
    await post(page, { type: 'health', worker: 1, source: 'chips', findings: [{ severity: 'warning', title: 'Chip 2 idle for 61 s while training', detail: 'y' }] });
    const notes = await page.$$eval('ul[data-worker="1"] li strong', (els) => els.map((e) => e.textContent));
    assert.deepEqual(notes, ['⚠ w1: Recompiled 3 times after step 2', '⚠ w1: Chip 2 idle for 61 s while training']);
  });
});
