/**
 * What a profile capture's file is called, in TensorBoard's layout (<profile_dir>/plugins/profile/<run>/<host><suffix>):
 * an XSpace (`.xplane.pb`: torch_xla, TorchTPU, JAX) or torch.profiler's Chrome trace (`.pt.trace.json`: the trainer's
 * native path on CPU and CUDA). The profile analysis reads both (native/profile/src/cli.rs names them the same way).
 */
export const CAPTURE_SUFFIXES = ['.xplane.pb', '.pt.trace.json'] as const;

export function isCaptureName(name: string): boolean {
  return CAPTURE_SUFFIXES.some((s) => name.endsWith(s));
}

/** The host (or host and rank) a capture's file name gives: the name less its suffix. */
export function captureHost(name: string): string {
  const suffix = CAPTURE_SUFFIXES.find((s) => name.endsWith(s));
  return suffix ? name.slice(0, -suffix.length) : name;
}

/** `find` tests that select captures (arguments of a shell command; the patterns are single-quoted). */
export const FIND_CAPTURES = `\\( ${CAPTURE_SUFFIXES.map((s) => `-name '*${s}'`).join(' -o ')} \\)`;
