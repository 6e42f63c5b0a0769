import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { Client } from 'ssh2';
import { acceleratorInfo, ACCELERATOR_TYPES, runtimeVersionsFor } from '../../emulator/src/catalog';
import { emulatorStatus, startEmulatorDaemon, stopEmulatorDaemon } from '../../emulator/src/daemon';
import { Emulator, type WorkerPool } from '../../emulator/src/emulator';
import { endpointFile, readEmulatorEndpoint } from '../../protocol/node/emulator-endpoint';
import type { WorkerSpec } from '../../emulator/src/ssh-workers';
import { ApiError, EmulatorState, stateFile, type NodeJson, type OperationJson } from '../../emulator/src/state';
import { EmulatorError } from '../../emulator/src/errors';
import { testAddressPrefix } from '../helpers/loopback';

const P = 'projects/local-project/locations/us-central2-b';
/** The key of node `keeper`'s workers and sandbox (emulator/src/names.ts tpuNodeKey). */
const KEEPER = 'tpu/local-project/us-central2-b/keeper';
const tmpDirs: string[] = [];
function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-state-'));
  tmpDirs.push(d);
  return d;
}
after(() => tmpDirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

/** Stand-in for ssh-workers.ts's SshWorkerPool: records what the emulator asks of it. */
class RecordingPool implements WorkerPool {
  readonly workers = new Map<string, WorkerSpec[]>();
  readonly events: string[] = [];
  closed = false;
  async addWorker(spec: WorkerSpec): Promise<void> {
    this.events.push(`add ${spec.nodeId}/${spec.index}@${spec.address}`);
    this.workers.set(spec.nodeId, [...(this.workers.get(spec.nodeId) ?? []), spec]);
  }
  async removeNode(nodeId: string): Promise<void> {
    this.events.push(`remove ${nodeId}`);
    this.workers.delete(nodeId);
  }
  async close(): Promise<void> {
    this.closed = true;
  }
}

async function waitDone(state: EmulatorState, op: OperationJson, timeoutMs = 60_000): Promise<OperationJson> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const o = state.getOperation(op.name);
    if (o.done) return o;
    if (Date.now() > deadline) throw new Error(`operation ${op.name} not done`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A node of `type` with the first runtime version that boots on it (the API refuses a mismatched one). */
const create = (s: EmulatorState, id: string, type = 'v4-8') =>
  s.beginCreate(P, id, { acceleratorType: type, runtimeVersion: runtimeVersionsFor(acceleratorInfo(type) ?? ACCELERATOR_TYPES[0])[0] });

describe('EmulatorState', () => {
  it('walks a node through create → stop → start → delete, with hooks before each report', async () => {
    const seen: string[] = [];
    const state = EmulatorState.load({
      dir: tmp(),
      opDelayMs: 20,
      hooks: {
        nodeUp: async (n) => void seen.push(`up ${n.state}`),
        nodeDown: async (n, reason) => void seen.push(`down ${reason} ${n.state}`),
      },
    });
    try {
      const op = create(state, 'n1', 'v4-32');
      assert.equal(op.done, false);
      assert.equal(op.metadata['@type'], 'type.googleapis.com/google.cloud.tpu.v2.OperationMetadata');
      assert.equal(op.metadata.verb, 'create');
      assert.equal(state.getNode(`${P}/nodes/n1`).state, 'CREATING');
      const done = await waitDone(state, op);
      assert.equal(done.response?.['@type'], 'type.googleapis.com/google.cloud.tpu.v2.Node');
      assert.equal(done.response?.state, 'READY');
      const node = state.getNode(`${P}/nodes/n1`);
      assert.equal(node.state, 'READY');
      assert.equal(node.health, 'HEALTHY');
      assert.equal(node.networkEndpoints.length, 4);

      await waitDone(state, state.beginStop(node.name));
      assert.equal(state.getNode(node.name).state, 'STOPPED');
      assert.throws(() => state.beginStop(node.name), (e: ApiError) => e.status === 'FAILED_PRECONDITION' && /STOPPED/.test(e.message));
      await waitDone(state, state.beginStart(node.name));
      assert.equal(state.getNode(node.name).state, 'READY');

      const del = state.beginDelete(node.name);
      assert.equal(state.getNode(node.name).state, 'DELETING');
      const delDone = await waitDone(state, del);
      assert.equal(delDone.response?.['@type'], 'type.googleapis.com/google.protobuf.Empty');
      assert.throws(() => state.getNode(node.name), (e: ApiError) => e.status === 'NOT_FOUND');
      // Workers come up while the node is still CREATING/STARTING and go down while STOPPING/DELETING.
      assert.deepEqual(seen, ['up CREATING', 'down stop STOPPING', 'up STARTING', 'down delete DELETING']);
    } finally {
      await state.close();
    }
  });

  it('allocates unique worker addresses and frees them on delete', async () => {
    const dir = tmp();
    const state = EmulatorState.load({ dir, opDelayMs: 5, addressPrefix: testAddressPrefix(9) });
    try {
      await waitDone(state, create(state, 'a', 'v5litepod-16'));
      await waitDone(state, create(state, 'b', 'v4-16'));
      const a = state.addressesOf(`${P}/nodes/a`);
      const b = state.addressesOf(`${P}/nodes/b`);
      assert.deepEqual(a, [1, 2, 3, 4].map((i) => `${testAddressPrefix(9)}.${i}`));
      assert.deepEqual(b, [5, 6].map((i) => `${testAddressPrefix(9)}.${i}`));
      await waitDone(state, state.beginDelete(`${P}/nodes/a`));
      await waitDone(state, create(state, 'c', 'v4-8'));
      assert.deepEqual(state.addressesOf(`${P}/nodes/c`), [`${testAddressPrefix(9)}.1`]);
      const saved = JSON.parse(fs.readFileSync(stateFile(dir), 'utf8')) as { addresses: Record<string, string> };
      assert.equal(saved.addresses[`${testAddressPrefix(9)}.1`], `${P}/nodes/c#0`);
      assert.equal(saved.addresses[`${testAddressPrefix(9)}.2`], undefined);
    } finally {
      await state.close();
    }
  });

  it('validates create requests like the API', async () => {
    const state = EmulatorState.load({ dir: tmp(), opDelayMs: 5 });
    try {
      assert.throws(() => create(state, 'Bad_Name'), (e: ApiError) => e.status === 'INVALID_ARGUMENT' && e.message.includes('"Bad_Name"'));
      assert.throws(() => create(state, 'ok', 'v9-8'), (e: ApiError) => e.status === 'INVALID_ARGUMENT' && e.message.includes('v5litepod-16'));
      assert.throws(
        () => state.beginCreate(P, 'ok', { acceleratorType: 'v4-8', runtimeVersion: 'nope' }),
        (e: ApiError) => e.status === 'INVALID_ARGUMENT' && e.message.includes('"nope"') && e.message.includes('v2-alpha-tpuv6e'),
      );
      await waitDone(state, create(state, 'dup'));
      assert.throws(() => create(state, 'dup'), (e: ApiError) => e.status === 'ALREADY_EXISTS');
      // The same id in another zone is another node, as on Cloud TPU (ids are unique per zone).
      const other = state.beginCreate('projects/local-project/locations/us-east5-b', 'dup', { acceleratorType: 'v4-8', runtimeVersion: 'tpu-ubuntu2204-base' });
      await waitDone(state, other);
      assert.equal(state.getNode('projects/local-project/locations/us-east5-b/nodes/dup').state, 'READY');
    } finally {
      await state.close();
    }
  });

  it('settles mid-transition nodes on load and completes their operations', async () => {
    const dir = tmp();
    const first = EmulatorState.load({ dir, opDelayMs: 5 });
    for (const id of ['ready-then-stop', 'ready-then-delete', 'ready-then-start']) await waitDone(first, create(first, id));
    await waitDone(first, first.beginStop(`${P}/nodes/ready-then-start`));
    await first.close();

    // A second "process" whose operations never get to finish.
    const slow = EmulatorState.load({ dir, opDelayMs: 60_000 });
    const ops = [
      create(slow, 'creating'),
      slow.beginStop(`${P}/nodes/ready-then-stop`),
      slow.beginDelete(`${P}/nodes/ready-then-delete`),
      slow.beginStart(`${P}/nodes/ready-then-start`),
    ];
    await slow.close();
    const onDisk = JSON.parse(fs.readFileSync(stateFile(dir), 'utf8')) as { nodes: NodeJson[] };
    assert.equal(onDisk.nodes.find((n) => n.name.endsWith('/creating'))?.state, 'CREATING');

    const reloaded = EmulatorState.load({ dir, opDelayMs: 5 });
    try {
      assert.equal(reloaded.getNode(`${P}/nodes/creating`).state, 'READY');
      assert.equal(reloaded.getNode(`${P}/nodes/ready-then-stop`).state, 'STOPPED');
      assert.equal(reloaded.getNode(`${P}/nodes/ready-then-start`).state, 'READY');
      assert.throws(() => reloaded.getNode(`${P}/nodes/ready-then-delete`), (e: ApiError) => e.status === 'NOT_FOUND');
      for (const op of ops) {
        const o = reloaded.getOperation(op.name);
        assert.equal(o.done, true, op.metadata.verb);
        assert.equal(o.error, undefined);
        assert.ok(o.metadata.endTime);
      }
      assert.equal(reloaded.getOperation(ops[0].name).response?.state, 'READY');
      assert.ok(!fs.readdirSync(dir).some((f) => f.endsWith('.tmp')), 'no temp files left behind');
    } finally {
      await reloaded.close();
    }
  });

  it('a delete supersedes a running create', async () => {
    const state = EmulatorState.load({ dir: tmp(), opDelayMs: 50 });
    try {
      const op = create(state, 'short-lived');
      const del = state.beginDelete(`${P}/nodes/short-lived`);
      assert.equal(state.getOperation(op.name).done, true);
      assert.equal(state.getOperation(op.name).error?.code, 10);
      await waitDone(state, del);
      assert.equal(state.allNodes().length, 0);
    } finally {
      await state.close();
    }
  });
});

describe('Emulator restart', () => {
  const opts = (dir: string, pool: RecordingPool) => ({ dir, opDelayMs: 10, addressPrefix: testAddressPrefix(8), workerPool: () => pool });

  it('keeps its VMs, SSH port and keys across a restart, and brings READY workers back', async () => {
    const dir = tmp();
    const pool1 = new RecordingPool();
    const e1 = new Emulator(opts(dir, pool1));
    const ep1 = await e1.start();
    assert.equal(fs.statSync(endpointFile(dir)).mode & 0o777, 0o600);
    assert.equal(readEmulatorEndpoint(dir)?.restPort, ep1.restPort);
    assert.equal(fs.statSync(path.join(dir, 'keys', 'client_ed25519')).mode & 0o777, 0o600);
    const hostKey = fs.readFileSync(path.join(dir, 'keys', 'ssh_host_ed25519_key'), 'utf8');
    assert.match(hostKey, /BEGIN OPENSSH PRIVATE KEY/);

    await waitDone(e1.state, create(e1.state, 'keeper', 'v4-16'));
    await waitDone(e1.state, create(e1.state, 'sleeper', 'v4-8'));
    await waitDone(e1.state, e1.state.beginStop(`${P}/nodes/sleeper`));
    assert.deepEqual(pool1.workers.get(KEEPER)?.map((w) => w.address), [`${testAddressPrefix(8)}.1`, `${testAddressPrefix(8)}.2`]);
    assert.equal(pool1.workers.get(KEEPER)?.[1].sandboxDir, path.join(dir, 'workers', KEEPER, 'w1'));
    assert.ok(fs.existsSync(path.join(dir, 'workers', KEEPER, 'w1')));
    assert.deepEqual(pool1.workers.get(KEEPER)?.[0].hostnames, [`${testAddressPrefix(8)}.1`, `${testAddressPrefix(8)}.2`]);
    assert.equal(pool1.workers.has('tpu/local-project/us-central2-b/sleeper'), false);
    await e1.stop();
    assert.equal(pool1.closed, true);
    assert.equal(fs.existsSync(endpointFile(dir)), false);

    const pool2 = new RecordingPool();
    const e2 = new Emulator(opts(dir, pool2));
    const ep2 = await e2.start();
    try {
      assert.equal(ep2.sshPort, ep1.sshPort);
      assert.equal(fs.readFileSync(path.join(dir, 'keys', 'ssh_host_ed25519_key'), 'utf8'), hostKey);
      assert.equal(e2.state.getNode(`${P}/nodes/keeper`).state, 'READY');
      assert.equal(e2.state.getNode(`${P}/nodes/sleeper`).state, 'STOPPED');
      assert.deepEqual(pool2.events, [`add ${KEEPER}/0@${testAddressPrefix(8)}.1`, `add ${KEEPER}/1@${testAddressPrefix(8)}.2`]);
    } finally {
      await e2.stop();
    }
  });

  it('with the real SSH workers, a worker keeps its files across a restart', async () => {
    const dir = tmp();
    const e1 = new Emulator({ dir, opDelayMs: 10, addressPrefix: testAddressPrefix(5) });
    const ep1 = await e1.start();
    try {
      await waitDone(e1.state, create(e1.state, 'real', 'v4-16'));
      const out = await sshExec(`${testAddressPrefix(5)}.2`, ep1.sshPort, ep1.username, ep1.clientKeyPath, 'echo kept > marker.txt && echo "$TPU_WORKER_ID $TPU_WORKER_HOSTNAMES $HOME"');
      assert.equal(out.trim(), `1 ${testAddressPrefix(5)}.1,${testAddressPrefix(5)}.2 ${path.join(dir, 'workers', 'tpu/local-project/us-central2-b/real', 'w1')}`);
    } finally {
      await e1.stop();
    }
    await assert.rejects(sshExec(`${testAddressPrefix(5)}.2`, ep1.sshPort, ep1.username, ep1.clientKeyPath, 'true'), 'workers are down while the emulator is');
    const e2 = new Emulator({ dir, opDelayMs: 10, addressPrefix: testAddressPrefix(5) });
    const ep2 = await e2.start();
    try {
      assert.equal(ep2.sshPort, ep1.sshPort);
      assert.equal((await sshExec(`${testAddressPrefix(5)}.2`, ep2.sshPort, ep2.username, ep2.clientKeyPath, 'cat marker.txt')).trim(), 'kept');
    } finally {
      await e2.stop();
    }
  });

  it('refuses a second emulator on the same directory', async () => {
    const dir = tmp();
    const e1 = new Emulator(opts(dir, new RecordingPool()));
    await e1.start();
    try {
      await assert.rejects(new Emulator(opts(dir, new RecordingPool())).start(), (e) => e instanceof EmulatorError && e.code === 'FAILED_PRECONDITION' && /already running/.test(e.message));
    } finally {
      await e1.stop();
    }
    // The lock is released on stop.
    const e3 = new Emulator(opts(dir, new RecordingPool()));
    await e3.start();
    await e3.stop();
  });
});

/** Runs one command over SSH with the emulator's client key; pins nothing (known_hosts is not under test here). */
function sshExec(host: string, port: number, username: string, keyPath: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = new Client();
    c.on('ready', () => {
      c.exec(command, (e, stream) => {
        if (e) return reject(e);
        let out = '';
        stream.on('data', (d: Buffer) => (out += d.toString()));
        stream.stderr.on('data', (d: Buffer) => (out += d.toString()));
        stream.on('close', () => {
          c.end();
          resolve(out);
        });
      });
    });
    c.on('error', reject);
    c.connect({ host, port, username, privateKey: fs.readFileSync(keyPath), readyTimeout: 5000 });
  });
}

describe('emulator daemon', () => {
  it('starts detached, is idempotent, reports status and stops on SIGTERM', async () => {
    const home = tmp();
    const dir = path.join(home, 'emulator');
    const daemonTs = path.resolve(__dirname, '../../emulator/src/daemon.ts');
    // The CLI bundle is not needed here: the child runs the same entry point from source, with a stand-in pool.
    const script = `require(${JSON.stringify(daemonTs)}).runEmulatorForeground({ workerPool: () => ({ addWorker: async () => {}, removeNode: async () => {}, close: async () => {} }) }).catch((e) => { console.error(e); process.exit(1); });`;
    const command = [process.execPath, '--import', 'tsx', '-e', script];
    const ep = await startEmulatorDaemon({ dir, command, opDelayMs: 10, project: 'daemon-project' });
    try {
      assert.notEqual(ep.pid, process.pid);
      assert.equal(ep.project, 'daemon-project');
      const again = await startEmulatorDaemon({ dir, command });
      assert.equal(again.pid, ep.pid);
      const status = await emulatorStatus({ dir });
      assert.ok(status.running);
      assert.equal(status.running && status.nodes, 0);
    } finally {
      assert.equal(await stopEmulatorDaemon({ dir }), true);
    }
    const after = await emulatorStatus({ dir });
    assert.equal(after.running, false);
    assert.match(after.running ? '' : after.message, /tpw emulator start/);
    assert.equal(fs.existsSync(endpointFile(dir)), false);
    assert.match(fs.readFileSync(path.join(dir, 'emulator.log'), 'utf8'), /emulator started[\s\S]*received SIGTERM/);
    assert.equal(await stopEmulatorDaemon({ dir }), false);
  });
});
