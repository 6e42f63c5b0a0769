import { describeError } from '../errors';
import type { ConnectionManager } from '../ssh/connection';
import type { WorkerTarget } from '../ssh/types';
import type { TpuApi } from '../tpu/api';
import { startDetached, type AttachHandle } from './detached';
import { saveRun, updateRun, type RunRecord } from './registry';
import { followRun, recordResult } from './session';
import type { RunListener, RunResult, RunSpec } from './types';

/**
 * The two halves every recorded run shares, whatever started it (a recipe, a task YAML's setup or run): start it
 * with its record kept in step, then follow it to its end and record how it ended.
 */

/** Saves the record, starts the program on every worker, and marks the record running, or failed with why. */
export async function startRecorded(record: RunRecord, spec: RunSpec, conns: ConnectionManager, home?: string): Promise<void> {
  saveRun(record, home);
  try {
    await startDetached(spec, conns);
  } catch (e) {
    updateRun(record.runId, { status: 'failed', endedAt: new Date().toISOString(), reason: describeError(e) }, home);
    throw e;
  }
  updateRun(record.runId, { status: 'running' }, home);
}

export interface FollowRecordedOptions {
  failFast: boolean;
  /** Aborting stops the run on every worker. */
  signal?: AbortSignal;
  /** Aborting stops watching only: the run goes on detached. */
  detachSignal?: AbortSignal;
  statePollMs?: number;
  onNotice?(worker: number, message: string): void;
  home?: string;
}

/** Follows a started run to its end (or until detached), watching every VM it runs on, and records the outcome. */
export async function followRecorded(
  api: TpuApi,
  nodeNames: string | readonly string[],
  runId: string,
  workers: readonly WorkerTarget[],
  conns: ConnectionManager,
  listener: RunListener,
  opts: FollowRecordedOptions,
): Promise<RunResult> {
  // A cancel that arrives before the handle exists is applied as soon as it does.
  let handle: AttachHandle | undefined;
  let cancelRequested = false;
  const onAbort = () => {
    cancelRequested = true;
    void handle?.cancel();
  };
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const result = await followRun(api, nodeNames, runId, workers, conns, listener, {
      failFast: opts.failFast,
      signal: opts.detachSignal,
      statePollMs: opts.statePollMs,
      onNotice: opts.onNotice,
      onHandle: (h) => {
        handle = h;
        if (cancelRequested || opts.signal?.aborted) void h.cancel();
      },
    });
    recordResult(runId, result, opts.home);
    return result;
  } finally {
    opts.signal?.removeEventListener('abort', onAbort);
  }
}
