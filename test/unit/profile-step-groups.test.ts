/**
 * xprof's GPU step grouping (core/profiles/step-groups.ts) on small hand-made event sets, one rule each: what a
 * root is, what it reaches, and how the device's events become step spans. The real H200 captures
 * (profiles-real.test.ts) hold it to xprof's own step times; these cover the rules those captures do not use.
 */
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { groupSteps, type GroupPartial } from '../../extension/src/core/profiles/step-groups';
import { scanXSpaceFile } from '../../extension/src/core/profiles/stream';

interface HostEvent { start: number; root?: number; parent?: number; producer?: [number, number]; consumer?: [number, number]; corr?: number }
interface DeviceEvent { plane?: number; start: number; end: number; corr: number }

/** The partial a collector would keep of these events: `parent` is the index of the host event above. */
function partial(host: HostEvent[], device: DeviceEvent[], grouped = false): GroupPartial {
  const isNode = (h: HostEvent): boolean => !!(h.root || h.producer || h.consumer);
  const nodeOf = new Map<number, number>();
  host.forEach((h, k) => { if (isNode(h)) nodeOf.set(k, nodeOf.size); });
  const nodes = host.filter(isNode);
  const launches = host.filter((h) => h.corr !== undefined);
  const above = (h: HostEvent): number => (h.parent === undefined ? -1 : nodeOf.get(h.parent) ?? -1);
  return {
    grouped,
    nodeStart: nodes.map((h) => h.start), rootLevel: nodes.map((h) => h.root ?? 0), parent: nodes.map(above),
    producerType: nodes.map((h) => h.producer?.[0] ?? NaN), producerId: nodes.map((h) => h.producer?.[1] ?? NaN),
    consumerType: nodes.map((h) => h.consumer?.[0] ?? NaN), consumerId: nodes.map((h) => h.consumer?.[1] ?? NaN),
    launchCorr: Float64Array.from(launches, (h) => h.corr ?? NaN), launchNode: Int32Array.from(launches, above),
    devPlane: Int32Array.from(device, (d) => d.plane ?? 0), devStart: Float64Array.from(device, (d) => d.start),
    devEnd: Float64Array.from(device, (d) => d.end), devCorr: Float64Array.from(device, (d) => d.corr),
  };
}

const spans = (steps: ReturnType<typeof groupSteps>): [number, number][] | undefined => steps?.map((s) => [s.startUs, s.startUs + s.totalUs]);

describe('GPU steps from step annotations', () => {
  it('a root reaches its nested launches, and their kernels make its step; ungrouped kernels extend the step before them', () => {
    const host: HostEvent[] = [
      { start: 0, root: 1 }, { start: 1, parent: 0, corr: 10 }, { start: 2, parent: 0, corr: 11 },
      { start: 50, root: 1 }, { start: 51, parent: 3, corr: 12 },
      { start: 90, corr: 13 }, // a launch under no root
    ];
    const device: DeviceEvent[] = [
      { start: 5, end: 8, corr: 10 }, { start: 9, end: 20, corr: 11 }, { start: 55, end: 60, corr: 12 }, { start: 95, end: 99, corr: 13 },
      { start: 3, end: 4, corr: 99 }, // before any grouped kernel: in no step
    ];
    assert.deepEqual(spans(groupSteps([partial(host, device)], [])), [[5, 20], [55, 99]]);
  });

  it('a producer passes its group to the consumers of the same context type and id (another thread)', () => {
    const host: HostEvent[] = [
      { start: 0, root: 1 }, { start: 1, parent: 0, producer: [5, 77] },
      { start: 3, consumer: [5, 77] }, { start: 4, parent: 2, corr: 1 },
      { start: 6, consumer: [5, 78] }, { start: 7, parent: 4, corr: 2 },
    ];
    const device: DeviceEvent[] = [{ start: 10, end: 12, corr: 1 }, { start: 8, end: 9, corr: 2 }];
    // corr 2's consumer has another id: its kernel (the first on the device) is in no step.
    assert.deepEqual(spans(groupSteps([partial(host, device)], [])), [[10, 12]]);
  });

  it('roots of a higher level group first; a root inside one of its own level is not a step of its own', () => {
    const host: HostEvent[] = [
      { start: 0, root: 1 }, { start: 1, parent: 0, root: 1 }, { start: 2, parent: 1, corr: 1 },
      { start: 40, root: 2 }, { start: 41, parent: 3, corr: 2 },
    ];
    const device: DeviceEvent[] = [{ start: 10, end: 20, corr: 1 }, { start: 45, end: 50, corr: 2 }];
    const steps = groupSteps([partial(host, device)], []);
    // Two steps (the nested root joins its parent's), and the level-2 root took group 0: it comes first.
    assert.deepEqual(spans(steps), [[45, 50], [10, 20]]);
  });

  it("a step's time is its longest span over the devices; partials join in plane order", () => {
    const host: HostEvent[] = [{ start: 0, root: 1 }, { start: 1, parent: 0, corr: 1 }, { start: 2, parent: 0, corr: 2 }];
    const gpu0 = partial(host, [{ plane: 1, start: 10, end: 14, corr: 1 }]);
    const gpu1 = partial([], [{ plane: 2, start: 11, end: 19, corr: 2 }]);
    const steps = groupSteps([gpu0, gpu1], [10, 12, 13, 19]);
    assert.deepEqual(spans(steps), [[11, 19]]);
    assert.equal(steps?.[0].executeUs, 7, 'the busy time inside the step');
  });

  it('the last launch of a correlation id is the one its kernels hang from, whether ids are small (a table) or not', () => {
    // Ids as CUPTI gives them (from 1) take a table indexed by id; ids past 2^30 a search over the sorted launches.
    for (const base of [0, 2 ** 40]) {
      const host: HostEvent[] = [
        { start: 0, root: 1 }, { start: 1, parent: 0, corr: base + 1 },
        { start: 30, root: 1 }, { start: 31, parent: 2, corr: base + 1 }, { start: 32, parent: 2, corr: base + 2 },
      ];
      const device: DeviceEvent[] = [{ start: 5, end: 8, corr: base + 1 }, { start: 40, end: 45, corr: base + 2 }, { start: 50, end: 52, corr: base + 7 }];
      // Both kernels are the second root's (corr 1 was launched again there); corr 7 has no launch: it extends the step.
      assert.deepEqual(spans(groupSteps([partial(host, device)], [])), [[5, 52]], `ids from ${base}`);
    }
  });

  it('reads the step-grouping stats only where a host plane has step roots or the capture is a TPU one', () => {
    const real = (name: string): string => path.join(__dirname, '..', 'fixtures', 'profiles', 'real', `${name}.xplane.pb`);
    const roots = Object.fromEntries(['h200-jax-transformer', 'h200-jax-pallas', 'jax-te-fused-attn', 'tf-8gpu-multi-worker', 'tpu-v6e-4-inference']
      .map((n) => [n, scanXSpaceFile(real(n)).stepRoots]));
    // The pallas capture's host has no StepTraceAnnotation (it finds no steps); TensorFlow's was grouped when written.
    assert.deepEqual(roots, { 'h200-jax-transformer': true, 'h200-jax-pallas': false, 'jax-te-fused-attn': false, 'tf-8gpu-multi-worker': false, 'tpu-v6e-4-inference': true });
  });

  it('finds none without a root, and leaves a capture grouped when written (group_id) to its own Steps lines', () => {
    const device: DeviceEvent[] = [{ start: 10, end: 14, corr: 1 }];
    assert.equal(groupSteps([partial([{ start: 0, corr: 1 }], device)], []), undefined);
    assert.equal(groupSteps([partial([{ start: 0, root: 1 }, { start: 1, parent: 0, corr: 1 }], device, true)], []), undefined);
  });
});
