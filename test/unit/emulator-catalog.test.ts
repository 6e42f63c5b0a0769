import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ACCELERATOR_TYPES,
  acceleratorInfo,
  acceleratorTypeNames,
  isRuntimeVersion,
  RUNTIME_VERSIONS,
  runtimeVersionProblem,
} from '../../emulator/src/catalog';
import { topologyFor, workersFor } from '../../protocol/tpu-catalog';
import { recommendedRuntime } from '../../extension/src/core/explorer/create-request';

describe('emulator catalog', () => {
  it('gives each accelerator type its real number of workers (hosts)', () => {
    const expected: Record<string, number> = {
      'v4-8': 1,
      'v4-16': 2,
      'v4-32': 4,
      'v5litepod-1': 1,
      'v5litepod-4': 1,
      'v5litepod-8': 1,
      'v5litepod-16': 4,
      'v5litepod-32': 8,
      'v5p-8': 1,
      'v5p-16': 2,
      'v5p-32': 4,
      'v6e-1': 1,
      'v6e-4': 1,
      'v6e-8': 1,
      'v6e-16': 4,
      'v6e-32': 8,
    };
    for (const [type, workers] of Object.entries(expected)) {
      assert.equal(acceleratorInfo(type)?.workers, workers, type);
    }
    assert.deepEqual(acceleratorTypeNames().sort(), Object.keys(expected).sort());
  });

  it('counts TensorCores for v4/v5p and chips for v5e/v6e', () => {
    assert.equal(acceleratorInfo('v4-32')?.chips, 16);
    assert.equal(acceleratorInfo('v5p-8')?.chips, 4);
    assert.equal(acceleratorInfo('v5litepod-16')?.chips, 16);
    assert.equal(acceleratorInfo('v6e-8')?.chips, 8);
    assert.equal(workersFor('V4', 64), 8);
    assert.equal(workersFor('V6E', 64), 16);
  });

  it('reports topologies as the API does', () => {
    assert.equal(acceleratorInfo('v4-8')?.topology, '2x2x1');
    assert.equal(acceleratorInfo('v4-32')?.topology, '2x2x4');
    assert.equal(acceleratorInfo('v5litepod-16')?.topology, '4x4');
    assert.equal(acceleratorInfo('v6e-8')?.topology, '2x4');
    assert.equal(topologyFor('V5LITE_POD', 1), '1x1');
    assert.equal(acceleratorInfo('v5litepod-16')?.generation, 'V5LITE_POD');
  });

  it('rejects unknown types and runtime versions', () => {
    assert.equal(acceleratorInfo('v4-7'), undefined);
    assert.equal(acceleratorInfo(''), undefined);
    assert.ok(isRuntimeVersion('v2-alpha-tpuv6e'));
    assert.ok(isRuntimeVersion('tpu-ubuntu2204-base'));
    assert.ok(!isRuntimeVersion('tpu-ubuntu2004-nope'));
    assert.ok(RUNTIME_VERSIONS.includes('v2-alpha-tpuv5-lite'));
  });

  it('accepts the runtime the wizard and CLI recommend for every type, and refuses another generation\'s', () => {
    for (const a of ACCELERATOR_TYPES) {
      const rec = recommendedRuntime(a.type);
      assert.ok(rec, a.type);
      assert.equal(runtimeVersionProblem(a, rec), undefined, `${a.type} with ${rec}`);
    }
    const v6e = acceleratorInfo('v6e-8')!;
    assert.match(runtimeVersionProblem(v6e, 'tpu-ubuntu2204-base') ?? '', /"tpu-ubuntu2204-base" is not supported for accelerator type "v6e-8".*v2-alpha-tpuv6e/);
    assert.match(runtimeVersionProblem(acceleratorInfo('v5p-8')!, 'v2-alpha-tpuv5-lite') ?? '', /"v5p-8".*v2-alpha-tpuv5\b/);
    assert.match(runtimeVersionProblem(v6e, 'nope') ?? '', /"nope" was not found.*v2-alpha-tpuv6e/);
  });

  it('keeps the table immutable and unique', () => {
    const names = ACCELERATOR_TYPES.map((a) => a.type);
    assert.equal(new Set(names).size, names.length);
    assert.throws(() => (ACCELERATOR_TYPES as unknown as unknown[]).push({}));
  });
});
