/**
 * What the local emulator offers: the accelerator types of Cloud TPU's catalog (protocol/tpu-catalog.ts, with
 * their worker counts and topologies), runtime versions and zones. A VM created on the emulator has as many
 * workers as the real one would, which is what makes "run on every worker" testable on a laptop.
 */

import { acceleratorInfo, type AcceleratorInfo, type TpuGeneration } from '../../protocol/tpu-catalog';
import { TPU_CHIP_FACTS } from '../../protocol/tpu-metric-service';
import type { ChipSpec } from './chip-activity';

export { acceleratorByConfig, acceleratorInfo, acceleratorTypeNames, ACCELERATOR_TYPES } from '../../protocol/tpu-catalog';
export type { AcceleratorInfo, TpuGeneration } from '../../protocol/tpu-catalog';

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

/** Zones the emulator serves by default: real zones that offer v4, v5e, v5p and v6e. */
export const DEFAULT_ZONES: readonly string[] = Object.freeze(['us-central2-b', 'us-east5-b', 'us-east1-d', 'europe-west4-a']);

/** Port the TPU runtime's gRPC endpoint listens on; the API reports it in networkEndpoints[].port. */
export const WORKER_ENDPOINT_PORT = 8470;

/** The chips on one worker of `type` and the HBM of each (a type the catalog lacks: 4 chips of 16 GiB, v5e's). */
export function chipSpecFor(type: string): ChipSpec {
  const info = acceleratorInfo(type);
  const facts = TPU_CHIP_FACTS[info?.generation ?? 'V5LITE_POD'];
  return { chips: info ? Math.max(1, Math.round(info.chips / info.workers)) : 4, hbmBytesPerChip: facts.hbmGiB * 2 ** 30 };
}
