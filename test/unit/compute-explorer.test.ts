/**
 * Issue 14, what the explorer shows of Compute Engine slices: a 2-VM tpu7x-16 slice made through the real
 * `@google-cloud/compute` client against the emulator, read as a node (sliceToNode), says how many of its MIG's
 * VMs run against the target size, and Copy SSH Command names each worker's own VM instance (the names come
 * from the MIG's managed instances as the real client lists them, not from our code).
 */
import * as assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { emulatorComputeClients, type ComputeClients } from '../../extension/src/core/compute/client';
import { gcloudComputeSshCommand } from '../../extension/src/core/compute/gcloud-compute-command';
import { ComputeTpuProvider } from '../../extension/src/core/compute/provider';
import { sliceToNode } from '../../extension/src/core/compute/slice-api';
import { computeStatusNote, schedulingLabel } from '../../extension/src/core/explorer/node-status';
import { startEmulatorApi, type EmulatorApi } from '../helpers/emulator-api';
import { testAddressPrefix } from '../helpers/loopback';

const P = 'local-project';
const Z = 'us-east5-b';

describe('Compute Engine slices in the explorer', () => {
  let fx: EmulatorApi;
  let clients: ComputeClients;
  let cp: ComputeTpuProvider;

  before(async () => {
    fx = await startEmulatorApi('tpw-compute-explorer-', { opDelayMs: 20, addressPrefix: testAddressPrefix(143) });
    clients = emulatorComputeClients(fx.ep);
    cp = new ComputeTpuProvider(clients);
  });
  after(async () => {
    await cp.close();
    await fx.close();
  });

  it('shows a MIG slice as running VMs against its target size, with gcloud compute ssh per worker VM', async () => {
    await cp.createSlice({ project: P, zone: Z, name: 'iron-tree', acceleratorType: 'tpu7x-16' });
    const node = sliceToNode(await cp.getSlice(P, Z, 'iron-tree'));
    const [managed] = await clients.migs.listManagedInstances({ project: P, zone: Z, instanceGroupManager: 'iron-tree' });
    const [mig] = await clients.migs.get({ project: P, zone: Z, instanceGroupManager: 'iron-tree' });
    const running = managed.filter((m) => m.instanceStatus === 'RUNNING').length;
    assert.equal(running, 2);
    assert.equal(computeStatusNote(node), `${running}/${mig.targetSize} VMs running, MIG ${mig.status?.isStable ? 'stable' : 'changing'}`);
    assert.equal(computeStatusNote(node, true), `${running}/${mig.targetSize} VMs running${mig.status?.isStable ? '' : ', MIG changing'}`);
    assert.equal(schedulingLabel(node), 'on-demand');

    // Worker i is the VM whose agent-worker-number is i.
    const names = managed.map((m) => m.instance?.slice(m.instance.lastIndexOf('/') + 1) ?? '');
    const members = await Promise.all(names.map((n) => clients.instances.get({ project: P, zone: Z, instance: n }).then((r) => r[0])));
    const byWorker = members.map((m) => ({ name: m.name ?? '', n: Number(m.metadata?.items?.find((i) => i.key === 'agent-worker-number')?.value) })).sort((a, b) => a.n - b.n);
    for (const [i, w] of byWorker.entries()) {
      assert.equal(gcloudComputeSshCommand(node, i), `gcloud compute ssh ${w.name} --zone=${Z} --project=${P}`);
    }
    assert.throws(() => gcloudComputeSshCommand(node, 2), /Worker 2 of TPU slice "iron-tree" has no VM instance/);
    await cp.deleteSlice(P, Z, 'iron-tree');
  });

  it('shows a flex-start VM as flex-start (not "preemptible") and its instance status while it is not ready', async () => {
    await cp.createSlice({ project: P, zone: Z, name: 'iron-flex', acceleratorType: 'tpu7x-8', provisioning: 'flex-start', maxRunDurationSeconds: 3600 });
    const [inst] = await clients.instances.get({ project: P, zone: Z, instance: 'iron-flex' });
    assert.equal(inst.scheduling?.provisioningModel, 'FLEX_START');
    const node = sliceToNode(await cp.getSlice(P, Z, 'iron-flex'));
    assert.equal(schedulingLabel(node), 'flex-start');
    assert.equal(computeStatusNote(node), `VM ${inst.status}`);
    // A READY VM that is RUNNING says nothing more in the row.
    assert.equal(computeStatusNote(node, true), undefined);
    assert.equal(gcloudComputeSshCommand(node, 0), `gcloud compute ssh iron-flex --zone=${Z} --project=${P}`);
    await cp.stopSlice(P, Z, 'iron-flex');
    const [stopped] = await clients.instances.get({ project: P, zone: Z, instance: 'iron-flex' });
    assert.equal(computeStatusNote(sliceToNode(await cp.getSlice(P, Z, 'iron-flex')), true), `VM ${stopped.status}`);
    await cp.deleteSlice(P, Z, 'iron-flex');
  });
});
