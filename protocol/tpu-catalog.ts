/**
 * The TPU slice shapes TPU Workbench knows offline, as Cloud TPU publishes them: the emulator serves this catalog
 * (emulator/src/catalog.ts), the product plans slices with it (hosts per type) and the language server completes
 * accelerator types in task YAML from it, so all three offer the same types.
 */

/** TPU generations, named as google.cloud.tpu.v2.AcceleratorConfig.Type names them. */
export type TpuGeneration = 'V4' | 'V5LITE_POD' | 'V5P' | 'V6E';

export interface TpuFamily {
  prefix: string;
  generation: TpuGeneration;
  /** v4 and v5p count TensorCores (2 per chip); v5e and v6e count chips. */
  coresPerUnit: 1 | 2;
  sizes: number[];
}

export const TPU_CATALOG_FAMILIES: readonly TpuFamily[] = [
  { prefix: 'v4', generation: 'V4', coresPerUnit: 2, sizes: [8, 16, 32] },
  { prefix: 'v5litepod', generation: 'V5LITE_POD', coresPerUnit: 1, sizes: [1, 4, 8, 16, 32] },
  { prefix: 'v5p', generation: 'V5P', coresPerUnit: 2, sizes: [8, 16, 32] },
  { prefix: 'v6e', generation: 'V6E', coresPerUnit: 1, sizes: [1, 4, 8, 16, 32] },
];

/** Every accelerator type of the catalog, as Cloud TPU names them (v5litepod-16). */
export function catalogAcceleratorTypes(): string[] {
  return TPU_CATALOG_FAMILIES.flatMap((f) => f.sizes.map((n) => `${f.prefix}-${n}`));
}

export interface AcceleratorInfo {
  /** e.g. "v5litepod-16" */
  type: string;
  generation: TpuGeneration;
  /** The N in "<family>-N": TensorCores for v4/v5p, chips for v5e/v6e. */
  size: number;
  chips: number;
  /** Hosts (TPU VM workers) in the slice; each gets its own SSH server in the emulator. */
  workers: number;
  /** As the API reports it in acceleratorConfigs[].topology, e.g. "4x4" or "2x2x2". */
  topology: string;
}

/** Chips per host in a multi-host slice. Single-host v5e/v6e shapes go up to 8 chips on one host. */
const CHIPS_PER_HOST = 4;
const MAX_SINGLE_HOST_CHIPS_LITE = 8;

/**
 * Workers (hosts) for `<prefix>-<size>`.
 * v4/v5p: size counts TensorCores, 2 per chip, 4 chips per host → max(1, size/8).
 * v5e/v6e: size counts chips; up to 8 chips fit one host, bigger slices have 4 chips per host.
 */
export function workersFor(generation: TpuGeneration, size: number): number {
  if (generation === 'V4' || generation === 'V5P') return Math.max(1, Math.floor(size / (2 * CHIPS_PER_HOST)));
  if (size <= MAX_SINGLE_HOST_CHIPS_LITE) return 1;
  return Math.ceil(size / CHIPS_PER_HOST);
}

/** The chip topology string the API reports (3D for v4/v5p, 2D for v5e/v6e). */
export function topologyFor(generation: TpuGeneration, chips: number): string {
  if (generation === 'V4' || generation === 'V5P') {
    // 2x2 chips per host, stacked along z.
    if (chips <= 4) return '2x2x1';
    return `2x2x${chips / 4}`;
  }
  const shapes: Record<number, string> = { 1: '1x1', 4: '2x2', 8: '2x4', 16: '4x4', 32: '4x8', 64: '8x8', 128: '8x16', 256: '16x16' };
  return shapes[chips] ?? `1x${chips}`;
}

function build(): AcceleratorInfo[] {
  const out: AcceleratorInfo[] = [];
  for (const f of TPU_CATALOG_FAMILIES) {
    for (const size of f.sizes) {
      const chips = size / f.coresPerUnit;
      out.push({
        type: `${f.prefix}-${size}`,
        generation: f.generation,
        size,
        chips,
        workers: workersFor(f.generation, size),
        topology: topologyFor(f.generation, chips),
      });
    }
  }
  return out;
}

export const ACCELERATOR_TYPES: readonly AcceleratorInfo[] = Object.freeze(build());

export function acceleratorInfo(type: string): AcceleratorInfo | undefined {
  return ACCELERATOR_TYPES.find((a) => a.type === type);
}

export function acceleratorTypeNames(): string[] {
  return ACCELERATOR_TYPES.map((a) => a.type);
}

/** The accelerator type `{type, topology}` names (CreateNode's acceleratorConfig), if the catalog has it. */
export function acceleratorByConfig(generation: string, topology: string): AcceleratorInfo | undefined {
  return ACCELERATOR_TYPES.find((a) => a.generation === generation && a.topology === topology);
}
