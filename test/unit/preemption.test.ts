/**
 * Preemption against the emulator: its preempt endpoint takes a READY VM away mid-run; the run ends as
 * "preempted" (not failed) in the result, the registry and `tpw runs`; `tpw resume` recreates the VM and runs
 * again. So does a VM stopped (resume starts it) or deleted under the run (resume says what to do), and an
 * emulator that stops mid-run (resume once it is back). A trainer exit of 75 (trainer/README.md) is preempted
 * too. withResume replaces resume= overrides.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { runTpw, type CliResult } from '../helpers/cli';
import { emulatorRequest } from '../helpers/emulator-http';
import { openBackend, type Backend } from '../../extension/src/core/backend';
import { Emulator } from '../../emulator/src/emulator';
import { listRuns, loadRun, runRecipe, withResume } from '../../extension/src/core/run/engine';
import { ConnectionManager, hostKeyOptionsFor } from '../../extension/src/core/ssh/connection';
import { findNode } from '../../extension/src/core/slices/find';
import { parseNodeName } from '../../extension/src/core/tpu/models';
import { testAddressPrefix } from '../helpers/loopback';

let home: string;
let ws: string;
let emu: Emulator;
let backend: Backend;
let conns: ConnectionManager;
const saved = process.env.TPW_HOME;

async function post(urlPath: string): Promise<number> {
  const ep = emu.endpoint;
  assert.ok(ep);
  return (await emulatorRequest(ep, 'POST', urlPath)).status;
}

/** `tpw argv…` in this process, from the test's workspace. */
const cli = (...argv: string[]): Promise<CliResult> => runTpw(ws, argv);

before(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-preempt-'));
  ws = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-preempt-ws-'));
  process.env.TPW_HOME = home;
  emu = new Emulator({ dir: path.join(home, 'emulator'), opDelayMs: 30, addressPrefix: testAddressPrefix(13) });
  await emu.start();
  assert.equal((await cli('vm', 'create', 'spot', '--type', 'v5litepod-16', '--spot')).code, 0);
  backend = await openBackend({ useEmulator: true });
  conns = new ConnectionManager(hostKeyOptionsFor('emulator', false));
  fs.mkdirSync(path.join(ws, 'recipes'));
  // Ignores SIGTERM like a trainer busy writing a checkpoint: only the VM poll can end this watch early.
  fs.writeFileSync(path.join(ws, 'recipes', 'long.sh'), `bash -c 'if [ -e recipes/resumed ]; then echo resumed; exit 0; fi; trap "" TERM; echo up; for i in $(seq 1 600); do sleep 0.1; done; echo finished-by-itself'\n`);
  fs.writeFileSync(path.join(ws, 'recipes', 'seventy-five.sh'), `bash -c 'echo saving; exit 75'\n`);
});

after(async () => {
  conns?.dispose();
  await backend?.close();
  await emu?.stop();
  if (saved === undefined) delete process.env.TPW_HOME;
  else process.env.TPW_HOME = saved;
});

test('the VM is preempted mid-run: the run ends as preempted, and resume recreates the VM and runs again', async () => {
  const { node } = await findNode(backend, 'spot');
  const lines: string[] = [];
  let preempted = false;
  const result = await runRecipe({
    backend,
    node,
    recipePath: path.join(ws, 'recipes', 'long.sh'),
    workspaceRoot: ws,
    conns,
    statePollMs: 300,
    listener: {
      onLine: (w, _s, l) => {
        lines.push(`${w}:${l}`);
        if (!preempted && lines.filter((x) => x.endsWith(':up')).length === 4) {
          preempted = true;
          void post(`/emulator/v1/projects/${backend.project}/locations/us-central2-b/nodes/spot:preempt`).then((code) => assert.equal(code, 200));
        }
      },
    },
  });
  assert.ok(preempted, 'the preempt request went out');
  assert.equal(result.preempted, true, JSON.stringify(result));
  assert.equal(result.ok, false);
  assert.match(result.preemptedReason ?? '', /PREEMPTED/);
  assert.ok(!lines.some((l) => l.endsWith(':finished-by-itself')), 'ended by the VM poll, not by the program');
  const rec = loadRun(result.runId, home);
  assert.equal(rec.status, 'preempted');
  assert.match((await cli('runs')).out.join('\n'), new RegExp(`${result.runId}\\s+preempted\\s+spot`));

  // The resumed program sees this file (the workspace is synced again) and ends at once.
  fs.writeFileSync(path.join(ws, 'recipes', 'resumed'), '');
  const r = await cli('resume', result.runId.slice(0, 17));
  assert.equal(r.code, 0, r.err.join('\n'));
  for (const w of [0, 1, 2, 3]) assert.ok(r.out.includes(`[w${w}] resumed`), r.out.join('\n'));
  assert.match(r.err.join('\n'), /Deleting spot \(PREEMPTED\)/);
  assert.match(r.err.join('\n'), /Creating spot \(v5litepod-16/);
  const again = listRuns(home).find((x) => x.runId !== result.runId);
  assert.ok(again, 'a new run was recorded');
  assert.equal(again.status, 'succeeded');
  assert.equal((await backend.api.getNode(parseNodeName(node.name))).state, 'READY');
});

test('a trainer exit of 75 counts as preempted, not failed', async () => {
  const { node } = await findNode(backend, 'spot');
  const result = await runRecipe({ backend, node, recipePath: path.join(ws, 'recipes', 'seventy-five.sh'), workspaceRoot: ws, conns, listener: {} });
  assert.equal(result.preempted, true);
  assert.match(result.preemptedReason ?? '', /exited 75/);
  assert.equal(loadRun(result.runId, home).status, 'preempted');
});

/** Runs long.sh on `vm` and calls `interrupt` once every worker printed "up". */
async function runInterrupted(vm: string, workers: number, interrupt: () => Promise<unknown>): Promise<Awaited<ReturnType<typeof runRecipe>>> {
  const { node } = await findNode(backend, vm);
  let ups = 0;
  let finished = false;
  let fired: Promise<unknown> | undefined;
  const result = await runRecipe({
    backend,
    node,
    recipePath: path.join(ws, 'recipes', 'long.sh'),
    workspaceRoot: ws,
    conns,
    statePollMs: 300,
    listener: {
      onLine: (_w, _s, l) => {
        if (l === 'up' && ++ups === workers) fired = interrupt();
        if (l === 'finished-by-itself') finished = true;
      },
    },
  });
  assert.ok(fired, 'the interruption went out');
  assert.ok(!finished, 'ended by the VM poll, not by the program');
  await fired;
  return result;
}

test('a VM stopped under a run: the run is preempted, and resume starts the VM and runs again', async () => {
  fs.rmSync(path.join(ws, 'recipes', 'resumed'), { force: true });
  assert.equal((await cli('vm', 'create', 'solo', '--type', 'v5litepod-8')).code, 0);
  const result = await runInterrupted('solo', 1, () => cli('vm', 'stop', 'solo'));
  assert.equal(result.preempted, true, JSON.stringify(result));
  assert.match(result.preemptedReason ?? '', /solo was stopped \(STOP(PED|PING)\)/);
  assert.equal(loadRun(result.runId, home).status, 'preempted');
  fs.writeFileSync(path.join(ws, 'recipes', 'resumed'), '');
  const r = await cli('resume', result.runId);
  assert.equal(r.code, 0, r.err.join('\n'));
  assert.match(r.err.join('\n'), /Starting solo \(STOPPED\)/);
  assert.ok(r.out.includes('[w0] resumed'), r.out.join('\n'));
});

test('a VM deleted under a run: the run is preempted, and resume names the VM and what to do', async () => {
  fs.rmSync(path.join(ws, 'recipes', 'resumed'), { force: true });
  assert.equal((await cli('vm', 'create', 'doomed', '--type', 'v5litepod-8')).code, 0);
  const result = await runInterrupted('doomed', 1, () => cli('vm', 'delete', 'doomed'));
  assert.equal(result.preempted, true, JSON.stringify(result));
  assert.match(result.preemptedReason ?? '', /doomed (was deleted|went TERMINATED)/);
  const r = await cli('resume', result.runId);
  assert.equal(r.code, 1);
  assert.match(r.err.join('\n'), /The VM doomed of run \S+ was deleted: create it again/);
});

test('the emulator stops mid-run: the run is preempted, and resume runs it again once the emulator is back', async () => {
  fs.rmSync(path.join(ws, 'recipes', 'resumed'), { force: true });
  const dir = path.join(home, 'emulator');
  const result = await runInterrupted('spot', 4, () => emu.stop());
  assert.equal(result.preempted, true, JSON.stringify(result));
  assert.equal(result.preemptedReason, 'the local emulator stopped, and its VMs with it');
  assert.equal(loadRun(result.runId, home).status, 'preempted');
  emu = new Emulator({ dir, opDelayMs: 30, addressPrefix: testAddressPrefix(13) });
  await emu.start();
  await backend.close();
  backend = await openBackend({ useEmulator: true });
  fs.writeFileSync(path.join(ws, 'recipes', 'resumed'), '');
  const r = await cli('resume', result.runId);
  assert.equal(r.code, 0, r.err.join('\n'));
  for (const w of [0, 1, 2, 3]) assert.ok(r.out.includes(`[w${w}] resumed`), r.out.join('\n'));
});

test('withResume appends resume=auto once', () => {
  assert.deepEqual(withResume(['a=1', 'resume=/x', '+resume=y']), ['a=1', 'resume=auto']);
});
