import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Backend } from '../backend';
import type { TpuApi } from '../tpu/api';
import { TpwError } from '../errors';
import { targetLabel, type ConnectionManager } from '../ssh/connection';
import { execCollectRaw } from '../ssh/exec';
import { bashCommand } from '../ssh/quote';
import { runDirWord } from '../ssh/run-dir';
import type { WorkerTarget } from '../ssh/types';
import { parseNodeName } from '../tpu/models';
import { attachRun, stopDetached, type AttachHandle, type AttachOptions } from './detached';
import { checkPreempted, watchNodeState } from './preemption';
import { isActive, loadRun, updateRun, type RunRecord, type RunStatus } from './registry';
import { firstFailure } from './summary';
import type { RunListener, RunResult } from './types';

/**
 * A recorded run seen again from another process: find its workers (keys come from the backend, never from
 * the record), watch or stop it, and write the outcome back to the registry.
 */

/** The workers of a recorded run, with the backend's SSH credentials; addresses as recorded. */
export async function workersOfRecord(backend: Backend, rec: RunRecord): Promise<WorkerTarget[]> {
  let current: WorkerTarget[] = [];
  try {
    current = await backend.workersOf(await backend.api.getNode(parseNodeName(rec.node)));
  } catch {
    // The VM may be gone or stopped; the recorded addresses still tell us where to look.
  }
  const template = current[0];
  if (!template) throw new TpwError('UNAVAILABLE', `Run ${rec.runId}: its VM ${rec.vm} is not reachable (deleted or not READY?).`);
  return rec.workers.map((w) => ({ ...template, index: w.index, host: w.host, port: w.port }));
}

/** Status from a final result: a detached watcher leaves the run `running`. */
export function statusOf(result: RunResult): RunStatus {
  if (result.preempted) return 'preempted';
  if (result.detached) return 'running';
  if (result.cancelled) return 'cancelled';
  return result.ok ? 'succeeded' : 'failed';
}

/** `w2: exit code 7` — the first worker that failed on its own (not one we stopped). */
export function failureReason(result: RunResult): string | undefined {
  const first = firstFailure(result);
  return first && `w${first.index}: ${first.why}`;
}

/** Records a finished (or detached) watch in the registry; a run someone else already finalized stays as it is. */
export function recordResult(runId: string, result: RunResult, home?: string): RunRecord {
  const status = statusOf(result);
  if (status === 'running') return loadRun(runId, home);
  const prev = loadRun(runId, home);
  // The first verdict stands: a stop, or preemption decided by the VM watcher, must not turn into "failed"
  // because the dying workers exited non-zero, nor a later `tpw logs --follow` rewrite it.
  if (!isActive(prev.status)) return prev;
  return updateRun(
    runId,
    {
      status,
      endedAt: new Date().toISOString(),
      exitCodes: [...result.workers].sort((a, b) => a.index - b.index).map((w) => w.exitCode),
      reason: result.preempted ? result.preemptedReason : failureReason(result),
      failedWorker: result.preempted ? undefined : firstFailure(result)?.index,
    },
    home,
  );
}

export interface WatchOptions extends Pick<AttachOptions, 'follow' | 'signal' | 'onNotice' | 'failFast' | 'runsRoot' | 'offsets'> {
  home?: string;
  statePollMs?: number;
}

/**
 * Follows a run to its end while polling the VM: preempted, terminated, stopped, deleted, or an emulator that
 * stopped ends the watch as preempted (the workers are gone, so their tails would only retry). `opts.signal` stops watching only (detach);
 * `onHandle` receives the handle so the caller can cancel (stop the run).
 */
export async function followRun(
  api: TpuApi,
  /** The run's VM, or every slice of a multislice run: any one of them going away ends the run. */
  nodeNames: string | readonly string[],
  runId: string,
  workers: readonly WorkerTarget[],
  conns: ConnectionManager,
  listener: RunListener,
  opts: AttachOptions & { statePollMs?: number; onHandle?: (h: AttachHandle) => void },
): Promise<RunResult> {
  const watchCtl = new AbortController();
  const onDetach = () => watchCtl.abort();
  opts.signal?.addEventListener('abort', onDetach, { once: true });
  if (opts.signal?.aborted) onDetach();
  const pollCtl = new AbortController();
  let endedBy: string | undefined;
  const names = typeof nodeNames === 'string' ? [nodeNames] : [...nodeNames];
  const poll = Promise.all(
    names.map((nodeName) =>
      watchNodeState(api, nodeName, { intervalMs: opts.statePollMs, signal: pollCtl.signal }).then((why) => {
        if (!why || endedBy) return;
        endedBy = why;
        watchCtl.abort();
        pollCtl.abort();
      }),
    ),
  );
  try {
    const handle = attachRun(runId, workers, conns, listener, { ...opts, signal: watchCtl.signal });
    opts.onHandle?.(handle);
    let result: RunResult = await handle.result;
    pollCtl.abort();
    await poll;
    if (endedBy) return { ...result, detached: false, ok: false, preempted: true, preemptedReason: endedBy };
    if (!result.detached) {
      const whys = await Promise.all(names.map((nodeName) => checkPreempted(api, nodeName, result)));
      const why = whys.find((w) => w !== undefined && !/exited \d+ \(the trainer/.test(w)) ?? whys.find((w) => w !== undefined);
      if (why) result = { ...result, preempted: true, preemptedReason: why };
    }
    return result;
  } finally {
    pollCtl.abort();
    opts.signal?.removeEventListener('abort', onDetach);
  }
}

/** Reattaches to a recorded run (`tpw logs RUN [--follow]`, VS Code after a restart). */
export async function watchRecordedRun(backend: Backend, conns: ConnectionManager, runId: string, listener: RunListener, opts: WatchOptions = {}): Promise<RunResult> {
  const rec = loadRun(runId, opts.home);
  const workers = await workersOfRecord(backend, rec);
  const follow = opts.follow ?? isActive(rec.status);
  const result = follow
    ? await followRun(backend.api, rec.slices && rec.slices.length > 0 ? rec.slices : rec.node, runId, workers, conns, listener, { ...opts, follow })
    : await attachRun(runId, workers, conns, listener, { ...opts, follow }).result;
  // Only a complete, followed result says how the run ended; a one-shot look leaves the record alone.
  if (opts.follow !== false) recordResult(runId, result, opts.home);
  return result;
}

/**
 * Records that someone asked a run to stop, before its workers are signalled (that takes seconds): the Runs
 * view, the run view and `tpw runs` say "stopping" at once. A run that has ended already is left as it is.
 */
export function markStopping(runId: string, home?: string): void {
  try {
    const rec = loadRun(runId, home);
    if (isActive(rec.status) && rec.status !== 'stopping') updateRun(runId, { status: 'stopping' }, home);
  } catch {
    // no record (a run that never started): nothing to say
  }
}

/** `tpw stop RUN`: stops every worker's process group and records the run as cancelled. */
export async function stopRecordedRun(backend: Backend, conns: ConnectionManager, runId: string, opts: { graceMs?: number; home?: string; runsRoot?: AttachOptions['runsRoot'] } = {}): Promise<RunRecord> {
  const rec = loadRun(runId, opts.home);
  markStopping(runId, opts.home);
  const workers = await workersOfRecord(backend, rec);
  const errors = await stopDetached(runId, workers, conns, { graceMs: opts.graceMs, runsRoot: opts.runsRoot });
  if (errors.length > 0) {
    // Not stopped after all: the record says what it said before.
    if (isActive(rec.status) && loadRun(runId, opts.home).status === 'stopping') updateRun(runId, { status: rec.status }, opts.home);
    throw new TpwError('UNAVAILABLE', `Run ${runId}: could not stop every worker: ${errors.join('; ')}`);
  }
  if (!isActive(rec.status)) return rec;
  return updateRun(runId, { status: 'cancelled', endedAt: new Date().toISOString(), reason: 'stopped by the user' }, opts.home);
}

/** Copies every worker's whole log to `<destDir>/w<N>.log` (bytes as written); returns the files. */
export async function downloadRunLogs(workers: readonly WorkerTarget[], conns: ConnectionManager, runId: string, destDir: string, runsRoot?: AttachOptions['runsRoot']): Promise<string[]> {
  fs.mkdirSync(destDir, { recursive: true });
  return Promise.all(
    workers.map(async (w) => {
      const root = typeof runsRoot === 'function' ? runsRoot(w) : runsRoot;
      const out = await execCollectRaw(await conns.get(w), bashCommand(`cat -- ${runDirWord(runId, root)}/log`));
      if (out.code !== 0) throw new TpwError('UNAVAILABLE', `${targetLabel(w)}: cannot read the log of run ${runId}: ${out.stderr.trim()}`);
      const file = path.join(destDir, `w${w.index}.log`);
      fs.writeFileSync(file, out.stdout);
      return file;
    }),
  );
}
