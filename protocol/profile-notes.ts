/**
 * The sentences `tpw profile` and the run view both show where a capture has no steps or leaves kernels out of
 * its op table: one wording for both, from the summary they both receive.
 */
import type { ProfileOverview, ProfileSummary, UnattributedKernels } from './run-view-messages';

/** Where the steps came from, as a phrase ("… steps (from PHRASE)"). */
export const STEP_SOURCE: Record<ProfileOverview['stepSource'], string> = {
  device: "the devices' Steps lines",
  annotations: 'step annotations: the device work under each, as xprof groups it',
  host: "the host's program dispatches",
  none: 'nowhere',
};

/** Why a capture has no steps: the three sources the analysis looks for, none found. */
export const NO_STEPS_NOTE =
  'No steps: no device has a Steps line, no step annotation (jax.profiler.StepTraceAnnotation, or a TraceMe with ' +
  'step_num) groups the device work, and no host dispatched XLA programs step by step (ExecuteComputation).';

/** The unattributed kernels of several summaries (the hosts of one run) as one. */
export function sumUnattributed(summaries: readonly Pick<ProfileSummary, 'unattributedKernels'>[]): UnattributedKernels {
  const out: UnattributedKernels = { count: 0, selfUs: 0, names: {} };
  for (const s of summaries) {
    out.count += s.unattributedKernels.count;
    out.selfUs += s.unattributedKernels.selfUs;
    for (const [n, c] of Object.entries(s.unattributedKernels.names)) out.names[n] = (out.names[n] ?? 0) + c;
  }
  return out;
}

/** What became of kernels that no op was charged for, and how to see them per op; '' when there were none. */
export function unattributedNote(u: UnattributedKernels, fmtUs: (us: number) => string): string {
  if (!u.count) return '';
  const names = Object.entries(u.names).sort((a, b) => b[1] - a[1]);
  const listed = names.slice(0, 3).map(([n, c]) => `${n} ×${c}`).join(', ') + (names.length > 3 ? ', …' : '');
  const commandBuffers = names.some(([n]) => /^command_buffer/.test(n));
  return `${u.count} kernels (${fmtUs(u.selfUs)}) named an HLO op that their program's HLO does not hold (${listed}), ` +
    'so, as in xprof, no op is charged for them.' +
    (commandBuffers
      ? ' XLA ran them inside CUDA command buffers (CUDA graphs), and the capture names the buffer, not the ops in it. ' +
        'For per-op statistics, profile with XLA_FLAGS=--xla_gpu_enable_command_buffer= (each kernel then launched on its own).'
      : '');
}
