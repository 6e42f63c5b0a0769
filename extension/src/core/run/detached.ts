import { TpwError, describeError, isTpwError } from '../errors';
import type { ConnectionManager } from '../ssh/connection';
import { channelEnd, targetLabel } from '../ssh/connection';
import { LineSplitter, execCollect } from '../ssh/exec';
import type { WorkerTarget } from '../ssh/types';
import { bashCommand } from '../ssh/quote';
import { validateRunId } from '../ssh/run-dir';
import { PREEMPTED_EXIT } from './preemption';
import { EXIT_MARKER, buildStartScript, buildStopScript, buildTailScript, envFileContent } from './remote-script';
import type { RunListener, RunResult, RunSpec, WorkerResult } from './types';

/**
 * The run engine's worker side: start on every worker and return (startDetached), then watch from byte
 * offsets with reconnects (attachRun), stop from anywhere (stopDetached). Nothing here holds the run alive:
 * any of these can be called again from another process (`tpw logs`, a restarted VS Code) with the same run
 * id. Callers outside core/run reach these through engine.ts.
 */

export type RunsRoot = string | ((worker: WorkerTarget) => string) | undefined;

function rootOf(root: RunsRoot, w: WorkerTarget): string | undefined {
  return typeof root === 'function' ? root(w) : root;
}

export interface StartOutcome {
  index: number;
  /** Empty when started; otherwise why not (names the worker). */
  error?: string;
  exitCode?: number | null;
}

/**
 * Starts the program on every worker in parallel; resolves once each one has either started or failed to.
 * If any worker failed to start, the ones that did start are stopped (a half-started pod is no run) and
 * TpwError UNAVAILABLE names the first failure.
 */
export async function startDetached(spec: RunSpec, conns: ConnectionManager, opts: { runsRoot?: RunsRoot; graceMs?: number } = {}): Promise<void> {
  validateRunId(spec.runId);
  if (spec.workers.length === 0) throw new TpwError('INVALID_ARGUMENT', `Run ${spec.runId} has no workers to run on.`);
  const envText = envFileContent(spec.env);
  const outcomes = await Promise.all(
    spec.workers.map(async (w): Promise<StartOutcome> => {
      const script = buildStartScript({ runId: spec.runId, workerIndex: w.index, argv: spec.argv, cwd: spec.cwd, runsRoot: rootOf(opts.runsRoot, w) });
      try {
        const out = await execCollect(await conns.get(w), bashCommand(script), { stdin: envText });
        if (out.code === 0) return { index: w.index };
        const tpwLine = out.stderr.split('\n').filter((l) => l.startsWith('tpw: ')).pop();
        const why = tpwLine ? tpwLine.slice(5) : out.lost ? 'the connection dropped while starting' : `the start script exited ${out.code ?? out.signal}: ${out.stderr.trim()}`;
        return { index: w.index, error: `${targetLabel(w)}: ${why}`, exitCode: out.code };
      } catch (e) {
        return { index: w.index, error: describeError(e) };
      }
    }),
  );
  const failed = outcomes.filter((o) => o.error);
  if (failed.length === 0) return;
  const started = spec.workers.filter((w) => !outcomes.find((o) => o.index === w.index)?.error);
  await stopDetached(spec.runId, started, conns, { runsRoot: opts.runsRoot, graceMs: opts.graceMs ?? spec.stopGraceMs ?? 5000 });
  throw new TpwError('UNAVAILABLE', `Run ${spec.runId} did not start on every worker: ${failed.map((f) => f.error).join('; ')}`);
}

/** SIGINT → SIGTERM → SIGKILL on the run's process group on every given worker. Never throws; returns errors by worker. */
export async function stopDetached(runId: string, workers: readonly WorkerTarget[], conns: ConnectionManager, opts: { runsRoot?: RunsRoot; graceMs?: number } = {}): Promise<string[]> {
  const errors: string[] = [];
  await Promise.all(
    workers.map(async (w) => {
      try {
        const script = buildStopScript({ runId, runsRoot: rootOf(opts.runsRoot, w), graceMs: opts.graceMs ?? 5000, pidWaitMs: 1000 });
        const out = await execCollect(await conns.get(w), bashCommand(script));
        // 3: no pid file — the run never started there, which is what "stopped" means too.
        if (out.code !== 0 && out.code !== 3) errors.push(`${targetLabel(w)}: stop exited ${out.code ?? out.signal}: ${out.stderr.trim()}`);
      } catch (e) {
        errors.push(describeError(e));
      }
    }),
  );
  return errors;
}

export interface AttachOptions {
  runsRoot?: RunsRoot;
  /** Bytes of each worker's log already shown (by worker index); the tail resumes there. Updated in place as bytes arrive. */
  offsets?: Map<number, number>;
  /** Keep following until the run ends (default true); false prints what is there and reports `running` workers. */
  follow?: boolean;
  failFast?: boolean;
  graceMs?: number;
  /** Stops watching (the run goes on); result resolves with `detached: true`. */
  signal?: AbortSignal;
  /** How long to keep retrying a lost connection before giving up on a worker (default 10 min). */
  reconnectForMs?: number;
  /** Reconnects and other notes for a human (never program output). */
  onNotice?: (worker: number, message: string) => void;
}

export interface AttachHandle {
  result: Promise<RunResult & { detached: boolean }>;
  /** Stops the run on every worker, then resolves when the result is final. */
  cancel(): Promise<void>;
}

/** Watches a detached run on every worker: lines as they are written, then exit codes; fail-fast stops the others. */
export function attachRun(runId: string, workers: readonly WorkerTarget[], conns: ConnectionManager, listener: RunListener, opts: AttachOptions = {}): AttachHandle {
  validateRunId(runId);
  const offsets = opts.offsets ?? new Map<number, number>();
  const follow = opts.follow ?? true;
  const failFast = opts.failFast ?? true;
  const graceMs = opts.graceMs ?? 5000;
  const reconnectForMs = opts.reconnectForMs ?? 10 * 60_000;
  const notice = opts.onNotice ?? (() => undefined);
  const t0 = Date.now();
  // A permanent error on one worker (a changed host key, a refused key) ends the whole watch: retrying cannot
  // fix it, and the run itself may still be going, so nothing is recorded as its result.
  const inner = new AbortController();
  const signal = inner.signal;
  const onOuterAbort = () => inner.abort();
  if (opts.signal?.aborted) inner.abort();
  else opts.signal?.addEventListener('abort', onOuterAbort, { once: true });
  let permanent: unknown;
  const stopped = new Set<number>();
  let cancelled = false;
  let stopping: Promise<unknown> | undefined;
  const results = new Map<number, WorkerResult>();
  let firstFailed: number | undefined;

  const stopAll = (): Promise<unknown> => {
    if (!stopping) {
      for (const w of workers) if (!results.has(w.index)) stopped.add(w.index);
      stopping = stopDetached(runId, workers.filter((w) => !results.has(w.index)), conns, { runsRoot: opts.runsRoot, graceMs });
    }
    return stopping;
  };

  const finish = (w: WorkerTarget, r: Omit<WorkerResult, 'index' | 'host' | 'stopped'>) => {
    // Signalled, but it had failed on its own first (every worker failing on a typo): failed, not stopped.
    const result: WorkerResult = { index: w.index, host: w.host, stopped: stopped.has(w.index) && endedByStop(r), ...r };
    results.set(w.index, result);
    if (r.error) listener.onLine?.(w.index, 'stderr', `tpw: ${r.error}`);
    // The log's last word on a stop is ours, one line, whatever the program printed as it went.
    else if (result.stopped && cancelled) listener.onLine?.(w.index, 'stderr', `tpw: stopped by the user${r.exitCode !== null ? ` (exit ${r.exitCode})` : r.signal ? ` (${r.signal})` : ''}`);
    try {
      listener.onWorkerExit?.(result);
    } catch {
      // a listener's bug must not end the watch
    }
    // The trainer's "preempted" status is not a failure to stop the others for: they are going down too.
    const failed = r.error !== undefined || (r.exitCode !== 0 && r.exitCode !== undefined && r.exitCode !== PREEMPTED_EXIT);
    // Workers end in the order their tails see the exit: the first failure is the cause, the rest its echo.
    if (failed && !result.stopped && firstFailed === undefined) firstFailed = w.index;
    if (failed && follow && failFast && !result.stopped && !cancelled && !signal.aborted) void stopAll();
  };

  const watch = async (w: WorkerTarget): Promise<void> => {
    const splitter = new LineSplitter();
    let lostSince: number | undefined;
    let delay = 250;
    for (;;) {
      if (signal.aborted) return;
      const offset = offsets.get(w.index) ?? 0;
      let out;
      try {
        const conn = await conns.get(w);
        const script = buildTailScript({ runId, runsRoot: rootOf(opts.runsRoot, w), offset, follow });
        let stderr = '';
        const channel = await conn.exec(bashCommand(script));
        // Reached the worker again: the give-up clock and the backoff start over.
        lostSince = undefined;
        delay = 250;
        // Closing asks the worker to close too; the watch does not wait for its answer (a server busy with the
        // tail may never give one).
        let abandoned: (v: { code: null; lost: true }) => void = () => undefined;
        const abandon = new Promise<{ code: null; lost: true }>((resolve) => (abandoned = resolve));
        const onAbort = () => {
          channel.close();
          abandoned({ code: null, lost: true });
        };
        if (signal.aborted) onAbort(); // ended while the channel was opening
        else signal.addEventListener('abort', onAbort, { once: true });
        channel.on('data', (b: Buffer) => {
          // Count bytes before splitting: the offset is what the worker's file has, whatever the encoding.
          offsets.set(w.index, (offsets.get(w.index) ?? 0) + b.length);
          for (const line of splitter.push(b)) listener.onLine?.(w.index, 'stdout', line);
        });
        channel.stderr.on('data', (b: Buffer) => (stderr += b.toString('utf8')));
        channel.end();
        // The exit status comes from the listener SshConnection.exec attached before yielding the channel: a
        // tail of a finished run exits at once, and its 'exit' can fire before this code could listen (each
        // such miss looked like a lost connection and cost a reconnect).
        let end;
        try {
          end = await Promise.race([channelEnd(channel), abandon]);
        } finally {
          signal.removeEventListener('abort', onAbort);
        }
        out = { code: end.code, lost: end.lost, stderr };
      } catch (e) {
        if (isPermanentSshError(e)) {
          permanent ??= e;
          inner.abort();
          return;
        }
        out = { code: null, lost: true, stderr: describeError(e) };
      }
      if (signal.aborted) return;
      const marker = out.stderr.split('\n').find((l) => l.startsWith(EXIT_MARKER));
      if (marker !== undefined && out.code === 0) {
        for (const line of splitter.flush()) listener.onLine?.(w.index, 'stdout', line);
        const v = marker.slice(EXIT_MARKER.length).trim();
        if (v === 'running') return; // not following: the run goes on
        if (/^\d+$/.test(v)) finish(w, { exitCode: Number(v) });
        else finish(w, stopped.has(w.index) ? { exitCode: null, signal: 'KILL' } : { exitCode: null, error: `${targetLabel(w)}: the program ended without an exit code (killed?)` });
        return;
      }
      if (!out.lost && out.code === 3) {
        finish(w, { exitCode: null, error: `${targetLabel(w)}: ${out.stderr.trim().replace(/^tpw: /, '')}` });
        return;
      }
      // Lost (or a tail that died): reconnect and resume from the byte offset we have.
      lostSince ??= Date.now();
      if (Date.now() - lostSince > reconnectForMs) {
        finish(w, { exitCode: null, error: `${targetLabel(w)}: lost the connection and could not reconnect for ${Math.round(reconnectForMs / 1000)}s (the run may still be going there)` });
        return;
      }
      notice(w.index, `connection lost (${out.stderr.trim().split('\n').pop() || 'no reason given'}); resuming at byte ${offsets.get(w.index) ?? 0}`);
      await sleep(delay, signal);
      delay = Math.min(delay * 2, 5000);
    }
  };

  const result = Promise.all(workers.map((w) => watch(w))).then(async () => {
    opts.signal?.removeEventListener('abort', onOuterAbort);
    await stopping;
    if (permanent !== undefined) throw permanent;
    const list = workers.map((w) => results.get(w.index) ?? { index: w.index, host: w.host, exitCode: null, stopped: stopped.has(w.index) });
    const detached = list.some((w) => !results.has(w.index));
    const ok = !detached && !cancelled && list.every((w) => w.exitCode === 0 && !w.error);
    return { runId, workers: list, durationMs: Date.now() - t0, cancelled, ok, detached, firstFailed };
  });

  return {
    result,
    cancel: async () => {
      cancelled = true;
      await stopAll();
      await result;
    },
  };
}

/**
 * Whether a worker's end is what stopping it does: a signal (SIGINT, then SIGTERM, then SIGKILL, shells' 128+N)
 * or a program that handled SIGINT and exited 0 or 130. Any other code is the program's own failure, which the
 * stop only raced (its tail had not reported it yet).
 */
export function endedByStop(r: Pick<WorkerResult, 'exitCode' | 'signal' | 'error'>): boolean {
  if (r.error !== undefined) return false;
  if (r.exitCode === null || r.signal !== undefined) return true;
  return r.exitCode === 0 || r.exitCode >= 128;
}

/** Waits `ms` or until `signal` aborts; the abort listener goes with the wait (one per retry would pile up). */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(t);
      resolve();
    };
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Errors no retry can fix: the host key changed, is unknown under a strict policy or revoked, or the worker
 * refused our key. Network errors (refused, reset, timeouts) are transient: the VM may be rebooting.
 */
export function isPermanentSshError(e: unknown): boolean {
  if (isTpwError(e, 'SSH_HOST_KEY')) return true;
  if (!isTpwError(e, 'SSH_CONNECT')) return false;
  const cause = (e as Error & { cause?: { level?: string } }).cause;
  return cause?.level === 'client-authentication';
}
