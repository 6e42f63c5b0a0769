/**
 * Peak compute and memory bandwidth of accelerators, for the roofline of the op table: an op's operational
 * intensity (FLOPs per byte of HBM traffic) against the chip's ridge point (peak FLOP/s ÷ HBM bandwidth)
 * says whether memory or compute bounds it.
 *
 * A capture's own plane stats win when present (TPU planes carry peak_teraflops_per_second and
 * peak_hbm_bw_gigabytes_per_second; GPU planes carry memory_bandwidth): this table fills in what is missing.
 * Figures are per chip, dense bf16, from the vendors' published specifications as of 2026-11 (TPU7x:
 * Google Cloud's Ironwood documentation; its 4,614 TFLOP/s figure is FP8, half of it bf16).
 */
export interface ChipPeaks {
  /** Display name. */
  name: string;
  /** Dense bf16 TFLOP/s per chip. */
  peakTflops: number;
  /** HBM bandwidth, GB/s per chip. */
  hbmGBs: number;
}

export const CHIPS_AS_OF = '2026-11';

/** Matched against a device's type string (TPU: device_type_string; GPU: the vendor's model name), first match wins. */
const CHIPS: readonly [RegExp, ChipPeaks][] = [
  [/TPU ?7x|Ironwood/i, { name: 'TPU7x (Ironwood)', peakTflops: 2307, hbmGBs: 7370 }],
  [/TPU v6 ?(Lite|e)|Trillium/i, { name: 'TPU v6e (Trillium)', peakTflops: 918, hbmGBs: 1640 }],
  [/TPU v5p/i, { name: 'TPU v5p', peakTflops: 459, hbmGBs: 2765 }],
  [/TPU v5 ?(Lite|e)/i, { name: 'TPU v5e', peakTflops: 197, hbmGBs: 819 }],
  [/TPU v4/i, { name: 'TPU v4', peakTflops: 275, hbmGBs: 1228 }],
  [/B200/i, { name: 'NVIDIA B200', peakTflops: 2250, hbmGBs: 8000 }],
  [/H200/i, { name: 'NVIDIA H200', peakTflops: 989, hbmGBs: 4800 }],
  [/H100/i, { name: 'NVIDIA H100 SXM', peakTflops: 989, hbmGBs: 3350 }],
  [/A100/i, { name: 'NVIDIA A100 80GB', peakTflops: 312, hbmGBs: 2039 }],
  [/MI355|gfx950/i, { name: 'AMD MI355X', peakTflops: 2500, hbmGBs: 8000 }],
  [/MI300X|gfx942/i, { name: 'AMD MI300X', peakTflops: 1307, hbmGBs: 5300 }],
];

export function chipPeaks(deviceType: string): ChipPeaks | undefined {
  return CHIPS.find(([re]) => re.test(deviceType))?.[1];
}

/**
 * 'Compute' or 'HBM' as xprof's bound_by reads. An op with neither FLOPs nor bytes the capture knows of (a Pallas
 * kernel: XLA has no cost model for tpu_custom_call) uses no resource at all, which xprof calls 'Unknown'.
 */
export function boundBy(flops: number, bytes: number, peakTflops: number, hbmGBs: number): 'Compute' | 'HBM' | 'Unknown' {
  if (!(bytes > 0) || !(peakTflops > 0) || !(hbmGBs > 0)) return flops > 0 ? 'Compute' : bytes > 0 ? 'HBM' : 'Unknown';
  const ridge = (peakTflops * 1e12) / (hbmGBs * 1e9);
  return flops / bytes >= ridge ? 'Compute' : 'HBM';
}
