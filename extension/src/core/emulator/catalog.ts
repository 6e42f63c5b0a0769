/**
 * What the local emulator offers: accelerator types (with their worker counts and topologies) and runtime
 * versions. The numbers follow Cloud TPU's published slice shapes so that a VM created on the emulator has as
 * many workers as the real one would, which is what makes "run on every worker" testable on a laptop.
 */

import { TPU_CATALOG_FAMILIES, type TpuGeneration } from '../../../../protocol/tpu-catalog';
import { TPU_CHIP_FACTS } from '../../../../protocol/tpu-metric-service';
import type { ChipSpec } from './chip-activity';

export type { TpuGeneration } from '../../../../protocol/tpu-catalog';

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

/** The shapes themselves live in protocol/, where the language server reads them too. */
const FAMILIES = TPU_CATALOG_FAMILIES;

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
  for (const f of FAMILIES) {
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

/** The chips on one worker of `type` and the HBM of each (a type the catalog lacks: 4 chips of 16 GiB, v5e's). */
export function chipSpecFor(type: string): ChipSpec {
  const info = acceleratorInfo(type);
  const facts = TPU_CHIP_FACTS[info?.generation ?? 'V5LITE_POD'];
  return { chips: info ? Math.max(1, Math.round(info.chips / info.workers)) : CHIPS_PER_HOST, hbmBytesPerChip: facts.hbmGiB * 2 ** 30 };
}

export function acceleratorTypeNames(): string[] {
  return ACCELERATOR_TYPES.map((a) => a.type);
}

/**
 * Runtime (software) versions the emulator accepts, each with the TPU generations it boots on: the TPU docs'
 * per-generation images (v4: the Ubuntu 22.04 base and the tpu-vm-v4 images; v5e, v5p and v6e: their
 * v2-alpha images). CreateNode refuses a version on a generation it does not support, as Cloud TPU does.
 */
const RUNTIMES: readonly { version: string; generations: readonly TpuGeneration[] }[] = Object.freeze([
  { version: 'tpu-ubuntu2204-base', generations: ['V4'] },
  { version: 'tpu-vm-v4-base', generations: ['V4'] },
  { version: 'tpu-vm-v4-pt-2.0', generations: ['V4'] },
  { version: 'v2-alpha-tpuv5', generations: ['V5P'] },
  { version: 'v2-alpha-tpuv5-lite', generations: ['V5LITE_POD'] },
  { version: 'v2-alpha-tpuv6e', generations: ['V6E'] },
]);

export const RUNTIME_VERSIONS: readonly string[] = Object.freeze(RUNTIMES.map((r) => r.version));

export function isRuntimeVersion(v: string): boolean {
  return RUNTIME_VERSIONS.includes(v);
}

/** Runtime versions that boot on `accel`'s generation. */
export function runtimeVersionsFor(accel: AcceleratorInfo): string[] {
  return RUNTIMES.filter((r) => r.generations.includes(accel.generation)).map((r) => r.version);
}

/** Why `version` cannot run on `accel` (in Cloud TPU's words), or undefined when it can. */
export function runtimeVersionProblem(accel: AcceleratorInfo, version: string): string | undefined {
  if (!isRuntimeVersion(version)) {
    return `Cloud TPU received a bad request: runtime version "${version}" was not found. Valid versions: ${RUNTIME_VERSIONS.join(', ')}.`;
  }
  const ok = runtimeVersionsFor(accel);
  if (ok.includes(version)) return undefined;
  return `Cloud TPU received a bad request: runtime version "${version}" is not supported for accelerator type "${accel.type}". Supported versions for ${accel.type}: ${ok.join(', ')}.`;
}

/** The accelerator type `{type, topology}` names (CreateNode's acceleratorConfig), if the catalog has it. */
export function acceleratorByConfig(generation: string, topology: string): AcceleratorInfo | undefined {
  return ACCELERATOR_TYPES.find((a) => a.generation === generation && a.topology === topology);
}

/** Zones the emulator serves by default: real zones that offer v4, v5e, v5p and v6e. */
export const DEFAULT_ZONES: readonly string[] = Object.freeze(['us-central2-b', 'us-east5-b', 'us-east1-d', 'europe-west4-a']);

/** Port the TPU runtime's gRPC endpoint listens on; the API reports it in networkEndpoints[].port. */
export const WORKER_ENDPOINT_PORT = 8470;
