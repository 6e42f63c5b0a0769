import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { isTpwError } from '../../extension/src/core/errors';
import { tpuNodePoolRequest } from '../../extension/src/core/gke/node-pool-request';
import { gkeTpuType, knownTpuTypeNames, tpuTypeOfNodePool } from '../../extension/src/core/gke/tpu-types';

/** xpk 1.16.0's own table (test/fixtures/gke/xpk/tpu_types.py wrote it). */
interface XpkRow {
  topology: string;
  vmsPerSlice: number;
  gkeAccelerator: string;
  machineType: string;
  chipsPerVm: number;
  workloadPolicy: boolean;
}
const XPK: Record<string, XpkRow> = JSON.parse(fs.readFileSync(path.join(__dirname, '../fixtures/gke/xpk/tpu-types.json'), 'utf8'));

test('every TPU type of xpk 1.16.0 gets xpk’s accelerator label, topology, machine type, VMs and chips per VM', () => {
  const names = Object.keys(XPK);
  assert.equal(names.length, 2020);
  const wrong: string[] = [];
  for (const name of names) {
    const x = XPK[name];
    const t = gkeTpuType(name);
    const ours = [t.accelerator, t.topology, t.machineType, t.vmsPerSlice, t.chipsPerVm, t.workloadPolicy];
    const theirs = [x.gkeAccelerator, x.topology, x.machineType, x.vmsPerSlice, x.chipsPerVm, x.workloadPolicy];
    if (JSON.stringify(ours) !== JSON.stringify(theirs)) wrong.push(`${name}: ${JSON.stringify(ours)} != ${JSON.stringify(theirs)}`);
  }
  assert.deepEqual(wrong.slice(0, 5), []);
});

test('a node pool’s labels name its TPU type the way a user writes it', () => {
  assert.deepEqual(tpuTypeOfNodePool('tpu-v5-lite-podslice', '4x4'), { family: 'v5litepod', name: 'v5litepod-16' });
  assert.deepEqual(tpuTypeOfNodePool('tpu-v5p-slice', '2x2x1'), { family: 'v5p', name: 'v5p-8' });
  assert.deepEqual(tpuTypeOfNodePool('tpu7x', '2x2x2'), { family: 'tpu7x', name: 'tpu7x-16' });
  assert.equal(tpuTypeOfNodePool(undefined, undefined), undefined);
  assert.equal(tpuTypeOfNodePool('nvidia-l4', '1x1'), undefined);
  // Every counted name maps back to itself from its own labels.
  for (const name of knownTpuTypeNames()) {
    const t = gkeTpuType(name);
    assert.equal(tpuTypeOfNodePool(t.accelerator, t.topology)?.name, name, name);
  }
});

test('an unknown TPU type is refused in one line that names it', () => {
  for (const bad of ['v5litepod-3', 'v9-8', 'v5litepod-3x3', 'tpu', '']) {
    assert.throws(() => gkeTpuType(bad), (e: unknown) => isTpwError(e, 'INVALID_ARGUMENT') && e.message.includes(`"${bad}"`) && !e.message.includes('\n'));
  }
});

test('a TPU node pool request: one slice’s nodes, machine type and topology from the type; spot or a named reservation; bad input in one line', () => {
  assert.deepEqual(tpuNodePoolRequest({ name: 'np-res', tpuType: 'v5litepod-16', reservation: 'team-res' }), {
    name: 'np-res',
    initialNodeCount: 4,
    config: { machineType: 'ct5lp-hightpu-4t', reservationAffinity: { consumeReservationType: 'SPECIFIC_RESERVATION', key: 'compute.googleapis.com/reservation-name', values: ['team-res'] } },
    placementPolicy: { tpuTopology: '4x4' },
  });
  // A single-host pool's topology follows from its machine type: none is sent.
  assert.deepEqual(tpuNodePoolRequest({ name: 'one', tpuType: 'v5p-8', spot: true }), { name: 'one', initialNodeCount: 1, config: { machineType: 'ct5p-hightpu-4t', spot: true } });
  const oneLine = (re: RegExp) => (e: unknown) => isTpwError(e) && re.test(e.message) && !e.message.includes('\n');
  assert.throws(() => tpuNodePoolRequest({ name: 'Bad_Name', tpuType: 'v5p-8' }), oneLine(/^"Bad_Name" is not a node pool name/));
  assert.throws(() => tpuNodePoolRequest({ name: 'np', tpuType: 'v5p-8', reservation: 'Res 1' }), oneLine(/^--reservation "Res 1" is not a reservation name/));
  assert.throws(() => tpuNodePoolRequest({ name: 'np', tpuType: 'tpu7x-16' }), oneLine(/multi-host tpu7x-16 node pool needs a Compute Engine workload policy/));
});
