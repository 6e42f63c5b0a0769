import type { EnvValue } from '../run/types';
import { shQuote } from '../ssh/quote';

/**
 * The environment a task's setup and run get on every host, as `sky launch` gives it on a TPU VM pod, where
 * each host of the slice is one SkyPilot node (sky/backends/cloud_vm_ray_backend.py, task_codegen.py):
 *
 *   run:    SKYPILOT_NODE_RANK (the host's index), SKYPILOT_NODE_IPS (every host's internal IP, one a line, in
 *           rank order), SKYPILOT_NUM_NODES, SKYPILOT_NUM_GPUS_PER_NODE (0 on a TPU), SKYPILOT_TASK_ID,
 *           SKYPILOT_CLUSTER_INFO (JSON: cluster_name, cloud, region, zone), SKYPILOT_USER
 *   setup:  SKYPILOT_SETUP_NODE_RANK, SKYPILOT_SETUP_NODE_IPS, SKYPILOT_SETUP_NUM_GPUS_PER_NODE, SKYPILOT_NUM_NODES,
 *           SKYPILOT_TASK_ID, SKYPILOT_CLUSTER_INFO, SKYPILOT_USER
 *
 * plus the TPU runtime's own: TPU_WORKER_ID, TPU_WORKER_HOSTNAMES, TPU_ACCELERATOR_TYPE, TPU_NAME. The task's
 * `envs` and `secrets` come first; SkyPilot's per-host variables are set after them (a task cannot fake its
 * rank), except SKYPILOT_TASK_ID, which a task may set itself, as SkyPilot allows.
 *
 * The rank is the one value that differs between hosts; the run's wrapper exports TPW_WORKER_INDEX before
 * reading the env file, so the file (the same on every host) refers to it instead of holding one copy per host.
 *
 * With num_nodes N > 1 the task runs on a multislice group of N slices, and SkyPilot's nodes are hosts of every
 * slice, slice-major, as SkyPilot numbers the hosts of N TPU pods (see MAX_NUM_NODES in protocol/task-yaml-spec.ts):
 * SKYPILOT_NODE_RANK = s * hostsPerSlice + w, SKYPILOT_NUM_NODES = N * hostsPerSlice, SKYPILOT_NODE_IPS lists
 * every host of slice 0, then of slice 1, …. The TPU variables stay per slice, as the TPU runtime sets them on
 * each slice (TPU_WORKER_ID = w, TPU_WORKER_HOSTNAMES and TPU_NAME of the host's own slice); the caller adds
 * the MEGASCALE_* variables (run/pipeline.ts sliceWorkers).
 */

export interface HostsInfo {
  cluster: string;
  /** Internal IPs of every host, in rank order (slice-major on a multislice group). */
  ips: string[];
  /** A multislice group's slices: their names, in slice order (absent or one: a single VM). */
  sliceNames?: string[];
  acceleratorType: string;
  zone: string;
  user: string;
  /** SkyPilot's form: sky-<timestamp>_<cluster>_<job>. */
  taskId: string;
}

const RANK: EnvValue = { shell: '"$TPW_WORKER_INDEX"' };

/** A value per slice, picked on the host by its slice (TPW_WORKER_INDEX / perSlice); one line, as the env file needs. */
function perSlice(values: readonly string[], hostsPerSlice: number): EnvValue {
  const arms = values.map((v, s) => `${s}) printf %s ${shQuote(v)};;`).join(' ');
  return { shell: `"$(case $((TPW_WORKER_INDEX / ${hostsPerSlice})) in ${arms} esac)"` };
}

export function taskEnv(which: 'setup' | 'run', values: Readonly<Record<string, string>>, hosts: HostsInfo): Record<string, EnvValue> {
  const env: Record<string, EnvValue> = { SKYPILOT_TASK_ID: hosts.taskId, ...values };
  const region = hosts.zone.replace(/-[a-z]$/, '');
  const slices = hosts.sliceNames && hosts.sliceNames.length > 1 ? hosts.sliceNames : undefined;
  const hostsPerSlice = slices ? hosts.ips.length / slices.length : hosts.ips.length;
  Object.assign(env, {
    SKYPILOT_NUM_NODES: String(hosts.ips.length),
    SKYPILOT_CLUSTER_INFO: JSON.stringify({ cluster_name: hosts.cluster, cloud: 'GCP', region, zone: hosts.zone }),
    SKYPILOT_USER: hosts.user,
    TPU_WORKER_ID: slices ? { shell: `$((TPW_WORKER_INDEX % ${hostsPerSlice}))` } : RANK,
    TPU_WORKER_HOSTNAMES: slices
      ? perSlice(slices.map((_, s) => hosts.ips.slice(s * hostsPerSlice, (s + 1) * hostsPerSlice).join(',')), hostsPerSlice)
      : hosts.ips.join(','),
    TPU_ACCELERATOR_TYPE: hosts.acceleratorType,
    TPU_NAME: slices ? perSlice(slices, hostsPerSlice) : hosts.cluster,
  });
  if (which === 'run') {
    Object.assign(env, { SKYPILOT_NODE_RANK: RANK, SKYPILOT_NODE_IPS: hosts.ips.join('\n'), SKYPILOT_NUM_GPUS_PER_NODE: '0' });
  } else {
    Object.assign(env, { SKYPILOT_SETUP_NODE_RANK: RANK, SKYPILOT_SETUP_NODE_IPS: hosts.ips.join('\n'), SKYPILOT_SETUP_NUM_GPUS_PER_NODE: '0' });
  }
  return env;
}

/** The names a task run sees, for the plan (values are never printed: some are secrets). */
export function skypilotVariableNames(which: 'setup' | 'run', slices = 1): string[] {
  const probe = taskEnv(which, {}, { cluster: 'c', ips: [], acceleratorType: 't', zone: 'z-a', user: 'u', taskId: 'i' });
  return [...Object.keys(probe), ...(slices > 1 ? MEGASCALE_NAMES : [])];
}

/** The multislice variables a run on a group also gets (run/pipeline.ts sliceWorkers sets them). */
const MEGASCALE_NAMES = ['MEGASCALE_COORDINATOR_ADDRESS', 'MEGASCALE_NUM_SLICES', 'MEGASCALE_SLICE_ID', 'MEGASCALE_PORT'];

/** SkyPilot's task id: `sky-<YYYY-MM-DD-HH-MM-SS-ffffff>_<cluster>_<job>`; tpw's run id stands for the job number. */
export function skypilotTaskId(cluster: string, runLabel: string, now = new Date()): string {
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  const ts = `${now.getUTCFullYear()}-${p(now.getUTCMonth() + 1)}-${p(now.getUTCDate())}-${p(now.getUTCHours())}-${p(now.getUTCMinutes())}-${p(now.getUTCSeconds())}-${p(now.getUTCMilliseconds() * 1000, 6)}`;
  return `sky-${ts}_${cluster}_${runLabel}`;
}

/**
 * SkyPilot's log prefix for a host: `(head, rank=0)`, `(worker1, rank=1)`, … on a multi-host VM; on a one-host
 * VM `(NAME)` with the task's name (or `task`), as `sky launch` prints them (without the pid).
 */
export function rankPrefix(worker: number, hosts: number, taskName: string | undefined, stage: 'setup' | 'run'): string {
  if (stage === 'setup') return hosts > 1 ? `(setup ${worker === 0 ? 'head' : `worker${worker}`}, rank=${worker})` : '(setup)';
  if (hosts <= 1) return `(${taskName ?? 'task'})`;
  return `(${worker === 0 ? 'head' : `worker${worker}`}, rank=${worker})`;
}
