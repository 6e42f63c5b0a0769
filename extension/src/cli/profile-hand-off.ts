/**
 * When dist/tpw-profile hands `tpw profile` to the node CLI. Kept apart from its entry (profile-native.ts),
 * which runs as soon as it is loaded, so that tests can import it.
 */
import { statSync } from 'node:fs';
import { defaultThreads, splitsOverThreads } from '../core/profiles/parallel';
import { capturesOf } from './profile-command';
import { profileTarget } from './profile-main';

/**
 * Above this many bytes in all, node takes over. On 2 vCPUs this executable took 0.6–0.8× node's time at 34 MB and
 * 0.8–1.0× at 63 MB; from 100 MB the two were level (each ahead on some captures) and it held ~40% more memory
 * (BENCHMARKS.md, `profiles-native`).
 */
export const NODE_ABOVE_BYTES = 64 << 20;

/**
 * Whether node should analyze captures of these sizes: when they are big in all, or when one is big enough to
 * be split over threads and the machine has the cores for it (defaultThreads), as the node CLI would.
 */
export function handOffToNode(sizes: readonly number[], threads = defaultThreads()): boolean {
  let total = 0;
  for (const s of sizes) total += s;
  return total > NODE_ABOVE_BYTES || sizes.some((s) => splitsOverThreads(s, threads));
}

/** The sizes of the captures `argv` names; none where it names none that exist (profileMain then says why). */
export function captureSizes(argv: string[]): number[] {
  const target = profileTarget(argv);
  if (target === undefined) return [];
  try {
    return capturesOf(target).map((f) => statSync(f).size);
  } catch {
    return [];
  }
}
