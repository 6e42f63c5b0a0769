/**
 * The failure summary names which worker failed first, why, and that worker's last lines — through the CLI
 * against a real emulator (SSH workers on 127.0.19.x): `tpw run` as it ends, `tpw logs RUN` (a one-shot look
 * at the finished run) and `tpw logs RUN --follow` (a reattach that cannot itself tell who was stopped).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadRun } from '../../extension/src/core/run/registry';
import { firstFailure, formatRunSummary, RunTails } from '../../extension/src/core/run/summary';
import type { RunResult, WorkerResult } from '../../extension/src/core/run/types';
import { emulatorPodFixture } from '../helpers/cli';
import { testAddressPrefix } from '../helpers/loopback';

const pod = emulatorPodFixture('failsum', testAddressPrefix(19), { before, after });
const tpw = pod.tpw;
const writeRecipe = pod.writeRecipe;

/** The lines the summary must quote: the last 10 of worker 2's 14 (its stderr is in the log too). */
const W2_TAIL = ['[w2] w2 line 5', '[w2] w2 line 6', '[w2] w2 line 7', '[w2] w2 line 8', '[w2] w2 line 9', '[w2] w2 line 10', '[w2] w2 line 11', '[w2] w2 line 12', '[w2] w2 line 13', '[w2] boom: out of cheese'].map((l) => `  ${l}`);

/** Worker 2 prints 13 numbered lines and an error, then exits 3; the others wait to be stopped by fail-fast. */
const RECIPE = `bash -c 'if [ "$TPU_WORKER_ID" = 2 ]; then sleep 0.5; for i in $(seq 1 13); do echo "w2 line $i"; done; echo "boom: out of cheese" >&2; exit 3; fi; echo "w$TPU_WORKER_ID waiting"; sleep 60'\n`;

/** The block after the summary line: "w2 failed first: …" and the quoted lines. */
function failureBlock(lines: string[]): string[] {
  const at = lines.findIndex((l) => /failed first/.test(l));
  assert.ok(at >= 0, `no "failed first" line in:\n${lines.join('\n')}`);
  return lines.slice(at);
}

test('tpw run: the summary names w2, its exit code 3 and its last lines; tpw logs says the same later', async () => {
  const recipe = writeRecipe('fail-w2.sh', RECIPE);
  const r = await tpw('run', recipe, '--vm', 'pod');
  assert.equal(r.code, 1, r.err.join('\n'));
  const summaryAt = r.out.findIndex((l) => /^run \S+: 0\/4 workers ok/.test(l));
  assert.ok(summaryAt >= 0, r.out.join('\n'));
  assert.match(r.out[summaryAt], /w0=stopped w1=stopped w2=3 \(failed\) w3=stopped$/);
  assert.deepEqual(failureBlock(r.out), ['w2 failed first: exit code 3. Its last 10 lines:', ...W2_TAIL]);
  // Nothing of the other workers, and not the earlier lines of w2, in the quoted tail.
  assert.equal(r.out.slice(summaryAt).some((l) => /w2 line 4$|\[w[013]\]/.test(l)), false);

  const runId = /^run (\S+):/.exec(r.out[summaryAt])?.[1] ?? '';
  const rec = loadRun(runId, pod.home);
  assert.equal(rec.status, 'failed');
  assert.equal(rec.failedWorker, 2);
  assert.equal(rec.reason, 'w2: exit code 3');

  // A one-shot look at the finished run: the status on stderr, then the same verdict and lines.
  const peek = await tpw('logs', runId);
  assert.equal(peek.code, 0, peek.err.join('\n'));
  assert.match(peek.err[0], new RegExp(`^run ${runId}: failed`));
  assert.deepEqual(failureBlock(peek.err), ['w2 failed first: exit code 3. Its last 10 lines:', ...W2_TAIL]);

  // Following it again: the stopped workers' exit codes look like failures now; the record says who was first.
  const follow = await tpw('logs', runId, '--follow');
  assert.equal(follow.code, 1, follow.err.join('\n'));
  assert.deepEqual(failureBlock(follow.out), ['w2 failed first: exit code 3. Its last 10 lines:', ...W2_TAIL]);
});

describe('RunTails and firstFailure', () => {
  const w = (index: number, o: Partial<WorkerResult>): WorkerResult => ({ index, host: 'h', exitCode: 0, stopped: false, ...o });
  const base: RunResult = { runId: 'r1', workers: [], durationMs: 1000, cancelled: false, ok: false };

  test('keeps only the last lines of each worker, and reports the first failure seen, not the lowest index', () => {
    const tails = new RunTails(3);
    const seen: string[] = [];
    const listener = tails.wrap({ onLine: (i: number, _s: 'stdout' | 'stderr', l: string) => seen.push(`${i}:${l}`) });
    for (let i = 1; i <= 5; i++) listener.onLine?.(1, 'stdout', `one ${i}`);
    listener.onLine?.(3, 'stderr', 'Killed');
    assert.equal(seen.length, 6, 'the wrapped listener still gets every line');
    assert.deepEqual(tails.last(1), ['one 3', 'one 4', 'one 5']);
    const result: RunResult = { ...base, firstFailed: 3, workers: [w(0, {}), w(1, { exitCode: 1 }), w(3, { exitCode: null, signal: 'KILL' })] };
    assert.deepEqual(firstFailure(result), { index: 3, why: 'signal KILL' });
    assert.deepEqual(tails.report(result).slice(1), ['w3 failed first: signal KILL. Its last line:', '  [w3] Killed']);
    // The registry's verdict wins over what a later watch saw.
    assert.deepEqual(firstFailure(result, 1), { index: 1, why: 'exit code 1' });
  });

  test('no failure block for ok, cancelled or preempted runs; a silent worker is said to be silent', () => {
    const tails = new RunTails();
    assert.equal(tails.report({ ...base, ok: true, workers: [w(0, {})] }).length, 1);
    assert.equal(tails.report({ ...base, cancelled: true, workers: [w(0, { exitCode: 130, stopped: true })] }).length, 1);
    assert.equal(tails.report({ ...base, preempted: true, workers: [w(0, { exitCode: 75 })] }).length, 1);
    assert.deepEqual(tails.report({ ...base, workers: [w(0, { exitCode: null, error: 'w0: ssh refused' })] }).slice(1), ['w0 failed first: w0: ssh refused. It printed nothing.']);
  });
});

describe('formatRunSummary', () => {
  test('names every worker’s outcome in one line', () => {
    const base: Parameters<typeof formatRunSummary>[0] = { runId: 'r1', durationMs: 12_345, cancelled: false, ok: false, workers: [] };
    const w = (index: number, extra: Partial<WorkerResult>): WorkerResult => ({ index, host: 'h', exitCode: 0, stopped: false, ...extra });
    assert.equal(
      formatRunSummary({ ...base, ok: true, workers: [w(0, {}), w(1, {})] }),
      'run r1: 2/2 workers ok in 12.3s — w0=0 w1=0',
    );
    assert.equal(
      formatRunSummary({ ...base, workers: [w(0, {}), w(2, { exitCode: 1 }), w(1, { exitCode: null, signal: 'KILL' }), w(3, { exitCode: 130, stopped: true }), w(4, { exitCode: null, error: 'x' })] }),
      'run r1: 1/5 workers ok in 12.3s — w0=0 w1=KILL (failed) w2=1 (failed) w3=stopped w4=error',
    );
  });
});
