/**
 * Accepted means durable, concurrent means one winner, a failure leaves nothing, and a full disk is an answer,
 * not a crash — the emulator's Compute Engine and Cloud TPU state under the faults that once broke it:
 * - 50 concurrent inserts of one name: one 200 and 49 409s, and the accepted operation finishes (all 50 were
 *   accepted, and half their operations never finished);
 * - `kill -9` while 12 inserts are in flight: every operation that said DONE has its instance after the restart,
 *   and every accepted one is brought up (10 of 12 instances were gone while their operations said DONE);
 * - a create whose worker cannot come up ends its operation with the error and leaves no instance behind;
 * - a 20 MB tmpfs as the emulator's folder, filled: inserts and CreateNode get 503 naming the full disk, leave
 *   no CREATING VM, the emulator keeps answering, and state.json stays whole (it crashed on ENOSPC).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { Emulator, type WorkerPool } from '../../emulator/src/emulator';
import type { WorkerSpec } from '../../emulator/src/ssh-workers';
import { readEmulatorEndpoint } from '../../extension/src/core/local-emulator';
import type { EmulatorEndpoint } from '../../protocol/node/emulator-endpoint';
import { emulatorRequest, type EmulatorReply } from '../helpers/emulator-http';
import { testAddressPrefix } from '../helpers/loopback';
import { runCommand } from '../helpers/second-user';

const ZONE = 'projects/local-project/zones/us-east5-b';
const tmpDirs: string[] = [];
after(() => {
  for (const d of tmpDirs) fs.rmSync(d, { recursive: true, force: true });
});
function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-durable-'));
  tmpDirs.push(d);
  return d;
}

/** Workers that are not started (the state is what is tested); `fail` names instances whose worker cannot come up. */
function fakePool(fail: (spec: WorkerSpec) => boolean = () => false): () => WorkerPool {
  return () => ({
    addWorker: async (spec) => {
      if (fail(spec)) throw new Error(`no room for ${spec.nodeId}`);
    },
    removeNode: async () => undefined,
    close: async () => undefined,
  });
}

const insert = (ep: EmulatorEndpoint, name: string) => emulatorRequest(ep, 'POST', `/compute/v1/${ZONE}/instances`, { name, machineType: 'zones/us-east5-b/machineTypes/tpu7x-standard-4t' });
const opName = (r: EmulatorReply) => String(r.body.name);
const getOp = (ep: EmulatorEndpoint, name: string) => emulatorRequest(ep, 'GET', `/compute/v1/${ZONE}/operations/${name}`);
const getInstance = (ep: EmulatorEndpoint, name: string) => emulatorRequest(ep, 'GET', `/compute/v1/${ZONE}/instances/${name}`);

async function waitOp(ep: EmulatorEndpoint, name: string, timeoutMs = 30_000): Promise<Record<string, unknown>> {
  for (const deadline = Date.now() + timeoutMs; ; await new Promise((r) => setTimeout(r, 50))) {
    const r = await getOp(ep, name);
    if (r.body.status === 'DONE') return r.body;
    if (Date.now() > deadline) assert.fail(`operation ${name} is still ${String(r.body.status)}`);
  }
}

describe('concurrent inserts and failed creates', () => {
  it('50 concurrent inserts of one name: one is accepted, 49 get 409, and the accepted one finishes', async () => {
    const emu = new Emulator({ dir: tmp(), opDelayMs: 50, addressPrefix: testAddressPrefix(237), workerPool: fakePool() });
    const ep = await emu.start();
    try {
      const replies = await Promise.all(Array.from({ length: 50 }, () => insert(ep, 'one')));
      assert.deepEqual(replies.map((r) => r.status).sort(), [200, ...Array<number>(49).fill(409)]);
      const won = replies.find((r) => r.status === 200);
      assert.ok(won);
      const done = await waitOp(ep, opName(won));
      assert.equal(done.error, undefined);
      assert.equal((await getInstance(ep, 'one')).body.status, 'RUNNING');
    } finally {
      await emu.stop();
    }
  });

  it('an insert whose worker cannot come up ends with the error and leaves no instance', async () => {
    const emu = new Emulator({ dir: tmp(), opDelayMs: 50, addressPrefix: testAddressPrefix(238), workerPool: fakePool((s) => s.nodeId.endsWith('/doomed')) });
    const ep = await emu.start();
    try {
      const r = await insert(ep, 'doomed');
      assert.equal(r.status, 200);
      const done = await waitOp(ep, opName(r));
      assert.match(JSON.stringify(done.error), /no room for compute\/local-project\/us-east5-b\/doomed/);
      assert.equal((await getInstance(ep, 'doomed')).status, 404, 'a failed create leaves nothing');
      // Its address went back: the name can be created again once its worker can come up.
      assert.equal((await insert(ep, 'doomed')).status, 200);
    } finally {
      await emu.stop();
    }
  });
});

describe('kill -9 while inserts are in flight', () => {
  it('loses no operation that said DONE, and brings up every insert it accepted', { timeout: 120_000 }, async () => {
    const dir = tmp();
    // The emulator in a process of its own, so it can be killed outright.
    const script = `require(${JSON.stringify(path.resolve(__dirname, '../../emulator/src/daemon.ts'))}).runEmulatorForeground({ workerPool: () => ({ addWorker: async () => {}, removeNode: async () => {}, close: async () => {} }) }).catch((e) => { console.error(e); process.exit(1); });`;
    const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], {
      cwd: path.resolve(__dirname, '../..'),
      env: { ...process.env, TPW_EMULATOR_OPTIONS: JSON.stringify({ dir, opDelayMs: 400, addressPrefix: testAddressPrefix(239) }) },
      stdio: 'ignore',
    });
    let ep: EmulatorEndpoint | undefined;
    for (const deadline = Date.now() + 60_000; !ep; await new Promise((r) => setTimeout(r, 100))) {
      ep = readEmulatorEndpoint(dir);
      if (Date.now() > deadline) assert.fail('the emulator did not start');
    }
    const names = Array.from({ length: 12 }, (_, i) => `vm-${i}`);
    const accepted: { name: string; op: string }[] = [];
    // Inserts go out one after another, so some are done and some still running when the kill comes.
    const said = new Set<string>();
    for (const name of names) {
      const r = await insert(ep, name);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      accepted.push({ name, op: opName(r) });
      for (const a of accepted) if ((await getOp(ep, a.op)).body.status === 'DONE') said.add(a.name);
      await new Promise((r) => setTimeout(r, 60));
    }
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    assert.ok(said.size > 0 && said.size < names.length, `some inserts done (${said.size}), some in flight`);

    const emu = new Emulator({ dir, opDelayMs: 50, addressPrefix: testAddressPrefix(239), workerPool: fakePool() });
    const ep2 = await emu.start();
    try {
      for (const name of said) assert.equal((await getInstance(ep2, name)).body.status, 'RUNNING', `${name}: its operation said DONE`);
      for (const { name, op } of accepted) {
        const done = await waitOp(ep2, op);
        assert.equal(done.error, undefined, `${name}: ${JSON.stringify(done.error)}`);
        assert.equal((await getInstance(ep2, name)).body.status, 'RUNNING', `${name} was accepted`);
      }
    } finally {
      await emu.stop();
    }
  });
});

describe('a full disk', { skip: process.getuid?.() !== 0 ? 'needs root to mount a 20 MB tmpfs' : false }, () => {
  it('is a 503 naming it, leaves no CREATING VM and a whole state file, and the emulator goes on', { timeout: 120_000 }, async () => {
    const mnt = tmp();
    const mount = await runCommand('mount', ['-t', 'tmpfs', '-o', 'size=20m,mode=0700', 'tmpfs', mnt]);
    assert.equal(mount.code, 0, mount.stderr);
    const dir = path.join(mnt, 'emulator');
    const emu = new Emulator({ dir, opDelayMs: 50, addressPrefix: testAddressPrefix(240), workerPool: fakePool() });
    try {
      const ep = await emu.start();
      const first = await insert(ep, 'before');
      await waitOp(ep, opName(first));
      // Fill the disk: a file grows until the kernel says ENOSPC.
      const filler = fs.openSync(path.join(mnt, 'filler'), 'w');
      const block = Buffer.alloc(64 * 1024, 1);
      try {
        for (;;) fs.writeSync(filler, block);
      } catch (e) {
        assert.equal((e as NodeJS.ErrnoException).code, 'ENOSPC');
      } finally {
        fs.closeSync(filler);
      }
      const full = await insert(ep, 'after');
      assert.equal(full.status, 503, JSON.stringify(full.body));
      assert.match(JSON.stringify(full.body), /no space left on the device/);
      assert.equal((await getInstance(ep, 'after')).status, 404);
      const node = await emulatorRequest(ep, 'POST', '/v2/projects/local-project/locations/us-central2-b/nodes?nodeId=tight', { acceleratorType: 'v4-8', runtimeVersion: 'tpu-ubuntu2204-base' });
      assert.equal(node.status, 503, JSON.stringify(node.body));
      const nodes = await emulatorRequest(ep, 'GET', '/v2/projects/local-project/locations/us-central2-b/nodes');
      assert.deepEqual(nodes.body.nodes ?? [], [], 'a create that failed left no CREATING node');
      // A transition finishing on the full disk: the emulator logs it and keeps answering.
      const stop = await emulatorRequest(ep, 'POST', `/compute/v1/${ZONE}/instances/before/stop`);
      assert.equal(stop.status, 503);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal((await getInstance(ep, 'before')).body.status, 'RUNNING');
      const state = JSON.parse(fs.readFileSync(path.join(dir, 'state.json'), 'utf8')) as { compute: { instances: { name: string }[] } };
      assert.deepEqual(state.compute.instances.map((i) => i.name), ['before'], 'state.json is the last whole generation');
      assert.deepEqual(fs.readdirSync(dir).filter((f) => f.endsWith('.tmp')), [], 'no half-written copy is left');
      fs.rmSync(path.join(mnt, 'filler'));
      const again = await insert(ep, 'after');
      assert.equal(again.status, 200);
      assert.equal((await waitOp(ep, opName(again))).error, undefined);
    } finally {
      await emu.stop().catch(() => undefined);
      await runCommand('umount', [mnt]);
    }
  });
});
