/**
 * The captures of several hosts of one run (one `*.xplane.pb` per host), side by side: each host's step time
 * and idle share, the slowest host named, and one op table for all (rows of the same program and op summed).
 * Also the plain-data shape `tpw profile --json` prints (snake_case, as xprof's own tables name things).
 */
import * as path from 'node:path';
import type { OpRow, ProfileHostsMessage, ProfileOverview, ProfileSummary } from '../../../../protocol/run-view-messages';

export interface HostProfile {
  file: string;
  summary: ProfileSummary;
}

export interface HostRow {
  host: string;
  file: string;
  steps: number;
  avg_step_us: number;
  idle_percent: number;
}

export interface StepRow {
  index: number;
  start_us: number;
  total_us: number;
  compile_us: number;
  execute_us: number;
  transfer_us: number;
  host_us: number;
  other_us: number;
}

export interface CombinedProfile {
  device: {
    hardware: string;
    device_type: string;
    device_count: number;
    host_count: number;
    peak_tflops: number;
    hbm_gbs: number;
    busy_percent: number;
  };
  step_source: ProfileOverview['stepSource'];
  steps: StepRow[];
  ops: OpRow[];
  hosts: HostRow[];
  /** The host with the longest average step, when more than one host has steps. */
  slowest: string | undefined;
}

/** A host's name: what its capture says, else its file name without `.xplane.pb`. */
export function hostName(h: HostProfile): string {
  return h.summary.hosts[0] || path.basename(h.file).replace(/\.xplane\.pb$/, '');
}

export function combineHosts(hosts: readonly HostProfile[]): CombinedProfile {
  const rows: HostRow[] = hosts.map((h) => {
    const s = h.summary.steps;
    return {
      host: hostName(h), file: h.file, steps: s.length,
      avg_step_us: s.length ? s.reduce((a, st) => a + st.totalUs, 0) / s.length : 0,
      idle_percent: h.summary.overview.idlePercent,
    };
  });
  const withSteps = rows.filter((r) => r.steps > 0);
  const slowest = withSteps.length > 1 ? withSteps.reduce((a, r) => (r.avg_step_us > a.avg_step_us ? r : a)).host : undefined;
  // Step k of the run lasts as long as its slowest host's step k (hosts wait for each other at the collectives).
  const steps: StepRow[] = [];
  const n = Math.max(0, ...hosts.map((h) => h.summary.steps.length));
  for (let k = 0; k < n; k++) {
    const atK = hosts.map((h) => h.summary.steps[k]).filter((s) => s !== undefined);
    const s = atK.reduce((a, b) => (b.totalUs > a.totalUs ? b : a));
    steps.push({
      index: k + 1, start_us: s.startUs, total_us: s.totalUs, compile_us: s.compileUs, execute_us: s.executeUs,
      transfer_us: s.transferUs, host_us: s.hostUs, other_us: s.otherUs,
    });
  }
  const index = new Map<string, OpRow>();
  for (const h of hosts) {
    for (const o of h.summary.ops) {
      const key = `${o.program}\u0000${o.name}`;
      const row = index.get(key);
      if (!row) { index.set(key, { ...o }); continue; }
      row.count += o.count; row.selfUs += o.selfUs; row.totalUs += o.totalUs; row.flops += o.flops; row.bytes += o.bytes;
    }
  }
  const ops = [...index.values()].sort((a, b) => b.selfUs - a.selfUs);
  const ov = hosts.map((h) => h.summary.overview);
  const first = ov.find((o) => o.deviceCount > 0) ?? ov[0];
  const busy = ov.reduce((a, o) => a + o.busyUs, 0);
  const active = ov.reduce((a, o) => a + o.activeUs, 0);
  return {
    device: {
      hardware: first?.hardware ?? 'CPU', device_type: first?.deviceType ?? '',
      device_count: ov.reduce((a, o) => a + o.deviceCount, 0), host_count: hosts.length,
      peak_tflops: first?.peakTflops ?? 0, hbm_gbs: first?.hbmGBs ?? 0,
      busy_percent: active > 0 ? (100 * busy) / active : 0,
    },
    step_source: ov.find((o) => o.stepSource !== 'none')?.stepSource ?? 'none',
    steps, ops, hosts: rows, slowest,
  };
}

/** The run view's side-by-side message for these hosts (the 200 ops with the most self time, combined). */
export function hostsMessage(hosts: readonly HostProfile[]): Omit<ProfileHostsMessage, 'type' | 'errors'> {
  const c = combineHosts(hosts);
  return {
    hosts: c.hosts.map((h, k) => ({
      host: h.host, location: h.file, steps: h.steps, avgStepUs: h.avg_step_us, idlePercent: h.idle_percent, busyUs: hosts[k].summary.overview.busyUs,
    })),
    slowest: c.slowest,
    ops: c.ops.slice(0, 200),
  };
}
