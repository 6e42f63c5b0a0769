import type { NodeState } from '../tpu/models';
import type { IInstance } from './client';
import type { ComputeSlice, ComputeWorker, Provisioning } from './provider';
import { familyInfo, machineTypeInfo, resolveSliceShape } from './tpu-machine-types';

/** Compute Engine instances read as TPU slices: state in the Cloud TPU vocabulary, provisioning, workers in worker-id order. */

export function isTpu(i: IInstance): boolean {
  return machineTypeInfo(shortName(i.machineType ?? '')) !== undefined;
}

export function instanceSlice(project: string, zone: string, i: IInstance, preempted = false): ComputeSlice {
  const mt = machineTypeInfo(shortName(i.machineType ?? ''));
  const f = mt ? familyInfo(mt.family) : undefined;
  const chips = mt?.chips ?? 0;
  const acceleratorType = i.labels?.['tpw-accelerator-type'] ?? (mt && f ? `${mt.family}-${chips * f.suffixPerChip}` : '');
  let topology: string | undefined;
  try {
    topology = resolveSliceShape(acceleratorType).topology;
  } catch {
    topology = undefined;
  }
  return {
    controlPlane: 'compute', kind: 'instance', name: i.name ?? '', project, zone, machineType: mt?.name ?? shortName(i.machineType ?? ''),
    acceleratorType, ...(topology ? { topology } : {}), state: preempted ? 'PREEMPTED' : instanceState(i.status ?? ''), status: i.status ?? 'UNKNOWN',
    ...provisioningDetails(i), workers: workersOf([i]), labels: { ...(i.labels ?? {}) }, metadata: metadataOf(i),
    ...(i.creationTimestamp ? { createTime: i.creationTimestamp } : {}),
  };
}

/** Compute Engine instance status → the Cloud TPU node state the UI and runs already speak. */
export function instanceState(status: string): NodeState {
  switch (status) {
    case 'PROVISIONING':
    case 'STAGING':
      return 'CREATING';
    case 'RUNNING':
      return 'READY';
    case 'STOPPING':
    case 'SUSPENDING':
      return 'STOPPING';
    case 'TERMINATED':
    case 'SUSPENDED':
      return 'STOPPED';
    case 'REPAIRING':
      return 'REPAIRING';
    default:
      return 'UNKNOWN';
  }
}

export function provisioningOf(i: IInstance): Provisioning {
  const model = i.scheduling?.provisioningModel;
  if (model === 'SPOT') return 'spot';
  if (model === 'FLEX_START') return 'flex-start';
  if (i.reservationAffinity?.consumeReservationType === 'SPECIFIC_RESERVATION') return 'reservation';
  return 'on-demand';
}

/** Provisioning with what a recreate must keep: the reservation's name, flex-start's max run duration. */
export function provisioningDetails(i: Pick<IInstance, 'scheduling' | 'reservationAffinity'>): Pick<ComputeSlice, 'provisioning' | 'reservation' | 'maxRunDurationSeconds'> {
  const provisioning = provisioningOf(i);
  const reservation = provisioning === 'reservation' ? i.reservationAffinity?.values?.[0] : undefined;
  const seconds = Number(i.scheduling?.maxRunDuration?.seconds ?? NaN);
  return { provisioning, ...(reservation ? { reservation } : {}), ...(provisioning === 'flex-start' && Number.isFinite(seconds) ? { maxRunDurationSeconds: seconds } : {}) };
}

export function metadataOf(i: IInstance): Record<string, string> {
  return Object.fromEntries((i.metadata?.items ?? []).map((x) => [x.key ?? '', x.value ?? '']));
}

/** Workers in worker-id order: `agent-worker-number` when the VM has it, else by name. */
export function workersOf(instances: IInstance[]): ComputeWorker[] {
  const keyed = instances.map((i) => ({ i, n: Number(metadataOf(i)['agent-worker-number'] ?? NaN) }));
  keyed.sort((a, b) => (Number.isFinite(a.n) && Number.isFinite(b.n) ? a.n - b.n : (a.i.name ?? '').localeCompare(b.i.name ?? '')));
  return keyed.map(({ i }, index) => {
    const nic = i.networkInterfaces?.[0];
    const external = nic?.accessConfigs?.find((a) => a.natIP)?.natIP ?? undefined;
    return { index, instance: i.name ?? '', status: i.status ?? 'UNKNOWN', internalIp: nic?.networkIP ?? '', ...(external ? { externalIp: external } : {}) };
  });
}

export function shortName(link: string): string {
  return link.slice(link.lastIndexOf('/') + 1);
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });
}
