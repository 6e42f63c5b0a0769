/**
 * The TPU slice shapes TPU Workbench knows offline: the emulator's catalog (extension/src/core/emulator/catalog.ts,
 * which the create wizard lists on the emulator) and the language server's accelerator completion in task YAML
 * both read them here, so the two offer the same types.
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
