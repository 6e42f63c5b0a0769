/**
 * The devices of a capture for the overview: their type and peak rates (from the planes' own stats), how busy
 * each was, and the steps a device marks itself (TPU captures may carry a `Steps` line per device, whose events
 * are the training steps as the device saw them; xprof takes step time from there first).
 */
import type { OpRow, ProfileOverview, StepBreakdown } from '../../../../protocol/run-view-messages';
import { boundBy, chipPeaks } from './chips';
import { IntervalUnion } from './intervals';
import type { LineView, PlaneView } from './view';

/** A device plane: /device:TPU:0, /device:GPU:3 (not TPU_NON_CORE, SparseCore or custom planes). */
export const DEVICE_PLANE = /^\/device:(TPU|GPU):\d+$/;

export interface DeviceInfo {
  name: string;
  hardware: 'TPU' | 'GPU';
  type: string;
  peakTflops: number;
  hbmGBs: number;
  busyUs: number;
  activeUs: number;
}

/** What the planes of one partial said about their devices. */
export interface DevicePartial {
  devices: DeviceInfo[];
  /** Each device's Steps line (the devices that have one): flat [start0, end0, start1, end1, ...] in µs. */
  steps: number[][];
}

function num(v: unknown): number {
  const x = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : NaN;
  return Number.isFinite(x) ? x : 0;
}

/** NVIDIA architectures by compute capability major (minor splits 7 and 8), as xprof names them. */
const NVIDIA_ARCH: Record<number, string | [number, string, string]> = {
  2: 'Fermi', 3: 'Kepler', 5: 'Maxwell', 6: 'Pascal', 7: [5, 'Volta', 'Turing'], 8: [9, 'Ampere', 'Ada Lovelace'],
  9: 'Hopper', 10: 'Blackwell',
};

/**
 * A GPU plane's device type as xprof's overview names it (xprof/utils/cuda_type_utils.cc and rocm_type_utils.cc,
 * GpuModelName): NVIDIA by architecture, AMD by gfx version (the plane's gfx device name, else the one its compute
 * capability identifies, else the family), and plain 'GPU' when the plane names no vendor.
 */
export function gpuModelName(st: ReadonlyMap<string, unknown>): string {
  const vendor = String(st.get('device_vendor') ?? '');
  const major = num(st.get('compute_cap_major'));
  const minor = num(st.get('compute_cap_minor'));
  if (vendor === 'Nvidia') {
    const arch = NVIDIA_ARCH[major];
    const name = Array.isArray(arch) ? (minor < arch[0] ? arch[1] : arch[2]) : arch;
    return name ? `Nvidia GPU (${name})` : 'Nvidia GPU';
  }
  if (vendor === 'AMD') {
    const device = String(st.get('gpu_device_name') ?? '');
    const gfx = /^gfx[0-9a-fA-F]{3,}$/.test(device) ? device : major === 9 && minor === 4 ? 'gfx942' : major === 9 && minor === 5 ? 'gfx950' : '';
    if (gfx) return `AMD GPU - ${gfx}`;
    return major >= 9 && major <= 11 ? `AMD GPU - gfx-${major}XX series` : 'AMD GPU';
  }
  return 'GPU';
}

export class DeviceStats {
  private readonly devices: DeviceInfo[] = [];
  private readonly steps: number[][] = [];
  private current: DeviceInfo | undefined;
  private union: IntervalUnion | undefined;

  plane(p: PlaneView): void {
    this.flush();
    const m = DEVICE_PLANE.exec(p.name);
    if (!m) return;
    const st = p.stats;
    const hardware = m[1] as 'TPU' | 'GPU';
    const type = String(st.get('device_type_string') ?? (hardware === 'GPU' ? gpuModelName(st) : 'TPU'));
    // The chip's peaks by its model name where the plane gives one (NVIDIA H200), which the type does not.
    const table = chipPeaks(String(st.get('gpu_device_name') ?? '')) ?? chipPeaks(type);
    const bw = num(st.get('memory_bandwidth')) / 1e9;
    this.current = {
      name: p.name, hardware, type,
      peakTflops: num(st.get('peak_teraflops_per_second')) || (table?.peakTflops ?? 0),
      hbmGBs: num(st.get('peak_hbm_bw_gigabytes_per_second')) || bw || (table?.hbmGBs ?? 0),
      busyUs: 0, activeUs: 0,
    };
    this.devices.push(this.current);
    this.union = new IntervalUnion();
  }

  /** The busy intervals (µs, sorted) of one line of the current device. */
  busyRun(flat: readonly number[]): void {
    if (!this.union || flat.length === 0) return;
    this.union.pushRun(flat);
  }

  line(l: LineView): void {
    if (!this.current || l.name !== 'Steps' || l.count === 0) return;
    const w: number[] = [];
    for (let i = 0; i < l.count; i++) {
      const s = (l.timestampNs + l.offsetPs[i] / 1000) / 1000;
      w.push(s, s + l.durationPs[i] / 1e6);
    }
    this.steps.push(w);
  }

  partial(): DevicePartial {
    this.flush();
    return { devices: this.devices, steps: this.steps };
  }

  private flush(): void {
    if (this.current && this.union) {
      const u = this.union.result();
      for (let k = 0; k < u.length; k += 2) this.current.busyUs += u[k + 1] - u[k];
      if (u.length) this.current.activeUs = u[u.length - 1] - u[0];
    }
    this.current = undefined;
    this.union = undefined;
  }
}

/**
 * Steps from the devices' Steps lines. Step k takes the window of the device whose step k was longest, as xprof
 * takes the step time of the slowest core (the devices' clocks need not agree, so windows are not merged); the
 * busy time inside it is execute, the rest idle.
 */
export function deviceSteps(perDevice: readonly (readonly number[])[], busy: ArrayLike<number>): StepBreakdown[] {
  const n = Math.min(...perDevice.map((w) => w.length));
  const windows: number[] = [];
  for (let k = 0; k + 1 < n; k += 2) {
    const slowest = perDevice.reduce((a, w) => (w[k + 1] - w[k] > a[k + 1] - a[k] ? w : a));
    windows.push(slowest[k], slowest[k + 1]);
  }
  return windowSteps(windows, busy);
}

/** Steps of device windows (flat [start0, end0, ...], µs): the busy time inside each is execute, the rest idle. */
export function windowSteps(windows: readonly number[], busy: ArrayLike<number>): StepBreakdown[] {
  const steps: StepBreakdown[] = [];
  for (let k = 0; k + 1 < windows.length; k += 2) {
    const ws = windows[k];
    const we = windows[k + 1];
    let executeUs = 0;
    for (let j = 0; j + 1 < busy.length; j += 2) {
      const a = Math.max(ws, busy[j]);
      const b = Math.min(we, busy[j + 1]);
      if (b > a) executeUs += b - a;
    }
    steps.push({ index: steps.length + 1, startUs: ws, totalUs: we - ws, compileUs: 0, executeUs, transferUs: 0, hostUs: 0, otherUs: Math.max(0, we - ws - executeUs) });
  }
  return steps;
}

/** The overview of the partials' devices, and each op's roofline point on their chip. */
export function overviewOf(parts: readonly DevicePartial[], hostCount: number, ops: OpRow[], stepSource: ProfileOverview['stepSource']): ProfileOverview {
  const devices = parts.flatMap((p) => p.devices);
  const first = devices[0];
  const busyUs = devices.reduce((a, d) => a + d.busyUs, 0);
  const activeUs = devices.reduce((a, d) => a + d.activeUs, 0);
  const peakTflops = first?.peakTflops ?? 0;
  const hbmGBs = first?.hbmGBs ?? 0;
  // Only on TPU, whose op events carry their FLOPs and bytes: on GPU xprof takes them from XLA's cost analysis of
  // the programs' HLO, which this does not run, so a GPU op has no roofline point here ('') rather than a wrong one.
  const roofline = first?.hardware === 'TPU';
  for (const o of ops) {
    o.intensity = o.bytes > 0 ? o.flops / o.bytes : 0;
    o.boundBy = roofline ? boundBy(o.flops, o.bytes, peakTflops, hbmGBs) : '';
  }
  return {
    hardware: first?.hardware ?? 'CPU', deviceType: first?.type ?? '', deviceCount: devices.length, hostCount,
    peakTflops, hbmGBs, busyUs, activeUs, idlePercent: activeUs > 0 ? 100 * (1 - busyUs / activeUs) : 0, stepSource,
  };
}
