/**
 * Issue 14, the create wizard's Compute Engine side (core/explorer/compute-create.ts): the default control plane
 * per type, the steps each plane asks, the slice a type and topology make, Compute Engine's own fields, and the
 * request and `gcloud compute …` lines the answers make. Expected shapes come from Google's TPU pages (TPU7x:
 * Compute Engine or GKE only, two TensorCores and two devices per chip, machine types tpu7x-standard-{1,4}t; a
 * 2x2x2 topology is 2 VMs, issue 14), flags from gcloud's reference (instances create --provisioning-model=FLEX_START
 * --max-run-duration, resource-policies create workload-policy --type=HIGH_THROUGHPUT --accelerator-topology).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gcloudComputeCommands } from '../../extension/src/core/compute/gcloud-compute-command';
import {
  CREATE_STEPS,
  createComputeRequest,
  createStepApplies,
  reviewRowApplies,
  defaultControlPlane,
  describeSlice,
  parseImage,
  parseMaxRunDuration,
  parseReservation,
  parseTopology,
  wizardTypes,
  type ComputeAnswers,
} from '../../extension/src/core/explorer/compute-create';
import { WizardFlow } from '../../extension/src/core/explorer/wizard-flow';

const steps = (s: Parameters<typeof createStepApplies>[1], zones = 1) => CREATE_STEPS.filter((id) => createStepApplies(id, s, zones));

describe('create wizard: control plane', () => {
  it('defaults to Compute Engine for the types the Cloud TPU API does not offer (TPU7x), else the Cloud TPU API', () => {
    assert.equal(defaultControlPlane('tpu7x-16'), 'compute');
    assert.equal(defaultControlPlane('tpu7x-8'), 'compute');
    assert.equal(defaultControlPlane('v6e-8'), 'tpu-api');
    assert.equal(defaultControlPlane('v5litepod-4'), 'tpu-api');
  });

  it('asks topology, flex-start duration or reservation on Compute Engine; runtime and queue on the Cloud TPU API', () => {
    assert.deepEqual(steps({ plane: 'compute', choice: 'on-demand' }), ['name', 'type', 'plane', 'topology', 'provisioning', 'review']);
    assert.deepEqual(steps({ plane: 'compute', choice: 'flex-start' }), ['name', 'type', 'plane', 'topology', 'provisioning', 'maxRun', 'review']);
    assert.deepEqual(steps({ plane: 'compute', choice: 'reservation' }, 3), ['name', 'zone', 'type', 'plane', 'topology', 'provisioning', 'reservation', 'review']);
    assert.deepEqual(steps({ plane: 'tpu-api', choice: 'queued-spot' }), ['name', 'type', 'plane', 'runtime', 'provisioning', 'validUntil', 'review']);
  });

  it('skips a step with one answer: the control plane of a type only Compute Engine makes (TPU7x), one zone', () => {
    assert.deepEqual(steps({ plane: 'compute', choice: 'on-demand', planeChoices: 1 }), ['name', 'type', 'topology', 'provisioning', 'review']);
    assert.deepEqual(steps({ plane: 'tpu-api', choice: 'on-demand', planeChoices: 2 }, 3), ['name', 'zone', 'type', 'plane', 'runtime', 'provisioning', 'review']);
  });

  it('offers the answers with a default as rows of the review: the boot image on Compute Engine, the data disk on the Cloud TPU API', () => {
    const rows = (s: Parameters<typeof reviewRowApplies>[1]) => CREATE_STEPS.filter((id) => reviewRowApplies(id, s));
    assert.deepEqual(rows({ plane: 'compute', choice: 'on-demand' }), ['image', 'startupScript', 'labels']);
    assert.deepEqual(rows({ plane: 'tpu-api', choice: 'queued-spot' }), ['startupScript', 'labels', 'dataDisk']);
  });

  it('opens at the review for a Retry, with Back going through every step that applies', async () => {
    const s = { plane: 'compute' as const, choice: 'on-demand' as const, planeChoices: 1 };
    const flow = new WizardFlow(CREATE_STEPS, (id, a: typeof s) => createStepApplies(id, a, 3));
    const shown: string[] = [];
    const outcomes = ['back', 'back', 'back', 'next', 'next', 'next', 'next'] as const;
    const finished = await flow.run(s, async (id) => {
      shown.push(id);
      return outcomes[shown.length - 1];
    }, 'review');
    assert.equal(finished, true);
    assert.deepEqual(shown, ['review', 'provisioning', 'topology', 'type', 'topology', 'provisioning', 'review'], 'Back from the review walks the steps answered before');
  });

  it('follows a change of plane when going back (the flow reads the answers as they are now)', async () => {
    const s: { plane?: 'compute' | 'tpu-api'; choice?: 'on-demand' } = { plane: 'tpu-api' };
    const flow = new WizardFlow(CREATE_STEPS, (id, a: typeof s) => createStepApplies(id, a, 1));
    const shown: string[] = [];
    let planeVisits = 0;
    await flow.run(s, async (id) => {
      shown.push(id);
      if (id === 'plane' && planeVisits++ === 0) return 'next';
      if (id === 'runtime') {
        s.plane = 'compute';
        return 'back';
      }
      return 'next';
    });
    assert.deepEqual(shown, ['name', 'type', 'plane', 'runtime', 'plane', 'topology', 'provisioning', 'review']);
  });
});

describe('create wizard: Compute Engine slices', () => {
  it('shows what a type and topology make: TPU7x chips as two devices each, 2x2x2 as 2 VMs', () => {
    const s = parseTopology('tpu7x-16', '');
    assert.ok(s.ok);
    assert.equal(s.value.topology, '2x2x2');
    assert.equal(describeSlice(s.value), '2 VMs of tpu7x-standard-4t, 8 chips shown as 16 devices');
    const one = parseTopology('tpu7x-8', '');
    assert.ok(one.ok);
    assert.equal(describeSlice(one.value), '1 VM of tpu7x-standard-4t, 4 chips shown as 8 devices');
    const v6e = parseTopology('v6e-16', '4x4');
    assert.ok(v6e.ok);
    assert.equal(describeSlice(v6e.value), '4 VMs of ct6e-standard-4t, 16 chips');
    const bad = parseTopology('tpu7x-16', '2x2x1');
    assert.ok(!bad.ok);
    assert.match(bad.error, /Topology "2x2x1" is not valid for tpu7x-16/);
  });

  it('offers the Cloud TPU API types and the Compute Engine shapes of the zone machine types, each once, by size', () => {
    const t = wizardTypes(['v6e-8', 'v6e-16', 'v6e-4'], ['tpu7x-standard-4t', 'ct6e-standard-4t', 'ct6e-standard-8t']);
    const names = t.map((x) => x.type);
    assert.deepEqual(names.filter((n) => n.startsWith('v6e')).slice(0, 3), ['v6e-4', 'v6e-8', 'v6e-16']);
    assert.equal(new Set(names).size, names.length);
    const iron = t.find((x) => x.type === 'tpu7x-16');
    assert.equal(iron?.tpuApi, false);
    assert.equal(iron?.shape?.vmCount, 2);
    // tpu7x-2 needs tpu7x-standard-1t, which this zone does not have.
    assert.equal(t.find((x) => x.type === 'tpu7x-2'), undefined);
  });

  it('checks image, flex-start duration and reservation as the user types', () => {
    assert.deepEqual(parseImage(''), { ok: true, value: undefined });
    assert.deepEqual(parseImage('projects/my-proj/global/images/family/my-tpu-image'), { ok: true, value: 'projects/my-proj/global/images/family/my-tpu-image' });
    assert.ok(!parseImage('ubuntu latest').ok);
    assert.deepEqual(parseMaxRunDuration('4h'), { ok: true, value: 4 * 3600 });
    assert.deepEqual(parseMaxRunDuration('1d12h'), { ok: true, value: 36 * 3600 });
    const long = parseMaxRunDuration('8d');
    assert.ok(!long.ok && /7 days/.test(long.error));
    assert.ok(!parseMaxRunDuration('soon').ok);
    assert.deepEqual(parseReservation('my-res'), { ok: true, value: 'my-res' });
    assert.ok(!parseReservation('').ok);
  });

  it('makes the request and the gcloud compute commands of a flex-start 2-VM slice', () => {
    const a: ComputeAnswers = { name: 'iron', zone: 'us-central1-c', acceleratorType: 'tpu7x-16', topologyText: '', imageText: '', provisioning: 'flex-start', maxRunText: '4h', reservationText: '', labels: { team: 'ml' } };
    const { request, shape } = createComputeRequest('my-proj', a);
    assert.deepEqual(request, { project: 'my-proj', zone: 'us-central1-c', name: 'iron', acceleratorType: 'tpu7x-16', topology: '2x2x2', provisioning: 'flex-start', maxRunDurationSeconds: 14400, labels: { team: 'ml' } });
    const lines = gcloudComputeCommands(request, shape);
    assert.equal(lines.length, 3);
    assert.match(lines[0], /^gcloud compute resource-policies create workload-policy .* --type=HIGH_THROUGHPUT --accelerator-topology=2x2x2/);
    assert.match(lines[1], /--provisioning-model=FLEX_START --max-run-duration=14400s/);
    assert.match(lines[2], /^gcloud compute instance-groups managed create iron .* --size=2 /);
    assert.throws(() => createComputeRequest('my-proj', { ...a, maxRunText: 'soon' }), /"soon" is not a duration/);
    assert.throws(() => createComputeRequest('my-proj', { ...a, provisioning: 'reservation' }), /Enter the name of the reservation/);
  });
});
