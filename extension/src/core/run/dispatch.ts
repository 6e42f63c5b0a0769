import type { Backend } from '../backend';
import { followRecordedGke, kubeOfRecord, stopGkeRun } from './gke-run';
import type { ConnectionManager } from '../ssh/connection';
import { isActive, loadRun, type RunRecord } from './registry';
import { stopRecordedRun as stopVmRun, watchRecordedRun as watchVmRun, type WatchOptions } from './session';
import type { RunListener, RunResult } from './types';

/**
 * A recorded run, whatever its workers are: TPU VMs reached over SSH (session.ts), or the pods of a GKE workload
 * (gke-run.ts). `tpw logs`, `tpw stop`, the Runs view and a restarted VS Code call these and never ask.
 */

export function isGkeRun(rec: RunRecord): rec is RunRecord & { gke: NonNullable<RunRecord['gke']> } {
  return rec.gke !== undefined;
}

/** Reattaches to a recorded run (`tpw logs RUN [--follow]`, VS Code after a restart). */
export async function watchRecordedRun(backend: Backend, conns: ConnectionManager, runId: string, listener: RunListener, opts: WatchOptions = {}): Promise<RunResult> {
  const rec = loadRun(runId, opts.home);
  if (!isGkeRun(rec)) return watchVmRun(backend, conns, runId, listener, opts);
  const kube = await kubeOfRecord(backend.gke, rec);
  return followRecordedGke(kube, rec, listener, { detachSignal: opts.signal, follow: opts.follow ?? isActive(rec.status), home: opts.home, pollMs: opts.statePollMs });
}

/** `tpw stop RUN`: the run's processes stopped on every worker, or its JobSet deleted; recorded as cancelled. */
export async function stopRecordedRun(backend: Backend, conns: ConnectionManager, runId: string, opts: Parameters<typeof stopVmRun>[3] = {}): Promise<RunRecord> {
  const rec = loadRun(runId, opts.home);
  if (isGkeRun(rec)) return stopGkeRun(backend.gke, runId, opts.home);
  return stopVmRun(backend, conns, runId, opts);
}
