/**
 * The run registry across CLI invocations against a real emulator: `tpw run --detach` returns once started,
 * `tpw runs` lists it, `tpw logs RUN` shows what is there, `tpw logs RUN --follow` reattaches (from another
 * "process": a fresh ConnectionManager per invocation) until the end, `tpw stop RUN` leaves nothing running.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { Emulator } from '../../extension/src/core/emulator/emulator';
import { loadRun } from '../../extension/src/core/run/registry';
import { runTpw, writeRecipeIn, type CliResult } from '../helpers/cli';

let home: string;
let ws: string;
let emu: Emulator | undefined;
const savedHome = process.env.TPW_HOME;

function tpw(...argv: string[]): Promise<CliResult> {
  return runTpw(ws, argv);
}

function writeRecipe(name: string, text: string): string {
  return writeRecipeIn(ws, name, text);
}

before(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-cliruns-'));
  ws = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-cliruns-ws-'));
  process.env.TPW_HOME = home;
  emu = new Emulator({ dir: path.join(home, 'emulator'), opDelayMs: 30, addressPrefix: '127.0.11' });
  await emu.start();
  const c = await tpw('vm', 'create', 'pod', '--type', 'v5litepod-16');
  assert.equal(c.code, 0, c.err.join('\n'));
});

after(async () => {
  await emu?.stop();
  fs.rmSync(ws, { recursive: true, force: true });
  if (savedHome === undefined) delete process.env.TPW_HOME;
  else process.env.TPW_HOME = savedHome;
});

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
  const rec = loadRun(runId, home);
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
  assert.equal(loadRun(runId, home).status, 'cancelled');
  // Following a stopped run ends at once with what the log has.
  const f = await tpw('logs', runId, '--follow');
  assert.ok(f.out.includes('[w0] up'), f.out.join('\n'));
  assert.equal(loadRun(runId, home).status, 'cancelled', 'a later watch does not rewrite how it ended');

  const bad = await tpw('logs', 'nope');
  assert.equal(bad.code, 1);
  assert.match(bad.err[0], /No run matches "nope"/);
});
