/**
 * What the emulator's Compute Engine and Cloud TPU APIs once took silently or could not recover from, over REST:
 * a MIG whose baseInstanceName is no resource name (its instances' sandboxes would be made and deleted outside
 * the emulator's folder), malformed labels and metadata (Google answers 400 naming the field), a MIG resized past
 * the emulator's 254 worker addresses (the addresses it took were never given back), and a state file whose
 * Compute Engine part is malformed (a bare TypeError at start, instead of the message naming the file).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { Emulator } from '../../emulator/src/emulator';
import { stateFile } from '../../emulator/src/state';
import type { EmulatorEndpoint } from '../../protocol/node/emulator-endpoint';
import { emulatorRequest } from '../helpers/emulator-http';
import { testAddressPrefix } from '../helpers/loopback';

const P = '/compute/v1/projects/local-project';
const Z = `${P}/zones/us-east5-b`;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-compute-checks-'));
let emu: Emulator;
let ep: EmulatorEndpoint;
const pool = () => ({ addWorker: async () => undefined, removeNode: async () => undefined, close: async () => undefined });

before(async () => {
  emu = new Emulator({ dir, opDelayMs: 20, addressPrefix: testAddressPrefix(242), workerPool: pool });
  ep = await emu.start();
});
after(async () => {
  await emu.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const post = (p: string, body: unknown) => emulatorRequest(ep, 'POST', p, body);
const reason = (b: Record<string, unknown>) => JSON.stringify(b);

async function settle(): Promise<void> {
  // The fake workers come up at once; a few operation delays are enough for every reconcile to end.
  await new Promise((r) => setTimeout(r, 300));
}

test('a MIG whose baseInstanceName is no resource name is refused (400), and nothing is made', async () => {
  assert.equal((await post(`${P}/global/instanceTemplates`, { name: 't1', properties: { machineType: 'tpu7x-standard-4t' } })).status, 200);
  for (const base of ['../../../tmp/escape', 'UPPER', 'a/b', '', 'x'.repeat(59)]) {
    const r = await post(`${Z}/instanceGroupManagers`, { name: 'g', baseInstanceName: base, instanceTemplate: 'global/instanceTemplates/t1', targetSize: 1 });
    assert.equal(r.status, 400, `${base}: ${reason(r.body)}`);
    assert.match(reason(r.body), /resource\.baseInstanceName/);
  }
  await settle();
  assert.deepEqual((await emulatorRequest(ep, 'GET', `${Z}/instances`)).body.items ?? [], []);
  assert.equal(fs.existsSync(path.join(dir, 'workers', 'compute', 'local-project', 'us-east5-b')), false);
});

test('malformed labels and metadata are 400 naming the field, on Compute Engine and Cloud TPU alike', async () => {
  const bad: [string, Record<string, unknown>, RegExp][] = [
    ['labels key', { labels: { 'Bad Key': 'x' } }, /resource\.labels.*label key 'Bad Key'/],
    ['labels value', { labels: { team: 'ML Team' } }, /resource\.labels.*label 'team'/],
    ['labels type', { labels: ['a'] }, /resource\.labels/],
    ['metadata key', { metadata: { items: [{ key: 'bad key', value: 'v' }] } }, /resource\.metadata\.items.*metadata key 'bad key'/],
    ['metadata value', { metadata: { items: [{ key: 'k', value: 7 }] } }, /resource\.metadata\.items\[0\]\.value/],
    ['metadata size', { metadata: { items: [{ key: 'startup-script', value: 'x'.repeat(300 * 1024) }] } }, /at most 262144/],
  ];
  for (const [what, extra, why] of bad) {
    const r = await post(`${Z}/instances`, { name: 'labelled', machineType: 'zones/us-east5-b/machineTypes/tpu7x-standard-4t', ...extra });
    assert.equal(r.status, 400, `${what}: ${reason(r.body)}`);
    assert.match(reason(r.body), why, what);
  }
  const node = await post('/v2/projects/local-project/locations/us-central2-b/nodes?nodeId=labelled', { acceleratorType: 'v4-8', runtimeVersion: 'tpu-ubuntu2204-base', labels: { Team: 'x' } });
  assert.equal(node.status, 400, reason(node.body));
  assert.match(reason(node.body), /labels.*label key 'Team'/);
  const meta = await post('/v2/projects/local-project/locations/us-central2-b/nodes?nodeId=labelled', { acceleratorType: 'v4-8', runtimeVersion: 'tpu-ubuntu2204-base', metadata: { 'no spaces': 'x' } });
  assert.equal(meta.status, 400, reason(meta.body));
  const good = await post(`${Z}/instances`, { name: 'labelled', machineType: 'zones/us-east5-b/machineTypes/tpu7x-standard-4t', labels: { team: 'ml', 'tpw-accelerator-type': 'tpu7x-8' }, metadata: { items: [{ key: 'startup-script', value: 'echo hi' }] } });
  assert.equal(good.status, 200, reason(good.body));
});

test('a MIG resized past the emulator\'s addresses fails and gives back what it took: other VMs can still be made', async () => {
  assert.equal((await post(`${Z}/instanceGroupManagers`, { name: 'huge', instanceTemplate: 'global/instanceTemplates/t1', targetSize: 1 })).status, 200);
  await settle();
  assert.equal((await post(`${Z}/instanceGroupManagers/huge/resize?size=300`, {})).status, 200);
  await settle();
  const managed = await post(`${Z}/instanceGroupManagers/huge/listManagedInstances`, {});
  const running = (managed.body.managedInstances as { instanceStatus?: string }[]).filter((m) => m.instanceStatus === 'RUNNING');
  assert.equal(running.length, 1, 'the slice stays as it was: all or nothing');
  assert.match(reason(managed.body), /no free worker addresses/);
  const after = await post(`${Z}/instances`, { name: 'still-room', machineType: 'zones/us-east5-b/machineTypes/tpu7x-standard-4t' });
  assert.equal(after.status, 200, reason(after.body));
  await settle();
  assert.equal((await emulatorRequest(ep, 'GET', `${Z}/instances/still-room`)).body.status, 'RUNNING');
});

test('a state file whose Compute Engine part is malformed stops the start with the message naming the file', async () => {
  const other = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-compute-state-'));
  try {
    fs.writeFileSync(stateFile(other), JSON.stringify({ version: 1, nodes: [], operations: [], addresses: {}, compute: { instances: [{ name: 'x' }] } }), { mode: 0o600 });
    const e = new Emulator({ dir: other, opDelayMs: 20, addressPrefix: testAddressPrefix(243), workerPool: pool });
    await assert.rejects(e.start(), (err: Error) => err.message.includes(stateFile(other)) && /compute\.instances\.0\.selfLink/.test(err.message) && !/TypeError/.test(err.message));
  } finally {
    fs.rmSync(other, { recursive: true, force: true });
  }
});
