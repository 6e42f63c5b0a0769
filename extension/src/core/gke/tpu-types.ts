import { TpwError } from '../errors';
import XPK_TOPOLOGIES from './xpk-topologies.json';

/**
 * TPU types as GKE and xpk 1.16.0 see them: the node labels a workload selects (`gke-tpu-accelerator`,
 * `gke-tpu-topology`), the machine type of each node, the pods per slice and the chips each pod asks for.
 *
 * xpk's table (xpk/core/system_characteristics.py) is the oracle: test/fixtures/gke/xpk/tpu-types.json holds all of
 * its 2,020 TPU entries and test/unit/gke-tpu-types.test.ts checks these rules against every one. Which names exist
 * and which topology each means (`tpu7x-128` is 4x4x4) is xpk's data, kept in xpk-topologies.json (generated from
 * that fixture; xpk is Apache-2.0); the rest follows from the topology.
 */

export interface GkeTpuType {
  /** As the user names it: `v5litepod-16`, `v6e-256`, `tpu7x-16`, `v4-2x2x2`. */
  name: string;
  /** `cloud.google.com/gke-tpu-accelerator`. */
  accelerator: string;
  /** `cloud.google.com/gke-tpu-topology`. */
  topology: string;
  /** The node pool's machine type, e.g. ct5lp-hightpu-4t. */
  machineType: string;
  chips: number;
  chipsPerVm: number;
  /** Nodes (TPU VMs) per slice = pods per slice. */
  vmsPerSlice: number;
  /** Multi-host TPU7x slices need a Compute Engine workload policy (xpk's placement-policy node selector). */
  workloadPolicy: boolean;
}

interface Family {
  accelerator: string;
  machinePrefix: string;
}

/** The name's family prefix → GKE's accelerator label and the machine types' prefix (`<prefix>-<chips per VM>t`). */
const FAMILIES: Readonly<Record<string, Family>> = {
  v4: { accelerator: 'tpu-v4-podslice', machinePrefix: 'ct4p-hightpu' },
  v5litepod: { accelerator: 'tpu-v5-lite-podslice', machinePrefix: 'ct5lp-hightpu' },
  v5p: { accelerator: 'tpu-v5p-slice', machinePrefix: 'ct5p-hightpu' },
  v6e: { accelerator: 'tpu-v6e-slice', machinePrefix: 'ct6e-standard' },
  tpu7x: { accelerator: 'tpu7x', machinePrefix: 'tpu7x-standard' },
  tpu7: { accelerator: 'tpu7', machinePrefix: 'tpu7-standard' },
};

const TOPOLOGIES: Readonly<Record<string, string>> = XPK_TOPOLOGIES;

/** Every counted TPU type name xpk knows (`v5litepod-16`, …), for completion and "did you mean". */
export function knownTpuTypeNames(): string[] {
  return Object.keys(TOPOLOGIES).filter((n) => /-\d+$/.test(n));
}

/** The GKE shape of a TPU type name; INVALID_ARGUMENT naming it when xpk would not know it either. */
export function gkeTpuType(name: string): GkeTpuType {
  const m = /^([a-z0-9]+?)-\d/.exec(name.trim());
  const family = m ? FAMILIES[m[1]] : undefined;
  const topology = Object.hasOwn(TOPOLOGIES, name.trim()) ? TOPOLOGIES[name.trim()] : undefined;
  if (!m || !family || !topology) {
    throw new TpwError('INVALID_ARGUMENT', `Unknown TPU type "${name}" for GKE: use a name such as v5litepod-16, v6e-256, v5p-8, v4-16 or tpu7x-16.`);
  }
  const chips = topology.split('x').reduce((n, d) => n * Number(d), 1);
  // A slice of fewer than 4 chips is one VM with all of them; every bigger slice has 4 chips per VM.
  const chipsPerVm = chips < 4 ? chips : 4;
  const vmsPerSlice = chips / chipsPerVm;
  const multiHost7 = (m[1] === 'tpu7x' || m[1] === 'tpu7') && vmsPerSlice > 1;
  return {
    name: name.trim(),
    accelerator: family.accelerator,
    topology,
    machineType: `${family.machinePrefix}-${chipsPerVm}t`,
    chips,
    chipsPerVm,
    vmsPerSlice,
    workloadPolicy: multiHost7,
  };
}

/** The GKE TPU type a node pool's labels and machine type describe, or undefined for a pool without TPUs. */
export function tpuTypeOfNodePool(accelerator: string | undefined, topology: string | undefined): { family: string; name: string } | undefined {
  if (!accelerator || !topology) return undefined;
  const family = Object.entries(FAMILIES).find(([, f]) => f.accelerator === accelerator)?.[0];
  if (!family) return undefined;
  const chips = topology.split('x').reduce((n, d) => n * Number(d), 1);
  // Counted names: v4, v5p and TPU7x count TensorCores (two per chip), v5e and v6e chips.
  const perChip = family === 'v5litepod' || family === 'v6e' ? 1 : 2;
  const counted = `${family}-${chips * perChip}`;
  return { family, name: TOPOLOGIES[counted] === topology ? counted : `${family}-${topology}` };
}
