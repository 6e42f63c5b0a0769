/**
 * xprof's bound_by, by its rule (op_metrics_to_record.h): an op starts "Unknown" and only a positive compute or
 * memory use makes it "Compute" or "HBM", by its operational intensity against the chip's ridge point. A real
 * TPU v6e Pallas kernel (no FLOPs or bytes: XLA has no cost model for tpu_custom_call) is "Unknown" in xprof
 * 2.24.2, as here (that capture is not kept: its repository states no license; issue notes). The real captures
 * of test/fixtures/profiles/real check Compute and HBM op by op (profiles-real.test.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { boundBy } from '../../extension/src/core/profiles/chips';
import { overviewOf, type DeviceInfo } from '../../extension/src/core/profiles/devices';
import type { OpRow } from '../../protocol/run-view-messages';

const V6E = { peakTflops: 918, hbmGBs: 1640 }; // ridge ≈ 560 FLOP/byte

test('boundBy: Unknown without FLOPs or bytes; otherwise by operational intensity against the ridge', () => {
  assert.equal(boundBy(0, 0, V6E.peakTflops, V6E.hbmGBs), 'Unknown');
  assert.equal(boundBy(1e12, 1e9, V6E.peakTflops, V6E.hbmGBs), 'Compute', '1000 FLOP/byte');
  assert.equal(boundBy(1e11, 1e9, V6E.peakTflops, V6E.hbmGBs), 'HBM', '100 FLOP/byte');
  assert.equal(boundBy(5, 0, V6E.peakTflops, V6E.hbmGBs), 'Compute', 'FLOPs and no bytes');
  assert.equal(boundBy(0, 5, V6E.peakTflops, V6E.hbmGBs), 'HBM', 'bytes and no FLOPs');
});

function op(name: string, flops: number, bytes: number): OpRow {
  return { program: '1', name, category: 'custom-call', module: '', count: 1, selfUs: 1, totalUs: 1, flops, bytes, intensity: 0, boundBy: '' };
}
function device(hardware: DeviceInfo['hardware']): DeviceInfo {
  return { name: `/device:${hardware}:0`, hardware, type: hardware === 'TPU' ? 'TPU v6 Lite' : 'Nvidia GPU (Hopper)', ...V6E, busyUs: 1, activeUs: 2 };
}

test('a roofline point per op on TPU, none on GPU (its FLOPs come from XLA cost analysis, not from the capture) or without a device', () => {
  const tpu = [op('pallas_kernel', 0, 0), op('fusion', 1e12, 1e9)];
  overviewOf([{ devices: [device('TPU')], steps: [] }], 1, tpu, 'none');
  assert.deepEqual(tpu.map((o) => o.boundBy), ['Unknown', 'Compute']);
  assert.equal(tpu[1].intensity, 1000);
  const gpu = [op('te_fused_attn', 0, 0), op('fusion', 1e12, 1e9)];
  overviewOf([{ devices: [device('GPU')], steps: [] }], 1, gpu, 'none');
  assert.deepEqual(gpu.map((o) => o.boundBy), ['', '']);
  const none = [op('x', 0, 0)];
  overviewOf([{ devices: [], steps: [] }], 1, none, 'none');
  assert.equal(none[0].boundBy, '');
});
