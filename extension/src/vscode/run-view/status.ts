/**
 * The run view's header and worker chips in the one status vocabulary (protocol/run-status.ts), so the header
 * says what the Runs view and `tpw runs` say about the same run. No vscode here: unit-tested in Node.
 */
import type { RunStatus, WorkerStatus } from '../../../../protocol/run-status';
import { isActive, statusOf, type RunRecord, type RunResult, type WorkerResult } from '../../core/run/engine';

/** A worker's chip once it ended. */
export function workerStatus(w: WorkerResult): WorkerStatus {
  return w.stopped ? 'stopped' : w.error !== undefined || w.exitCode !== 0 ? 'failed' : 'exited';
}

/**
 * The header once a watch of the run ended: the status the registry records for that result (a preempted run
 * is `preempted`, not `failed`), or the recorded one when `rec` says the run had already ended (the registry
 * knows how a run that ended before this watch ended: who failed first, preemption).
 */
export function headerStatus(result: RunResult, rec?: RunRecord): RunStatus {
  return rec && !isActive(rec.status) ? rec.status : statusOf(result);
}
