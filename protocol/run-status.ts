/**
 * The one vocabulary for how a run and each of its workers stand: the run registry (and so `tpw runs`), the
 * Runs view, the run view's header and its worker chips all speak it, so a run reads the same everywhere.
 */

/**
 * A run as a whole. `stopping` is a run someone asked to stop (Stop, `tpw stop`, Cancel) whose workers are still
 * being signalled; `cancelled` is one that ended that way; `preempted` is a run whose VM
 * was taken away (or whose trainer exited with its preempted status), which is not a failure of the program;
 * `unknown` stands for a recorded status this version does not know (another version wrote it, or it is damaged).
 */
export const RUN_STATUSES = ['starting', 'running', 'stopping', 'succeeded', 'failed', 'cancelled', 'preempted', 'unknown'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/**
 * One worker of a run. `exited` is an exit on its own (code 0 or not: the chip shows the code); `failed` is a
 * worker that could not run the program or exited non-zero; `stopped` is one we stopped (cancel, fail-fast).
 */
export type WorkerStatus = 'running' | 'exited' | 'failed' | 'preempted' | 'stopped';
