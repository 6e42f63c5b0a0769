/**
 * The run registry across CLI invocations against a real emulator: `tpw run --detach` returns once started,
 * `tpw runs` lists it, `tpw logs RUN` shows what is there, `tpw logs RUN --follow` reattaches (from another
 * "process": a fresh ConnectionManager per invocation) until the end, `tpw stop RUN` leaves nothing running.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { loadRun } from '../../extension/src/core/run/registry';
import { emulatorPodFixture } from '../helpers/cli';
import { testAddressPrefix } from '../helpers/loopback';

const pod = emulatorPodFixture('cliruns', testAddressPrefix(11), { before, after });
const tpw = pod.tpw;
const writeRecipe = pod.writeRecipe;

test('run --detach, runs, logs, logs --follow: the run outlives the command that started it', async () => {
  const recipe = writeRecipe('slow.sh', `bash -c 'echo "start $TPU_WORKER_ID"; sleep 2; for i in 1 2 3; do echo "step $i"; done'\n`);
  const started = Date.now();
  const r = await tpw('run', recipe, '--vm', 'pod', '--detach');
  assert.equal(r.code, 0, r.err.join('\n'));
  assert.ok(Date.now() - started < 15_000);
  const runId = r.out.at(-1) ?? '';
  assert.match(runId, /^\d{8}-\d{6}-[0-9a-f]{4}$/);
  assert.match(r.err.join('\n'), new RegExp(`Run ${runId} started on every worker`));

  const listed = await tpw('runs');
  assert.equal(listed.code, 0);
  assert.match(listed.out[0], /^RUN\s+STATUS\s+VM\s+RECIPE/);
  assert.match(listed.out.join('\n'), new RegExp(`${runId}\\s+running\\s+pod\\s+slow\\.sh`));

  // A prefix is enough; a one-shot look shows what each worker wrote so far.
  const peek = await tpw('logs', runId.slice(0, 18));
  assert.equal(peek.code, 0, peek.err.join('\n'));
  assert.match(peek.err.join('\n'), /running/);

  const follow = await tpw('logs', runId, '--follow');
  assert.equal(follow.code, 0, follow.err.join('\n'));
  for (const w of [0, 1, 2, 3]) {
    const mine = follow.out.filter((l) => l.startsWith(`[w${w}] `));
    assert.deepEqual(mine, [`[w${w}] start ${w}`, `[w${w}] step 1`, `[w${w}] step 2`, `[w${w}] step 3`]);
  }
  assert.match(follow.out.at(-1) ?? '', /4\/4 workers ok/);
  const rec = loadRun(runId, pod.home);
  assert.equal(rec.status, 'succeeded');
  assert.deepEqual(rec.exitCodes, [0, 0, 0, 0]);
  assert.equal(JSON.stringify(rec).includes('PRIVATE KEY'), false, 'no key in the record');
  assert.match((await tpw('runs')).out.join('\n'), new RegExp(`${runId}\\s+succeeded.*w0=0 w1=0 w2=0 w3=0`));
});

test('stop RUN from another invocation ends it on every worker', async () => {
  const recipe = writeRecipe('forever.sh', `bash -c 'echo up; sleep 1000'\n`);
  const r = await tpw('run', recipe, '--vm', 'pod', '--detach');
  assert.equal(r.code, 0, r.err.join('\n'));
  const runId = r.out.at(-1) ?? '';
  const s = await tpw('stop', runId);
  assert.equal(s.code, 0, s.err.join('\n'));
  assert.match(s.out[0], /stopped on 4 workers \(cancelled\)/);
  assert.equal(loadRun(runId, pod.home).status, 'cancelled');
  // Following a stopped run ends at once with what the log has.
  const f = await tpw('logs', runId, '--follow');
  assert.ok(f.out.includes('[w0] up'), f.out.join('\n'));
  assert.equal(loadRun(runId, pod.home).status, 'cancelled', 'a later watch does not rewrite how it ended');

  const bad = await tpw('logs', 'nope');
  assert.equal(bad.code, 1);
  assert.match(bad.err[0], /No run matches "nope"/);
});
