/**
 * What "Run on TPU" offers without a tree row (core/explorer/run-targets.ts): READY VMs, and each multislice group
 * (Cloud TPU queued resource or Compute Engine labelled slices) as one item whose slices come in slice order,
 * never its slices one by one; a group with a slice not READY is not offered.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sliceGroupName } from '../../extension/src/core/compute/slice-group';
import { runTargetItems, sliceOrder } from '../../extension/src/core/explorer/run-targets';
import type { TpuNode } from '../../extension/src/core/tpu/models';

const P = 'projects/p/locations';
/** A node record as the backends list them (only the fields the items read differ between these). */
function node(zone: string, name: string, type: string, workers: number, extra: Partial<TpuNode> = {}): TpuNode {
  return {
    name: `${P}/${zone}/nodes/${name}`,
    acceleratorType: type,
    runtimeVersion: 'tpu-ubuntu2204-base',
    state: 'READY',
    networkEndpoints: Array.from({ length: workers }, (_, i) => ({ ipAddress: `10.0.0.${i + 1}`, port: 8470 })),
    ...extra,
  } as TpuNode;
}

const QR = `${P}/us-central2-b/queuedResources/grp`;
const CE = sliceGroupName('p', 'us-east5-b', 'g7');

test('single VMs and whole groups are offered; a group is one item with its slices in order and its shape', () => {
  const nodes = [
    node('us-central2-b', 'solo', 'v5litepod-4', 1),
    // Listed out of order, as a zone's listing may be.
    node('us-central2-b', 'grp-1', 'v4-16', 2, { sliceGroup: QR }),
    node('us-central2-b', 'grp-0', 'v4-16', 2, { sliceGroup: QR }),
    node('us-east5-b', 'g7-0', 'tpu7x-16', 2, { sliceGroup: CE, controlPlane: 'compute' }),
    node('us-east5-b', 'g7-1', 'tpu7x-16', 2, { sliceGroup: CE, controlPlane: 'compute' }),
    node('us-east5-b', 'stopped', 'v6e-8', 1, { state: 'STOPPED' }),
  ];
  const items = runTargetItems(nodes);
  assert.deepEqual(
    items.map((i) => [i.target, i.label, i.description]),
    [
      ['vm', 'solo', 'v5litepod-4 · us-central2-b · Cloud TPU API'],
      ['group', 'grp', 'multislice: 2 slices × 2 workers · v4-16 · us-central2-b · Cloud TPU API'],
      ['group', 'g7', 'multislice: 2 slices × 2 workers · tpu7x-16 · us-east5-b · Compute Engine'],
    ],
  );
  const grp = items[1];
  assert.ok(grp.target === 'group');
  assert.deepEqual(grp.slices.map((s) => s.name.split('/').pop()), ['grp-0', 'grp-1']);
  assert.equal(grp.group, QR);
});

test('a group with one slice not READY is not offered, and neither are its READY slices', () => {
  const nodes = [node('us-east5-b', 'g7-0', 'tpu7x-16', 2, { sliceGroup: CE, controlPlane: 'compute' }), node('us-east5-b', 'g7-1', 'tpu7x-16', 2, { sliceGroup: CE, controlPlane: 'compute', state: 'PREEMPTED' })];
  assert.deepEqual(runTargetItems(nodes), []);
});

test('slice order is numeric, not by text (grp-10 after grp-9)', () => {
  const names = ['grp-10', 'grp-2', 'grp-9', 'grp-0'].map((n) => node('z-a', n, 'v4-16', 2));
  assert.deepEqual(sliceOrder(names).map((n) => n.name.split('/').pop()), ['grp-0', 'grp-2', 'grp-9', 'grp-10']);
});
