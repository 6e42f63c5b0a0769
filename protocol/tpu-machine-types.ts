/**
 * TPU accelerator types as Compute Engine offers them: which machine type a VM of a slice gets, how many chips
 * it has, how many VMs a topology needs, and whether the Cloud TPU API offers the type too. Facts from Google's
 * public TPU pages ("TPU v5e", "TPU v5p", "TPU v6e", "TPU7x (Ironwood)", "Cloud TPU resources in Compute Engine"):
 * - machine types: v4 ct4p-hightpu-4t; v5e ct5lp-hightpu-{1,4,8}t; v5p ct5p-hightpu-4t; v6e ct6e-standard-{1,4,8}t;
 *   TPU7x tpu7x-standard-{1,4}t (the trailing number is the VM's chip count);
 * - v4, v5p and TPU7x chips hold two TensorCores and their accelerator-type suffix counts TensorCores
 *   (v5p-8 = 4 chips, tpu7x-16 = 8 chips); v5e and v6e suffixes count chips;
 * - 3D topologies (v4, v5p, TPU7x): 4 chips per VM, 2x2x1 is one VM, 2x2x2 two (v5p's table: 2x2x2, 16 cores,
 *   8 chips, 2 hosts); 2D (v5e, v6e): 1x1, 2x2 and 2x4 fit one VM, larger slices have 4 chips per VM;
 * - a TPU7x chip shows up as two devices to the frameworks; the others as one;
 * - the Cloud TPU API is not supported on TPU7x and later: only Compute Engine (or GKE) makes those.
 */

/** A type or topology Compute Engine would refuse; the message names it. Each side wraps it in its own error. */
export class TpuShapeError extends Error {
  readonly code = 'INVALID_ARGUMENT';
  constructor(message: string) {
    super(message);
    this.name = 'TpuShapeError';
  }
}

export type TpuFamily = 'v4' | 'v5litepod' | 'v5p' | 'v6e' | 'tpu7x';

export interface TpuFamilyInfo {
  family: TpuFamily;
  /** A name for people, e.g. "TPU7x (Ironwood)". */
  label: string;
  /** 2: the type's suffix counts TensorCores (two per chip); 1: it counts chips. */
  suffixPerChip: 1 | 2;
  /** Devices a framework sees per chip (TPU7x: 2). */
  devicesPerChip: 1 | 2;
  dims: 2 | 3;
  /** Machine types by chips per VM. */
  machineTypes: Readonly<Record<number, string>>;
  /** Chips per VM in a multi-host slice. */
  multiHostChipsPerVm: number;
  /** The Cloud TPU API (tpu.googleapis.com) can create this family. */
  tpuApi: boolean;
  /** Google's public TPU VM image family for Compute Engine, used when none is given. */
  defaultImage: string;
}

export const TPU_FAMILIES: readonly TpuFamilyInfo[] = Object.freeze<TpuFamilyInfo[]>([
  { family: 'v4', label: 'TPU v4', suffixPerChip: 2, devicesPerChip: 1, dims: 3, machineTypes: { 4: 'ct4p-hightpu-4t' }, multiHostChipsPerVm: 4, tpuApi: true, defaultImage: 'tpu-vm-ubuntu2204-base' },
  {
    family: 'v5litepod', label: 'TPU v5e', suffixPerChip: 1, devicesPerChip: 1, dims: 2,
    machineTypes: { 1: 'ct5lp-hightpu-1t', 4: 'ct5lp-hightpu-4t', 8: 'ct5lp-hightpu-8t' }, multiHostChipsPerVm: 4, tpuApi: true, defaultImage: 'tpu-vm-ubuntu2204-base',
  },
  { family: 'v5p', label: 'TPU v5p', suffixPerChip: 2, devicesPerChip: 1, dims: 3, machineTypes: { 4: 'ct5p-hightpu-4t' }, multiHostChipsPerVm: 4, tpuApi: true, defaultImage: 'tpu-vm-ubuntu2204-base' },
  {
    family: 'v6e', label: 'TPU v6e (Trillium)', suffixPerChip: 1, devicesPerChip: 1, dims: 2,
    machineTypes: { 1: 'ct6e-standard-1t', 4: 'ct6e-standard-4t', 8: 'ct6e-standard-8t' }, multiHostChipsPerVm: 4, tpuApi: true, defaultImage: 'tpu-vm-ubuntu2204-base',
  },
  {
    family: 'tpu7x', label: 'TPU7x (Ironwood)', suffixPerChip: 2, devicesPerChip: 2, dims: 3,
    machineTypes: { 1: 'tpu7x-standard-1t', 4: 'tpu7x-standard-4t' }, multiHostChipsPerVm: 4, tpuApi: false, defaultImage: 'tpu-vm-ubuntu2204-base',
  },
]);

/** A TPU machine type of Compute Engine. */
export interface TpuMachineType {
  name: string;
  family: TpuFamily;
  chips: number;
}

export const TPU_MACHINE_TYPES: readonly TpuMachineType[] = Object.freeze(
  TPU_FAMILIES.flatMap((f) => Object.entries(f.machineTypes).map(([chips, name]) => ({ name, family: f.family, chips: Number(chips) }))),
);

/** What a slice of one accelerator type and topology is made of on Compute Engine. */
export interface TpuSliceShape {
  /** e.g. "tpu7x-16" */
  acceleratorType: string;
  family: TpuFamily;
  /** e.g. "2x2x2" */
  topology: string;
  chips: number;
  /** VMs (hosts, workers) in the slice: 1 is a single-host VM, more is a multi-host slice (a MIG). */
  vmCount: number;
  chipsPerVm: number;
  machineType: string;
  devicesPerChip: number;
  /** Devices the whole slice shows to a framework (chips × devicesPerChip). */
  devices: number;
  /** The Cloud TPU API offers this type (false for TPU7x: Compute Engine only). */
  tpuApiOffers: boolean;
}

/** Slice shapes per family, smallest first: the topologies Google's pages list for each. */
const DEFAULT_TOPOLOGIES: Record<2 | 3, Record<number, string>> = {
  2: { 1: '1x1', 4: '2x2', 8: '2x4', 16: '4x4', 32: '4x8', 64: '8x8', 128: '8x16', 256: '16x16' },
  3: { 1: '1x1x1', 4: '2x2x1', 8: '2x2x2', 16: '2x2x4', 32: '2x4x4', 64: '4x4x4', 128: '4x4x8', 256: '4x8x8', 512: '8x8x8', 1024: '8x8x16', 2048: '8x16x16', 4096: '16x16x16' },
};

export function familyInfo(family: string): TpuFamilyInfo | undefined {
  return TPU_FAMILIES.find((f) => f.family === family);
}

export function machineTypeInfo(name: string): TpuMachineType | undefined {
  return TPU_MACHINE_TYPES.find((m) => m.name === name);
}

/** Splits "tpu7x-16" into its family and suffix; undefined when it is not a TPU accelerator type we know. */
export function parseAcceleratorType(type: string): { family: TpuFamilyInfo; suffix: number } | undefined {
  const m = /^(v4|v5litepod|v5p|v6e|tpu7x)-(\d+)$/.exec(type.trim());
  if (!m) return undefined;
  const family = familyInfo(m[1]);
  const suffix = Number(m[2]);
  if (!family || !Number.isSafeInteger(suffix) || suffix <= 0) return undefined;
  return { family, suffix };
}

/**
 * The slice an accelerator type (and optionally a topology) describes. Throws a TpuShapeError naming the type or
 * the topology when Compute Engine would refuse it.
 */
export function resolveSliceShape(acceleratorType: string, topology?: string): TpuSliceShape {
  const parsed = parseAcceleratorType(acceleratorType);
  const known = TPU_FAMILIES.map((f) => `${f.family}-N`).join(', ');
  if (!parsed) throw new TpuShapeError(`Unknown TPU accelerator type "${acceleratorType}": use one of ${known} (e.g. tpu7x-8, v6e-8, v5p-8, v5litepod-4).`);
  const { family, suffix } = parsed;
  if (suffix % family.suffixPerChip !== 0) {
    throw new TpuShapeError(`Unknown TPU accelerator type "${acceleratorType}": the ${family.label} suffix counts TensorCores, two per chip, so it must be even.`);
  }
  const chips = suffix / family.suffixPerChip;
  const defaultTopology = DEFAULT_TOPOLOGIES[family.dims][chips];
  const topo = topology?.trim() || defaultTopology;
  if (!topo) {
    const sizes = Object.keys(DEFAULT_TOPOLOGIES[family.dims]).map((c) => `${family.family}-${Number(c) * family.suffixPerChip}`);
    throw new TpuShapeError(`Unknown TPU accelerator type "${acceleratorType}": ${family.label} slices come in ${sizes.join(', ')}.`);
  }
  const problem = topologyProblem(family, topo, chips);
  if (problem) throw new TpuShapeError(`Topology "${topo}" is not valid for ${acceleratorType}: ${problem}.`);
  return shapeOf(family, topo, chips);
}

/** The slice of `family` with `topology` (e.g. tpu7x, 2x2x2 → tpu7x-16, 2 VMs). */
export function shapeFromTopology(family: string, topology: string): TpuSliceShape {
  const f = familyInfo(family);
  if (!f) throw new TpuShapeError(`Unknown TPU family "${family}": use one of ${TPU_FAMILIES.map((x) => x.family).join(', ')}.`);
  const chips = chipsOf(topology);
  if (chips === undefined) throw new TpuShapeError(`Topology "${topology}" is not valid for ${f.label}: write it as ${f.dims === 3 ? 'AxBxC (e.g. 2x2x2)' : 'AxB (e.g. 4x4)'}.`);
  return resolveSliceShape(`${f.family}-${chips * f.suffixPerChip}`, topology);
}

/** The slice shapes Compute Engine offers, family by family (for pickers and completion). */
export function listSliceShapes(): TpuSliceShape[] {
  return TPU_FAMILIES.flatMap((f) =>
    Object.entries(DEFAULT_TOPOLOGIES[f.dims])
      .filter(([chips]) => topologyProblem(f, DEFAULT_TOPOLOGIES[f.dims][Number(chips)], Number(chips)) === undefined)
      .map(([chips, topo]) => shapeOf(f, topo, Number(chips))),
  );
}

function chipsOf(topology: string): number | undefined {
  if (!/^\d+(x\d+){1,2}$/.test(topology)) return undefined;
  const dims = topology.split('x').map(Number);
  if (dims.some((d) => d <= 0)) return undefined;
  return dims.reduce((a, b) => a * b, 1);
}

function topologyProblem(family: TpuFamilyInfo, topology: string, chips: number): string | undefined {
  const dims = topology.split('x').map(Number);
  if (!/^\d+(x\d+)*$/.test(topology) || dims.length !== family.dims || dims.some((d) => d <= 0)) {
    return `${family.label} topologies have ${family.dims} dimensions (e.g. ${family.dims === 3 ? '2x2x2' : '4x4'})`;
  }
  const product = dims.reduce((a, b) => a * b, 1);
  if (product !== chips) return `it has ${product} chips and the type has ${chips}`;
  if (family.machineTypes[chips]) return undefined;
  if (chips % family.multiHostChipsPerVm !== 0 || chips < family.multiHostChipsPerVm) {
    return `a multi-host ${family.label} slice has a multiple of ${family.multiHostChipsPerVm} chips`;
  }
  // Slices are built from whole VMs of 2x2 chips: the first two dimensions (2D: both) are even.
  if (dims.slice(0, 2).some((d) => d % 2 !== 0)) return `${family.label} slices are built from 2x2 chip blocks, so its first two dimensions must be even`;
  return undefined;
}

function shapeOf(family: TpuFamilyInfo, topology: string, chips: number): TpuSliceShape {
  const single = family.machineTypes[chips];
  const chipsPerVm = single ? chips : family.multiHostChipsPerVm;
  return {
    acceleratorType: `${family.family}-${chips * family.suffixPerChip}`,
    family: family.family,
    topology,
    chips,
    vmCount: chips / chipsPerVm,
    chipsPerVm,
    machineType: single ?? family.machineTypes[family.multiHostChipsPerVm],
    devicesPerChip: family.devicesPerChip,
    devices: chips * family.devicesPerChip,
    tpuApiOffers: family.tpuApi,
  };
}
