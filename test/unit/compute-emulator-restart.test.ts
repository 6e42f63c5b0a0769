/**
 * `tpw vm create` of a Compute Engine slice waiting on the local emulator while that emulator is killed and
 * started again (a new port, a new token): the command ends with a sentence saying what happened and how to
 * finish or clean up, and the slice is there to finish or delete. Before, it waited silently forever.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import { readEmulatorEndpoint } from '../../extension/src/core/local-emulator';
import type { EmulatorEndpoint } from '../../protocol/node/emulator-endpoint';
import { runTpw } from '../helpers/cli';
import { testAddressPrefix } from '../helpers/loopback';

const home = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-restart-'));
const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-restart-ws-'));
const dir = path.join(home, 'emulator');
const savedHome = process.env.TPW_HOME;
process.env.TPW_HOME = home;
const children: ChildProcess[] = [];

after(() => {
  for (const c of children) c.kill('SIGKILL');
  fs.rmSync(home, { recursive: true, force: true });
  fs.rmSync(ws, { recursive: true, force: true });
  if (savedHome === undefined) delete process.env.TPW_HOME;
  else process.env.TPW_HOME = savedHome;
});

/** The emulator in a process of its own (workers not started: the control plane is what is tested). */
async function startEmulator(opDelayMs: number, previous?: EmulatorEndpoint): Promise<{ child: ChildProcess; ep: EmulatorEndpoint }> {
  const script = `require(${JSON.stringify(path.resolve(__dirname, '../../emulator/src/daemon.ts'))}).runEmulatorForeground({ workerPool: () => ({ addWorker: async () => {}, removeNode: async () => {}, close: async () => {} }) }).catch((e) => { console.error(e); process.exit(1); });`;
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], {
    // Not the CLI's cwd (runTpw changes it): tsx is found from the repository.
    cwd: path.resolve(__dirname, '../..'),
    env: { ...process.env, TPW_EMULATOR_OPTIONS: JSON.stringify({ dir, opDelayMs, addressPrefix: testAddressPrefix(241) }) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
  children.push(child);
  for (const deadline = Date.now() + 60_000; ; await new Promise((r) => setTimeout(r, 100))) {
    const ep = readEmulatorEndpoint(dir);
    if (ep && ep.token !== previous?.token) return { child, ep };
    if (Date.now() > deadline || child.exitCode !== null) assert.fail(`the emulator did not start: ${stderr}`);
  }
}

test('a create waiting on a restarted emulator says what happened and how to finish or clean up', { timeout: 180_000 }, async () => {
  const first = await startEmulator(4000);
  const creating = runTpw(ws, ['vm', 'create', 'iron', '--type', 'tpu7x-16', '--zone', 'us-east5-b']);
  // Wait until the emulator has the slice (its MIG) in its state file, then kill it mid-create.
  for (const deadline = Date.now() + 60_000; !/"name": "iron"/.test(readState()); await new Promise((r) => setTimeout(r, 100))) {
    if (Date.now() > deadline) assert.fail('the create never reached the emulator');
  }
  // Killed and started again at once, as a crash and a restart by hand: the waiting command may notice either.
  first.child.kill('SIGKILL');
  await new Promise((r) => first.child.once('exit', r));
  const second = await startEmulator(30, first.ep);
  const r = await creating;
  assert.notEqual(r.code, 0);
  const said = r.err.join('\n');
  assert.match(
    said,
    /The local emulator (restarted \(it now runs as pid \d+, REST port \d+\)|stopped) while TPU Workbench waited to create TPU slice "iron" \(tpu7x-16, 2 VMs\) in local-project\/us-east5-b: /,
    said,
  );
  assert.match(said, /`tpw vm list` shows where TPU slice "iron" \(tpu7x-16, 2 VMs\) stands \(what the emulator had accepted is kept in its state\); run the same command again to finish, or delete it with `tpw vm delete` to clean up\./);
  assert.equal(r.err.filter((l) => l.startsWith('tpw: ')).length, 1, r.err.join('\n'));
  assert.ok(second.ep.restPort > 0);
  const d = await runTpw(ws, ['vm', 'delete', 'iron', '--zone', 'us-east5-b']);
  assert.equal(d.code, 0, d.err.join('\n'));
});

function readState(): string {
  try {
    return fs.readFileSync(path.join(dir, 'state.json'), 'utf8');
  } catch {
    return '';
  }
}
