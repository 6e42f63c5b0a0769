/**
 * Captures analyzed before they are opened (core/profiles/prefetch.ts), on real captures through the real
 * ProfileParser and its worker thread (the run view's prefetch runs there): one analysis per capture identity
 * whoever asks and when, a new one when the capture changed, smallest first, cancel, the memory budget, errors.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync, statSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { ProfileParser } from '../../extension/src/core/profiles/parse';
import { CaptureAnalyses, captureKey, summaryBytes, type AnalysisEvent, type CaptureJob } from '../../extension/src/core/profiles/prefetch';
import { ProfileFormatError } from '../../extension/src/core/profiles/wasm-host';
import { profileWorker, REAL } from '../helpers/profiles';

const TPU = path.join(REAL, 'tpu-v6e-4-inference.xplane.pb');
const GPU = path.join(REAL, 'jax-te-fused-attn.xplane.pb');
const TF = path.join(REAL, 'tf-8gpu-multi-worker.xplane.pb');

// The parser's worker (worker_threads) runs the analysis that profileWorker() builds (cargo): a slow-tier file.
const tmp = mkdtempSync(path.join(tmpdir(), 'tpw-prefetch-'));
const parser = new ProfileParser(profileWorker());

/** A local capture as the run view makes its job: keyed by path, size and mtime now. */
function job(file: string): CaptureJob & { fetched: number } {
  const st = statSync(file);
  const j = { key: captureKey({ where: 'local', path: file, bytes: st.size, mtimeMs: st.mtimeMs }), bytes: st.size, fetched: 0, file: () => (j.fetched++, Promise.resolve(file)) };
  return j;
}

/** Analyses through the real parser, recording each call (file, whether in the background) and every event. */
function analyses(opts: { budgetBytes?: number; maxPrefetchBytes?: number } = {}) {
  const calls: { file: string; background: boolean }[] = [];
  const events: AnalysisEvent[] = [];
  const a = new CaptureAnalyses((file, background) => (calls.push({ file, background }), parser.analyze(file, background)), { ...opts, idleMs: 1, onEvent: (e) => events.push(e) });
  return { a, calls, events };
}

describe('capture analyses (prefetch and cache)', () => {
  after(() => {
    parser.dispose();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('analyzes a listed capture once, off the calling thread; opening it twice parses nothing more', async () => {
    const { a, calls, events } = analyses();
    const j = job(TPU);
    a.prefetch(j);
    a.prefetch(j); // listed again (a second fetch of the run's artifacts): still one analysis
    await a.whenIdle();
    assert.deepEqual(calls, [{ file: TPU, background: true }]);
    assert.ok(a.isReady(j.key));
    const first = await a.open(j);
    const again = await a.open(job(TPU));
    assert.equal(a.analyses, 1, 'one analysis for two opens');
    assert.equal(first.prefetched, true);
    assert.equal(again.summary, first.summary, 'the same summary, from the cache');
    assert.ok(first.summary.ops.length > 0, 'the TPU capture has its op table');
    assert.deepEqual(events.map((e) => e.kind), ['analyzed', 'served', 'served']);
  });

  it('an open while the prefetch is under way waits for it: no second parse', async () => {
    const { a, calls } = analyses();
    const j = job(TF);
    a.prefetch(j);
    // Wait until the background analysis has started (the idle pause is over), then open.
    while (calls.length === 0) await new Promise((r) => setTimeout(r, 1));
    assert.equal(a.isReady(j.key), false, 'still being analyzed');
    const opened = await a.open(job(TF));
    assert.equal(opened.prefetched, true, 'the click found the analysis under way');
    assert.equal(a.analyses, 1);
    assert.ok(opened.summary.eventCount > 0);
  });

  it('a capture opened before its turn is analyzed now, for the user, and leaves the queue', async () => {
    const { a, calls } = analyses();
    const j = job(GPU);
    a.prefetch(j);
    const opened = await a.open(j); // synchronously after listing: the idle pause has not passed yet
    assert.equal(opened.prefetched, false);
    await a.whenIdle();
    assert.deepEqual(calls, [{ file: GPU, background: false }], 'one analysis, on open (on the calling thread: small)');
  });

  it('a capture rewritten in place (new mtime) is analyzed again; the old result is not served for it', async () => {
    const { a } = analyses();
    const file = path.join(tmp, 'rewritten.xplane.pb');
    copyFileSync(GPU, file);
    utimesSync(file, 1_700_000_000, 1_700_000_000);
    const before = job(file);
    a.prefetch(before);
    await a.whenIdle();
    utimesSync(file, 1_700_000_100, 1_700_000_100);
    const changed = job(file);
    assert.notEqual(changed.key, before.key);
    assert.equal(a.isReady(changed.key), false);
    const opened = await a.open(changed);
    assert.equal(opened.prefetched, false, 'parsed on open: the cached analysis was of other bytes');
    assert.equal(a.analyses, 2);
  });

  it('smallest first, one at a time', async () => {
    const { a, calls } = analyses();
    for (const f of [TF, TPU, GPU]) a.prefetch(job(f));
    await a.whenIdle();
    assert.deepEqual(calls.map((c) => path.basename(c.file)), [GPU, TPU, TF].map((f) => path.basename(f)));
    assert.equal(a.analyses, 3);
  });

  it('cancel drops the queue, aborts a fetch under way and keeps nothing', async () => {
    const { a, calls } = analyses();
    let aborted = false;
    const slow: CaptureJob = {
      key: 'remote-slow', bytes: 1,
      file: (signal) => new Promise<string>((_resolve, reject) => {
        signal.addEventListener('abort', () => { aborted = true; reject(new ProfileFormatError('fetching remote-slow was cancelled')); });
      }),
    };
    a.prefetch(slow);
    a.prefetch(job(TPU));
    a.prefetch(job(TF));
    while (a.analyses === 0) await new Promise((r) => setTimeout(r, 1)); // the fetch of the first has started
    a.cancel();
    await a.whenIdle();
    assert.equal(aborted, true, 'the fetch under way saw the abort');
    assert.deepEqual(calls, [], 'nothing was analyzed');
    assert.equal(a.analyses, 1, 'only the fetch that was cancelled had started');
    a.prefetch(job(GPU));
    await a.whenIdle();
    assert.deepEqual(calls, [], 'a cancelled queue takes no more work');
    assert.equal(a.keptBytes, 0);
  });

  it('keeps summaries within its budget: prefetching stops there, an open evicts the least recently used', async () => {
    const gpuBytes = summaryBytes(await parser.analyze(GPU));
    const { a, events } = analyses({ budgetBytes: gpuBytes });
    const [g, t, f] = [job(GPU), job(TPU), job(TF)];
    for (const j of [g, t, f]) a.prefetch(j);
    await a.whenIdle();
    // GPU (smallest) fills the budget: the rest are not prefetched.
    assert.deepEqual([a.isReady(g.key), a.isReady(t.key), a.isReady(f.key)], [true, false, false]);
    assert.equal(a.analyses, 1);
    const opened = await a.open(t);
    assert.equal(opened.prefetched, false);
    assert.deepEqual([a.isReady(g.key), a.isReady(t.key)], [false, true], 'the GPU summary made room');
    assert.deepEqual(events.filter((e) => e.kind === 'evicted'), [{ kind: 'evicted', key: g.key }], 'and the eviction is told (the list drops its ready mark)');
    assert.ok(a.keptBytes <= Math.max(gpuBytes, summaryBytes(opened.summary)));
  });

  it('captures over the prefetch limit wait for an open', async () => {
    const { a, calls } = analyses({ maxPrefetchBytes: statSync(TPU).size - 1 });
    a.prefetch(job(TPU));
    a.prefetch(job(GPU));
    await a.whenIdle();
    assert.deepEqual(calls.map((c) => path.basename(c.file)), [path.basename(GPU)]);
  });

  it('a capture that cannot be read: the prefetch reports it, the open analyzes again and throws the clear error', async () => {
    const { a, events } = analyses();
    const bad = path.join(tmp, 'cut.xplane.pb');
    copyFileSync(TPU, bad);
    const { truncateSync } = await import('node:fs');
    truncateSync(bad, statSync(TPU).size - 3);
    a.prefetch(job(bad));
    await a.whenIdle();
    assert.equal(events[0]?.kind, 'failed');
    await assert.rejects(a.open(job(bad)), (e: Error) => e instanceof ProfileFormatError && e.message.startsWith(bad));
    assert.equal(a.analyses, 2);
  });
});
