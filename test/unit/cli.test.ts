/**
 * The `tpw` CLI end to end against a real emulator in this process (REST through the real @google-cloud/tpu
 * client, SSH workers on 127.0.9.x): the happy path and every bad input the foundation issue names, each
 * with its exit status and a one-line reason that names the thing at fault.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { Emulator } from '../../emulator/src/emulator';
import { runTpw, writeRecipeIn, type CliResult } from '../helpers/cli';
import { escapeRegExp as esc, testAddressPrefix } from '../helpers/loopback';

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

before(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-cli-'));
  ws = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-cli-ws-'));
  process.env.TPW_HOME = home;
});

after(async () => {
  await emu?.stop();
  if (savedHome === undefined) delete process.env.TPW_HOME;
  else process.env.TPW_HOME = savedHome;
});

test('every command says the emulator is not running, with the command that starts it', async () => {
  for (const argv of [['vm', 'list'], ['run', writeRecipe('ok.sh', 'bash -c "echo hi"\n'), '--vm', 'x']]) {
    const r = await tpw(...argv);
    assert.equal(r.code, 1, argv.join(' '));
    assert.match(r.err.join('\n'), /local TPU emulator is not running: start it with `tpw emulator start`/);
  }
});

test('usage errors exit 2 with a reason', async () => {
  assert.equal((await tpw()).code, 2);
  const unknown = await tpw('frobnicate');
  assert.equal(unknown.code, 2);
  assert.match(unknown.err[0], /unknown command "frobnicate"/);
  const badFlag = await tpw('vm', 'list', '--nope');
  assert.equal(badFlag.code, 2);
  assert.match(badFlag.err[0], /--nope/);
  const help = await tpw('--help');
  assert.equal(help.code, 0);
  assert.match(help.out.join('\n'), /tpw run RECIPE --vm NAME/);
});

test('with the emulator: create, list, run on every worker, and the bad inputs', async (t) => {
  emu = new Emulator({ dir: path.join(home, 'emulator'), opDelayMs: 30, addressPrefix: testAddressPrefix(9) });
  await emu.start();

  await t.test('create and list a 4-worker VM', async () => {
    const c = await tpw('vm', 'create', 'pod', '--type', 'v5litepod-16');
    assert.equal(c.code, 0, c.err.join('\n'));
    assert.match(c.out[0], new RegExp(`^pod READY: w0=${esc(testAddressPrefix(9))}\\.\\d+ w1=\\S+ w2=\\S+ w3=\\S+$`));
    const l = await tpw('vm', 'list');
    assert.match(l.out.join('\n'), /pod\s+us-central2-b\s+v5litepod-16\s+READY\s+4/);
  });

  await t.test('run streams every worker with its prefix, hostile strings arrive literally', async () => {
    const hostile = `it's "quoted" $(touch /tmp/pwned) \`id\` ; rm -rf ~ *`;
    const recipe = writeRecipe('hello.sh', `export MSG='${hostile.replace(/'/g, `'\\''`)}'\nbash -c 'printf "%s|%s\\n" "$TPU_WORKER_ID" "$MSG"'\n`);
    const r = await tpw('run', recipe, '--vm', 'pod');
    assert.equal(r.code, 0, r.err.join('\n'));
    for (let w = 0; w < 4; w++) assert.ok(r.out.includes(`[w${w}] ${w}|${hostile}`), `worker ${w} line in:\n${r.out.join('\n')}`);
    assert.match(r.out.at(-1) ?? '', /4\/4 workers ok .* w0=0 w1=0 w2=0 w3=0/);
  });

  await t.test('a failing worker stops the others and the summary says which', async () => {
    const recipe = writeRecipe('fail.sh', `bash -c 'if [ "$TPU_WORKER_ID" = 2 ]; then echo boom >&2; exit 7; fi; sleep 30'\n`);
    const started = Date.now();
    const r = await tpw('run', recipe, '--vm', 'pod');
    assert.equal(r.code, 1);
    assert.ok(Date.now() - started < 25_000, 'the others were stopped, not waited for');
    const at = r.out.findIndex((l) => /^run \S+: \d\/4 workers ok/.test(l));
    const summary = r.out[at] ?? r.out.join('\n');
    assert.match(summary, /w2=7 \(failed\)/);
    assert.match(summary, /w0=stopped/);
    // Then which worker failed first, why, and what it said last.
    assert.deepEqual(r.out.slice(at + 1), ['w2 failed first: exit code 7. Its last line:', '  [w2] boom']);
  });

  await t.test('unknown VM, missing recipe, malformed recipe', async () => {
    const unknown = await tpw('run', writeRecipe('ok2.sh', 'bash -c true\n'), '--vm', 'ghost');
    assert.equal(unknown.code, 1);
    assert.match(unknown.err.join('\n'), /TPU VM "ghost" not found in local-project/);

    const missing = await tpw('run', 'recipes/does-not-exist.sh', '--vm', 'pod');
    assert.equal(missing.code, 1);
    assert.match(missing.err.join('\n'), /Recipe not found: .*does-not-exist\.sh/);

    const bad = await tpw('run', writeRecipe('bad.sh', "export A='open\npython3 train.py\n"), '--vm', 'pod');
    assert.equal(bad.code, 1);
    assert.match(bad.err.join('\n'), /bad\.sh:1: unterminated single quote/);

    const noVm = await tpw('run', 'recipes/ok2.sh');
    assert.equal(noVm.code, 2);
    assert.match(noVm.err[0], /missing --vm NAME/);
  });

  await t.test('a stopped VM is refused with its state; a multi-host slice cannot be stopped', async () => {
    const slice = await tpw('vm', 'stop', 'pod');
    assert.equal(slice.code, 1);
    assert.match(slice.err.join('\n'), /Cannot stop TPU VM "pod".*multi-host/);
    assert.equal((await tpw('vm', 'create', 'solo', '--type', 'v5litepod-8')).code, 0);
    assert.equal((await tpw('vm', 'stop', 'solo')).code, 0);
    const r = await tpw('run', 'recipes/ok2.sh', '--vm', 'solo');
    assert.equal(r.code, 1);
    assert.match(r.err.join('\n'), /TPU VM "solo" is STOPPED, not READY/);
    assert.equal((await tpw('vm', 'delete', 'solo')).code, 0);
    assert.equal((await tpw('vm', 'delete', 'pod')).code, 0);
    assert.match((await tpw('vm', 'list')).out.join('\n'), /No TPU VMs/);
  });
});
