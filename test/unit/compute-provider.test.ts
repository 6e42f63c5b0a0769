/**
 * Issue 14, the Compute Engine control plane: the TPU machine-type catalog, and the provider through the real
 * `@google-cloud/compute` clients (REST) against a real emulator — single-host TPU VMs (on-demand, spot,
 * flex-start, reservation), a 2-VM tpu7x-16 slice (workload policy → template → MIG) with one SSH worker per VM,
 * start/stop, SSH keys through metadata, delete (only what the slice create made), and every error path:
 * stockout (single host and atomic MIG, with nothing left behind), quota, 403, API not enabled, invalid
 * topology, name taken, latency.
 *
 * Expected shapes come from Google's TPU pages: v5p's configuration table (2x2x1: 8 cores, 4 chips, 1 host;
 * 2x2x2: 16 cores, 8 chips, 2 hosts), v5e's VM types (ct5lp-hightpu-1t/4t/8t with 1/4/8 chips), the TPU7x page
 * (two TensorCores per chip; Compute Engine or GKE only), and issue 14 (a 2x2x2 TPU7x topology is 2 VMs).
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Emulator } from '../../emulator/src/emulator';
import { emulatorComputeClients, type ComputeClients } from '../../extension/src/core/compute/client';
import { ComputeTpuProvider } from '../../extension/src/core/compute/provider';
import { listSliceShapes, resolveSliceShape, shapeFromTopology } from '../../extension/src/core/compute/tpu-machine-types';
import { isTpwError, type TpwError } from '../../extension/src/core/errors';
import { emulatorCall, sshBanner, startEmulatorApi, type EmulatorApi } from '../helpers/emulator-api';
import { testAddressPrefix } from '../helpers/loopback';

const P = 'local-project';
const Z = 'us-east5-b';
const R = 'us-east5';
const isErr = (code: TpwError['code'], re: RegExp) => (e: unknown) => {
  if (isTpwError(e, code) && re.test(e.message)) return true;
  assert.fail(`expected ${code} matching ${re}, got ${isTpwError(e) ? `${e.code}: ${e.message}` : String(e)}`);
};

describe('TPU machine types on Compute Engine', () => {
  it('maps accelerator types to machine types, chips, VMs and devices', () => {
    const t = (type: string, topology?: string) => {
      const s = resolveSliceShape(type, topology);
      return [s.machineType, s.chips, s.vmCount, s.topology, s.devices, s.tpuApiOffers];
    };
    assert.deepEqual(t('tpu7x-8'), ['tpu7x-standard-4t', 4, 1, '2x2x1', 8, false]);
    assert.deepEqual(t('tpu7x-16'), ['tpu7x-standard-4t', 8, 2, '2x2x2', 16, false]);
    assert.deepEqual(t('tpu7x-2'), ['tpu7x-standard-1t', 1, 1, '1x1x1', 2, false]);
    assert.deepEqual(t('v5p-8'), ['ct5p-hightpu-4t', 4, 1, '2x2x1', 4, true]);
    assert.deepEqual(t('v5p-16'), ['ct5p-hightpu-4t', 8, 2, '2x2x2', 8, true]);
    assert.deepEqual(t('v4-8'), ['ct4p-hightpu-4t', 4, 1, '2x2x1', 4, true]);
    assert.deepEqual(t('v6e-8'), ['ct6e-standard-8t', 8, 1, '2x4', 8, true]);
    assert.deepEqual(t('v6e-1'), ['ct6e-standard-1t', 1, 1, '1x1', 1, true]);
    assert.deepEqual(t('v5litepod-4'), ['ct5lp-hightpu-4t', 4, 1, '2x2', 4, true]);
    assert.deepEqual(t('v5litepod-16'), ['ct5lp-hightpu-4t', 16, 4, '4x4', 16, true]);
    assert.equal(shapeFromTopology('tpu7x', '2x2x2').acceleratorType, 'tpu7x-16');
    assert.ok(listSliceShapes().some((s) => s.acceleratorType === 'tpu7x-16' && s.vmCount === 2));
  });

  it('names the type or the topology at fault', () => {
    assert.throws(() => resolveSliceShape('tpu9-8'), isErr('INVALID_ARGUMENT', /Unknown TPU accelerator type "tpu9-8"/));
    assert.throws(() => resolveSliceShape('tpu7x-7'), isErr('INVALID_ARGUMENT', /"tpu7x-7".*even/));
    assert.throws(() => resolveSliceShape('v6e-3'), isErr('INVALID_ARGUMENT', /"v6e-3"/));
    assert.throws(() => resolveSliceShape('tpu7x-16', '2x2x1'), isErr('INVALID_ARGUMENT', /Topology "2x2x1" is not valid for tpu7x-16: it has 4 chips/));
    assert.throws(() => resolveSliceShape('tpu7x-16', '4x2'), isErr('INVALID_ARGUMENT', /Topology "4x2".*3 dimensions/));
    assert.throws(() => resolveSliceShape('tpu7x-24', '1x3x4'), isErr('INVALID_ARGUMENT', /Topology "1x3x4"/));
  });
});

describe('Compute Engine provider against the emulator', () => {
  let fx: EmulatorApi;
  let clients: ComputeClients;
  let cp: ComputeTpuProvider;

  before(async () => {
    fx = await startEmulatorApi('tpw-compute-', { opDelayMs: 40, addressPrefix: testAddressPrefix(141) });
    clients = emulatorComputeClients(fx.ep);
    cp = new ComputeTpuProvider(clients);
  });
  after(async () => {
    await cp.close();
    await fx.close();
  });

  it('creates an on-demand TPU7x VM whose worker answers SSH, stops and starts it, and deletes it', async () => {
    const progress: boolean[] = [];
    const s = await cp.createSlice({ project: P, zone: Z, name: 'iron-1', acceleratorType: 'tpu7x-8' }, { onProgress: (p) => progress.push(p.done) });
    assert.equal(s.kind, 'instance');
    assert.equal(s.state, 'READY');
    assert.equal(s.machineType, 'tpu7x-standard-4t');
    assert.equal(s.acceleratorType, 'tpu7x-8');
    assert.equal(s.provisioning, 'on-demand');
    assert.equal(s.workers.length, 1);
    assert.ok(progress.includes(true) && progress[0] === false);
    assert.match(await sshBanner(s.workers[0].internalIp, fx.ep.sshPort), /^SSH-2\.0-/);
    assert.deepEqual((await cp.listSlices(P, Z)).map((x) => x.name), ['iron-1']);

    const stopped = await cp.stopSlice(P, Z, 'iron-1');
    assert.equal(stopped.state, 'STOPPED');
    assert.equal(stopped.status, 'TERMINATED');
    await assert.rejects(sshBanner(s.workers[0].internalIp, fx.ep.sshPort));
    const started = await cp.startSlice(P, Z, 'iron-1');
    assert.equal(started.state, 'READY');
    assert.match(await sshBanner(s.workers[0].internalIp, fx.ep.sshPort), /^SSH-2\.0-/);

    const keyed = await cp.addSshKeys(P, Z, 'iron-1', ['alice:ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB alice']);
    assert.match(keyed.metadata['ssh-keys'], /^alice:ssh-ed25519 /);
    const again = await cp.addSshKeys(P, Z, 'iron-1', ['alice:ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB alice', 'bob:ssh-ed25519 AAAAB bob']);
    assert.equal(again.metadata['ssh-keys'].split('\n').length, 2);

    await cp.deleteSlice(P, Z, 'iron-1');
    await assert.rejects(cp.getSlice(P, Z, 'iron-1'), isErr('NOT_FOUND', /TPU VM "iron-1" was not found/));
    await assert.rejects(sshBanner(s.workers[0].internalIp, fx.ep.sshPort));
  });

  it('sends spot, flex-start and reservation scheduling as Compute Engine takes them', async () => {
    const spot = await cp.createSlice({ project: P, zone: Z, name: 'sp-1', acceleratorType: 'v6e-1', provisioning: 'spot' });
    assert.equal(spot.provisioning, 'spot');
    const flex = await cp.createSlice({ project: P, zone: Z, name: 'fx-1', acceleratorType: 'v5litepod-4', provisioning: 'flex-start', maxRunDurationSeconds: 7200 });
    assert.equal(flex.provisioning, 'flex-start');
    const res = await cp.createSlice({ project: P, zone: Z, name: 'rs-1', acceleratorType: 'v5p-8', provisioning: 'reservation', reservation: 'my-res' });
    assert.equal(res.provisioning, 'reservation');
    // What reached the server, read past the client.
    const raw = (name: string) => emulatorCall(fx.ep, 'GET', `/compute/v1/projects/${P}/zones/${Z}/instances/${name}`).then((r) => r.body);
    assert.deepEqual(((await raw('sp-1')).scheduling as Record<string, unknown>).provisioningModel, 'SPOT');
    const fs = (await raw('fx-1')).scheduling as Record<string, unknown>;
    assert.equal(fs.provisioningModel, 'FLEX_START');
    assert.deepEqual(fs.maxRunDuration, { seconds: '7200' });
    assert.equal(fs.instanceTerminationAction, 'DELETE');
    assert.deepEqual((await raw('rs-1')).reservationAffinity, { consumeReservationType: 'SPECIFIC_RESERVATION', key: 'compute.googleapis.com/reservation-name', values: ['my-res'] });
    await assert.rejects(
      cp.createSlice({ project: P, zone: Z, name: 'fx-2', acceleratorType: 'v5litepod-4', provisioning: 'flex-start' }),
      isErr('INVALID_ARGUMENT', /Flex-start TPU VM "fx-2" needs a maximum run duration/),
    );
    for (const n of ['sp-1', 'fx-1', 'rs-1']) await cp.deleteSlice(P, Z, n);
  });

  it('makes a 2-VM tpu7x-16 slice (policy, template, MIG), workers in worker-id order, and deletes only what it made', async () => {
    // Someone else's template in the project: a slice delete must leave it.
    const [op] = await clients.templates.insert({ project: P, instanceTemplateResource: { name: 'theirs', properties: { machineType: 'tpu7x-standard-4t' } } });
    assert.ok(op);
    const s = await cp.createSlice({ project: P, zone: Z, name: 'iron-slice', acceleratorType: 'tpu7x-16' });
    assert.equal(s.kind, 'mig');
    assert.equal(s.state, 'READY');
    assert.equal(s.topology, '2x2x2');
    assert.equal(s.acceleratorType, 'tpu7x-16');
    assert.deepEqual(s.workers.map((w) => w.index), [0, 1]);
    for (const w of s.workers) {
      assert.match(w.instance, /^iron-slice-/);
      assert.match(await sshBanner(w.internalIp, fx.ep.sshPort), /^SSH-2\.0-/);
    }
    // The workers' ids are the VMs' agent-worker-number, as their worker environment says.
    const members = await Promise.all(s.workers.map((w) => clients.instances.get({ project: P, zone: Z, instance: w.instance }).then((r) => r[0])));
    assert.deepEqual(members.map((m) => m.metadata?.items?.find((i) => i.key === 'agent-worker-number')?.value), ['0', '1']);
    // Listed once, as a slice: its VMs are not listed on their own.
    assert.deepEqual((await cp.listSlices(P, Z)).map((x) => `${x.kind}:${x.name}`), ['mig:iron-slice']);
    await assert.rejects(cp.stopSlice(P, Z, 'iron-slice'), isErr('FAILED_PRECONDITION', /multi-host slice/));

    await cp.deleteSlice(P, Z, 'iron-slice');
    const [migs] = await clients.migs.list({ project: P, zone: Z });
    assert.deepEqual(migs, []);
    const [templates] = await clients.templates.list({ project: P });
    assert.deepEqual(templates.map((t) => t.name), ['theirs']);
    const [policies] = await clients.policies.list({ project: P, region: R });
    assert.deepEqual(policies, []);
    const [instances] = await clients.instances.list({ project: P, zone: Z });
    assert.deepEqual(instances, []);
    for (const w of s.workers) await assert.rejects(sshBanner(w.internalIp, fx.ep.sshPort));
    await clients.templates.delete({ project: P, instanceTemplate: 'theirs' });
  });

  it('stockout: a single VM and an atomic MIG both fail as RESOURCE_EXHAUSTED naming the zone, leaving nothing', async () => {
    fx.emu.rest.addCapacityFault({ zone: Z, acceleratorType: 'tpu7x-8' });
    fx.emu.rest.addCapacityFault({ zone: Z, acceleratorType: 'tpu7x-16' });
    try {
      await assert.rejects(cp.createSlice({ project: P, zone: Z, name: 'so-1', acceleratorType: 'tpu7x-8' }), isErr('RESOURCE_EXHAUSTED', /No capacity of tpu7x-8 in zone us-east5-b.*ZONE_RESOURCE_POOL_EXHAUSTED/));
      await assert.rejects(cp.createSlice({ project: P, zone: Z, name: 'so-2', acceleratorType: 'tpu7x-16' }), isErr('RESOURCE_EXHAUSTED', /No capacity of tpu7x-16 in zone us-east5-b/));
    } finally {
      fx.emu.rest.clearFaults();
    }
    assert.deepEqual((await clients.migs.list({ project: P, zone: Z }))[0], []);
    assert.deepEqual((await clients.templates.list({ project: P }))[0], []);
    assert.deepEqual((await clients.policies.list({ project: P, region: R }))[0], []);
  });

  it('refuses a workload-policy topology that does not fit the machine type, and a taken name', async () => {
    await clients.policies.insert({ project: P, region: R, resourcePolicyResource: { name: 'wp', workloadPolicy: { type: 'HIGH_THROUGHPUT', acceleratorTopology: '2x4' } } });
    await clients.templates.insert({ project: P, instanceTemplateResource: { name: 'tp', properties: { machineType: 'tpu7x-standard-4t' } } });
    await assert.rejects(
      clients.migs.insert({ project: P, zone: Z, instanceGroupManagerResource: { name: 'bad', baseInstanceName: 'bad', targetSize: 2, instanceTemplate: `projects/${P}/global/instanceTemplates/tp`, resourcePolicies: { workloadPolicy: `projects/${P}/regions/${R}/resourcePolicies/wp` } } }),
      (e: { code?: number; message?: string }) => e.code === 3 && /accelerator topology '2x4' is not supported for machine type 'tpu7x-standard-4t'/.test(e.message ?? ''),
    );
    await clients.templates.delete({ project: P, instanceTemplate: 'tp' });
    await clients.policies.delete({ project: P, region: R, resourcePolicy: 'wp' });
    await cp.createSlice({ project: P, zone: Z, name: 'taken', acceleratorType: 'v6e-1' });
    await assert.rejects(cp.createSlice({ project: P, zone: Z, name: 'taken', acceleratorType: 'v6e-1' }), isErr('ALREADY_EXISTS', /TPU VM "taken" already exists in local-project\/us-east5-b/));
    await cp.deleteSlice(P, Z, 'taken');
  });

  it('serves zones, TPU machine types, the TPU VM image and MIG resize to the real client', async () => {
    const [zones] = await clients.zones.list({ project: P });
    assert.ok(zones.some((z) => z.name === Z && z.region?.endsWith(`/regions/${R}`)));
    const [types] = await clients.machineTypes.list({ project: P, zone: Z });
    assert.ok(['tpu7x-standard-4t', 'ct6e-standard-8t', 'ct5p-hightpu-4t', 'ct4p-hightpu-4t'].every((t) => types.some((x) => x.name === t)));
    const [image] = await clients.images.getFromFamily({ project: 'ubuntu-os-accelerator-images', family: 'tpu-vm-ubuntu2204-base' });
    assert.equal(image.status, 'READY');

    await clients.templates.insert({ project: P, instanceTemplateResource: { name: 'rs-tpl', properties: { machineType: 'ct6e-standard-1t' } } });
    await clients.migs.insert({ project: P, zone: Z, instanceGroupManagerResource: { name: 'rs', baseInstanceName: 'rs', targetSize: 1, instanceTemplate: `projects/${P}/global/instanceTemplates/rs-tpl` } });
    const running = async (want: number) => {
      for (let i = 0; i < 100; i++) {
        const [managed] = await clients.migs.listManagedInstances({ project: P, zone: Z, instanceGroupManager: 'rs' });
        if (managed.length === want && managed.every((m) => m.instanceStatus === 'RUNNING')) return managed;
        await new Promise((r) => setTimeout(r, 30));
      }
      assert.fail(`MIG rs never had ${want} RUNNING instances`);
    };
    await running(1);
    await clients.migs.resize({ project: P, zone: Z, instanceGroupManager: 'rs', size: 2 });
    const two = await running(2);
    assert.equal((await clients.migs.get({ project: P, zone: Z, instanceGroupManager: 'rs' }))[0].targetSize, 2);
    const ips = await Promise.all(two.map(async (m) => (await clients.instances.get({ project: P, zone: Z, instance: m.name ?? '' }))[0].networkInterfaces?.[0]?.networkIP ?? ''));
    for (const ip of ips) assert.match(await sshBanner(ip, fx.ep.sshPort), /^SSH-2\.0-/);
    await clients.migs.resize({ project: P, zone: Z, instanceGroupManager: 'rs', size: 0 });
    await running(0);
    for (const ip of ips) await assert.rejects(sshBanner(ip, fx.ep.sshPort));
    const [op] = await clients.migs.delete({ project: P, zone: Z, instanceGroupManager: 'rs' });
    const opName = (op as unknown as { latestResponse: { name: string } }).latestResponse.name;
    await clients.zoneOps.wait({ project: P, zone: Z, operation: opName });
    await clients.templates.delete({ project: P, instanceTemplate: 'rs-tpl' });
  });

  it('quota, 403, API not enabled and latency reach the user as TpwErrors with a next step', async () => {
    fx.emu.rest.addFault({ method: 'compute\\.instances\\.insert', code: 429 });
    await assert.rejects(cp.createSlice({ project: P, zone: Z, name: 'q-1', acceleratorType: 'v6e-1' }), isErr('RESOURCE_EXHAUSTED', /Quota exhausted.*TPU VM "q-1".*Request more quota/));
    fx.emu.rest.addFault({ method: 'compute\\.instances\\.list', code: 403 });
    await assert.rejects(cp.listSlices(P, Z), isErr('PERMISSION_DENIED', /Permission denied to list TPU VMs in local-project\/us-east5-b/));
    fx.emu.rest.setServiceDisabled(true);
    try {
      await assert.rejects(cp.listSlices(P, Z), isErr('API_DISABLED', /Compute Engine API is not enabled in project local-project: enable compute\.googleapis\.com at https:\/\/console\.developers\.google\.com\/apis\/api\/compute\.googleapis\.com\//));
    } finally {
      fx.emu.rest.setServiceDisabled(false);
    }
    fx.emu.rest.setLatency(150);
    try {
      const t0 = Date.now();
      await cp.listSlices(P, Z);
      assert.ok(Date.now() - t0 >= 150);
    } finally {
      fx.emu.rest.clearFaults();
    }
    const bad = await emulatorCall(fx.ep, 'GET', `/compute/v1/projects/${P}/zones/${Z}/instances/nope`);
    assert.equal(bad.status, 404);
    assert.deepEqual((bad.body.error as { errors: { reason: string }[] }).errors[0].reason, 'notFound');
  });
});

const clientsByEmu = new WeakMap<Emulator, ComputeClients>();
/** The raw clients of an emulator's current endpoint (closed with it in the test's finally). */
function clients0(emu: Emulator): ComputeClients {
  let c = clientsByEmu.get(emu);
  if (!c) {
    c = emulatorComputeClients(emu.endpoint!);
    clientsByEmu.set(emu, c);
  }
  return c;
}

describe('Compute Engine state across an emulator restart', () => {
  it('keeps a slice, its workers (same addresses, answering SSH) and its spot VM preempted by Compute Engine', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-compute-restart-'));
    const opts = { dir, opDelayMs: 30, addressPrefix: testAddressPrefix(143) };
    let emu = new Emulator(opts);
    try {
      let cp = new ComputeTpuProvider(emulatorComputeClients(await emu.start()));
      const before = await cp.createSlice({ project: P, zone: Z, name: 'keep', acceleratorType: 'tpu7x-16' });
      await cp.createSlice({ project: P, zone: Z, name: 'spotty', acceleratorType: 'tpu7x-8', provisioning: 'spot' });
      // Compute Engine ends the spot VM (instanceTerminationAction STOP): TERMINATED, its worker gone.
      const pre = await emulatorCall(emu.endpoint!, 'POST', `/emulator/v1/compute/projects/${P}/zones/${Z}/instances/spotty:preempt`);
      assert.equal(pre.status, 200);
      const gone = await cp.getSlice(P, Z, 'spotty');
      assert.equal(gone.status, 'TERMINATED');
      // TERMINATED by Compute Engine (its compute.instances.preempted operation) reads as PREEMPTED, as on Cloud TPU.
      assert.equal(gone.state, 'PREEMPTED');
      // A MIG asked for just before the emulator stops: the next emulator makes its VMs.
      await clients0(emu).policies.insert({ project: P, region: R, resourcePolicyResource: { name: 'late-wp', workloadPolicy: { type: 'HIGH_THROUGHPUT', acceleratorTopology: '2x2x2' } } });
      await clients0(emu).templates.insert({ project: P, instanceTemplateResource: { name: 'late-tpl', properties: { machineType: 'tpu7x-standard-4t' } } });
      await clients0(emu).migs.insert({
        project: P, zone: Z,
        instanceGroupManagerResource: { name: 'late', baseInstanceName: 'late', targetSize: 2, instanceTemplate: `projects/${P}/global/instanceTemplates/late-tpl`, resourcePolicies: { workloadPolicy: `projects/${P}/regions/${R}/resourcePolicies/late-wp` } },
      });
      await cp.close();
      await clients0(emu).close();
      await emu.stop();

      emu = new Emulator(opts);
      cp = new ComputeTpuProvider(emulatorComputeClients(await emu.start()));
      const after = await cp.getSlice(P, Z, 'keep');
      assert.equal(after.state, 'READY');
      assert.deepEqual(after.workers.map((w) => w.internalIp), before.workers.map((w) => w.internalIp));
      for (const w of after.workers) assert.match(await sshBanner(w.internalIp, emu.endpoint!.sshPort), /^SSH-2\.0-/);
      assert.equal((await cp.getSlice(P, Z, 'spotty')).state, 'PREEMPTED');
      let late = await cp.getSlice(P, Z, 'late');
      for (let i = 0; i < 100 && late.state !== 'READY'; i++) {
        await new Promise((r) => setTimeout(r, 50));
        late = await cp.getSlice(P, Z, 'late');
      }
      assert.equal(late.state, 'READY');
      assert.equal(late.workers.length, 2);
      await cp.deleteSlice(P, Z, 'late');
      // Started again, then stopped by its user: a stop, not a preemption.
      assert.equal((await cp.startSlice(P, Z, 'spotty')).state, 'READY');
      assert.equal((await cp.stopSlice(P, Z, 'spotty')).state, 'STOPPED');
      await cp.deleteSlice(P, Z, 'keep');
      await cp.deleteSlice(P, Z, 'spotty');
      await cp.close();
    } finally {
      await emu.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
