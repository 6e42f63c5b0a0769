/**
 * Issue 14, recreate after a preemption keeps how a Compute Engine VM was provisioned: a flex-start VM (Compute
 * Engine deletes it when its run ends: termination action DELETE) comes back through `tpw resume` as flex-start with
 * the same max run duration, and a VM on a named reservation comes back on that reservation. What is compared is
 * the instance as the real `@google-cloud/compute` client reads it back from the emulator: scheduling and
 * reservationAffinity of the new VM equal the original's.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { emulatorComputeClients, type ComputeClients, type IInstance } from '../../extension/src/core/compute/client';
import { openBackend } from '../../extension/src/core/backend';
import { Emulator } from '../../emulator/src/emulator';
import { recreateNode } from '../../extension/src/core/run/preemption';
import { loadRun } from '../../extension/src/core/run/registry';
import { findNode } from '../../extension/src/core/slices/find';
import { runTpw, writeRecipeIn } from '../helpers/cli';
import { testAddressPrefix } from '../helpers/loopback';

const Z = 'us-east5-b';
let home = '';
let ws = '';
let emu: Emulator | undefined;
let clients: ComputeClients;
const savedHome = process.env.TPW_HOME;
const tpw = (...argv: string[]) => runTpw(ws, argv);

before(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-recreate-'));
  ws = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-recreate-ws-'));
  process.env.TPW_HOME = home;
  emu = new Emulator({ dir: path.join(home, 'emulator'), opDelayMs: 30, addressPrefix: testAddressPrefix(151) });
  clients = emulatorComputeClients(await emu.start());
});

after(async () => {
  await clients?.close();
  await emu?.stop();
  fs.rmSync(ws, { recursive: true, force: true });
  fs.rmSync(home, { recursive: true, force: true });
  if (savedHome === undefined) delete process.env.TPW_HOME;
  else process.env.TPW_HOME = savedHome;
});

async function instance(name: string): Promise<IInstance> {
  const ep = emu?.endpoint;
  assert.ok(ep);
  return (await clients.instances.get({ project: ep.project, zone: Z, instance: name }))[0];
}

/** What a recreate must keep, as the client reads it (ids, times and status differ between two VMs by nature). */
function provisioningOf(i: IInstance): unknown {
  return plain({ scheduling: i.scheduling, reservationAffinity: i.reservationAffinity ?? null, machineType: i.machineType?.split('/').pop() });
}

/** The client's message objects as plain data: its oneof markers (`_field`) and empty repeated fields left out. */
function plain(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(plain);
  if (!v || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    if (k.startsWith('_') || (Array.isArray(x) && x.length === 0)) continue;
    out[k] = typeof x === 'object' && x !== null && 'low' in x && 'high' in x ? String(x) : plain(x);
  }
  return out;
}

async function preempt(name: string): Promise<void> {
  const ep = emu?.endpoint;
  assert.ok(ep);
  const res = await fetch(`http://${ep.host}:${ep.restPort}/emulator/v1/compute/projects/${ep.project}/zones/${Z}/instances/${name}:preempt`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ep.token}` },
  });
  assert.equal(res.status, 200);
}

test('a flex-start VM that Compute Engine deleted mid-run comes back on resume as flex-start with the same run duration', async () => {
  const c = await tpw('vm', 'create', 'flex', '--type', 'tpu7x-8', '--zone', Z, '--flex-start', '--max-run-duration', '2h');
  assert.equal(c.code, 0, c.err.join('\n'));
  const original = provisioningOf(await instance('flex'));
  assert.deepEqual((original as { scheduling: unknown }).scheduling, {
    provisioningModel: 'FLEX_START', instanceTerminationAction: 'DELETE', maxRunDuration: { seconds: '7200' }, onHostMaintenance: 'TERMINATE', automaticRestart: false,
  });

  const recipe = writeRecipeIn(ws, 'long.sh', `bash -c 'if [ -e resumed ]; then echo resumed; exit 0; fi; trap "" TERM; echo up; for i in $(seq 1 600); do sleep 0.1; done'\n`);
  const running = tpw('run', recipe, '--vm', 'flex');
  let runId = '';
  for (let i = 0; i < 200; i++) {
    runId = (await tpw('runs')).out.find((x) => /\bflex\b/.test(x))?.split(/\s+/)[0] ?? '';
    if (runId && (await tpw('logs', runId)).out.includes('[w0] up')) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  assert.ok(runId);
  assert.equal(loadRun(runId, home).recreate?.[0]?.compute?.provisioning, 'flex-start', 'the run records how to make the VM again');
  await preempt('flex');
  const ended = await running;
  assert.notEqual(ended.code, 0);
  await assert.rejects(instance('flex'), (e: { code?: number }) => e.code === 5, 'Compute Engine deleted it (termination action DELETE)');

  fs.writeFileSync(path.join(ws, 'resumed'), '');
  const again = await tpw('resume', runId);
  assert.equal(again.code, 0, again.err.join('\n'));
  assert.ok(again.out.includes('[w0] resumed'), again.out.join('\n'));
  assert.match(again.err.join('\n'), /Creating flex \(tpu7x-8, flex-start\)/);
  assert.deepEqual(provisioningOf(await instance('flex')), original);
  assert.equal((await tpw('vm', 'delete', 'flex')).code, 0);
});

test('a VM on a named reservation is recreated on the same reservation, with the same scheduling', async () => {
  const c = await tpw('vm', 'create', 'resv', '--type', 'tpu7x-8', '--zone', Z, '--reserved', '--reservation', 'iron-block');
  assert.equal(c.code, 0, c.err.join('\n'));
  const original = provisioningOf(await instance('resv'));
  assert.deepEqual((original as { reservationAffinity: unknown }).reservationAffinity, {
    consumeReservationType: 'SPECIFIC_RESERVATION', key: 'compute.googleapis.com/reservation-name', values: ['iron-block'],
  });
  await preempt('resv');
  const backend = await openBackend({ useEmulator: true });
  try {
    const { node } = await findNode(backend, 'resv');
    assert.equal(node.compute?.reservation, 'iron-block');
    const back = await recreateNode(backend.api, node);
    assert.equal(back.state, 'READY');
    assert.equal(back.compute?.provisioning, 'reservation');
  } finally {
    await backend.close();
  }
  assert.deepEqual(provisioningOf(await instance('resv')), original);
  assert.equal((await tpw('vm', 'delete', 'resv')).code, 0);
});
