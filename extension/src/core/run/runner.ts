import { TpwError, describeError } from '../errors';
import type { ConnectionManager, SshConnection } from '../ssh/connection';
import { targetLabel } from '../ssh/connection';
import { execCollect, execStream, type ExecExit, type StreamingExec } from '../ssh/exec';
import type { WorkerTarget } from '../ssh/types';
import { START_EXIT, bashCommand, buildStartScript, buildStopScript, envFileContent, validateRunId } from './remote-script';
import type { OutputStream, RunListener, RunResult, RunSpec, WorkerResult } from './types';

/**
 * A run across all workers at once: connect (shared connections), start the program on every worker,
 * stream each worker's lines, collect exit codes, and stop everything on the first failure (fail-fast) or on
 * cancel. The remote side (folders, process group, stop signals) is remote-script.ts.
 */

export interface RunHandle {
  /** Settles when every worker has ended (or was stopped, or never started). Never rejects for worker failures. */
  result: Promise<RunResult>;
  /** Stops every worker (SIGINT → SIGTERM → SIGKILL on its process group); resolves once the result is final. */
  cancel(): Promise<void>;
}

export interface StartRunOptions {
  /** Where run folders live on the workers (default ~/.tpw/runs); a function gives each worker its own (tests). */
  runsRoot?: string | ((worker: WorkerTarget) => string);
  /** Diagnostics (never receives the environment). */
  log?: (msg: string) => void;
  /** After a stop succeeded, how long to wait for the worker's channel to close before closing it ourselves. */
  channelDrainMs?: number;
}

type Phase = 'connecting' | 'starting' | 'running' | 'done';

interface WorkerState {
  w: WorkerTarget;
  phase: Phase;
  stopRequested: boolean;
  exec?: StreamingExec;
  stopping?: Promise<void>;
  result?: WorkerResult;
  /** The last `tpw: ...` line the start script printed: the reason for a START_EXIT status. */
  lastTpwLine?: string;
  /** The channel closed without an exit status: the program may still run there, so stops must still reach it. */
  lost?: boolean;
  /** Resolves when the worker is stopped while still connecting, so a slow connect does not hold up the run. */
  abandon: Promise<void>;
  abandonNow(): void;
}

const START_CODES = new Set<number>(Object.values(START_EXIT));

export function startRun(spec: RunSpec, listener: RunListener, conns: ConnectionManager, opts: StartRunOptions = {}): RunHandle {
  // Refuse bad input before anything starts on any worker.
  validateRunId(spec.runId);
  if (spec.workers.length === 0) throw new TpwError('INVALID_ARGUMENT', `Run ${spec.runId} has no workers to run on.`);
  const envText = envFileContent(spec.env);
  const failFast = spec.failFast ?? true;
  const graceMs = spec.stopGraceMs ?? 5000;
  const drainMs = opts.channelDrainMs ?? 5000;
  const log = opts.log ?? (() => undefined);
  const rootFor = (w: WorkerTarget) => (typeof opts.runsRoot === 'function' ? opts.runsRoot(w) : opts.runsRoot);
  const startScripts = spec.workers.map((w) => buildStartScript({ runId: spec.runId, workerIndex: w.index, argv: spec.argv, cwd: spec.cwd, runsRoot: rootFor(w) }));

  const t0 = Date.now();
  let cancelled = false;
  let stoppingAll = false;
  const states: WorkerState[] = spec.workers.map((w) => {
    const { promise, resolve } = deferred();
    return { w, phase: 'connecting', stopRequested: false, abandon: promise, abandonNow: resolve };
  });

  const emitLine = (index: number, stream: OutputStream, line: string) => {
    try {
      listener.onLine?.(index, stream, line);
    } catch (e) {
      log(`run ${spec.runId}: onLine listener threw: ${describeError(e)}`);
    }
  };

  const finish = (s: WorkerState, r: Omit<WorkerResult, 'index' | 'host'>) => {
    if (s.result) return;
    s.phase = 'done';
    s.result = { index: s.w.index, host: s.w.host, ...r };
    if (r.error) emitLine(s.w.index, 'stderr', `tpw: ${r.error}`);
    try {
      listener.onWorkerExit?.(s.result);
    } catch (e) {
      log(`run ${spec.runId}: onWorkerExit listener threw: ${describeError(e)}`);
    }
    const failed = r.error !== undefined || r.exitCode !== 0;
    if (failed && !r.stopped && failFast && !cancelled) {
      log(`run ${spec.runId}: ${targetLabel(s.w)} failed; stopping the other workers (fail-fast)`);
      void stopAll();
    }
  };

  /** Stops one worker's remote process group, over the shared connection (reconnecting if it dropped). */
  const stopRemote = (s: WorkerState): Promise<void> => {
    if (s.stopping) return s.stopping;
    const script = buildStopScript({ runId: spec.runId, runsRoot: rootFor(s.w), graceMs });
    s.stopping = (async () => {
      try {
        const conn = await conns.get(s.w);
        const out = await execCollect(conn, bashCommand(script));
        if (out.code !== 0) log(`run ${spec.runId}: stopping ${targetLabel(s.w)} exited ${out.code ?? out.signal}: ${out.stderr.trim()}`);
      } catch (e) {
        log(`run ${spec.runId}: cannot stop ${targetLabel(s.w)}: ${describeError(e)}`);
      }
      // The group is gone, so the channel should close on its own; if something outside the group still
      // holds the output open, do not let it hold the run hostage.
      const exec = s.exec;
      if (exec && !s.result) {
        const timer = setTimeout(() => exec.close(), drainMs);
        await exec.exit.finally(() => clearTimeout(timer));
      }
    })();
    return s.stopping;
  };

  const stopAll = async (): Promise<void> => {
    stoppingAll = true;
    const waits: Promise<void>[] = [];
    for (const s of states) {
      if (s.result) {
        if (s.lost) waits.push(stopRemote(s)); // best effort over a fresh connection
        continue;
      }
      s.stopRequested = true;
      if (s.phase === 'connecting') {
        // Nothing runs there yet; runWorker sees stopRequested and will not start it.
        finish(s, { exitCode: null, stopped: true });
        s.abandonNow();
      } else if (s.phase === 'running' || s.exec) {
        waits.push(stopRemote(s));
      }
      // 'starting': runWorker sends the stop as soon as the server has accepted the start command.
    }
    await Promise.all(waits);
  };

  const runWorker = async (s: WorkerState, script: string): Promise<void> => {
    let conn: SshConnection | undefined;
    try {
      conn = await Promise.race([conns.get(s.w), s.abandon.then(() => undefined)]);
    } catch (e) {
      if (s.result) return; // stopped while connecting
      finish(s, { exitCode: null, stopped: false, error: describeError(e) });
      return;
    }
    if (!conn || s.stopRequested || s.result) return;
    s.phase = 'starting';
    try {
      s.exec = await execStream(
        conn,
        bashCommand(script),
        (stream, line) => {
          if (stream === 'stderr' && line.startsWith('tpw: ')) s.lastTpwLine = line.slice(5);
          emitLine(s.w.index, stream, line);
        },
        { stdin: envText },
      );
    } catch (e) {
      finish(s, { exitCode: null, stopped: s.stopRequested, error: `${targetLabel(s.w)}: cannot start the program: ${describeError(e)}` });
      return;
    }
    s.phase = 'running';
    if (s.stopRequested || stoppingAll) {
      s.stopRequested = true;
      void stopRemote(s);
    }
    const exit: ExecExit = await s.exec.exit;
    const stopped = s.stopRequested;
    let error: string | undefined;
    if (exit.lost && !stopped) {
      s.lost = true;
      error = `${targetLabel(s.w)}: the SSH connection was lost before the program ended (it may still be running there)`;
    } else if (exit.code !== null && START_CODES.has(exit.code) && s.lastTpwLine) {
      error = `${targetLabel(s.w)}: ${s.lastTpwLine}`;
    }
    // If this failure triggers fail-fast, stopAll also reaches this worker when it was lost.
    finish(s, { exitCode: exit.code, signal: exit.signal, stopped, error });
  };

  const result = Promise.all(states.map((s, i) => runWorker(s, startScripts[i]))).then(async (): Promise<RunResult> => {
    // Any stop still in flight (e.g. the fresh-connection stop of a lost worker) must end before we report.
    await Promise.all(states.map((s) => s.stopping ?? Promise.resolve()));
    const workers = states.map((s) => s.result ?? { index: s.w.index, host: s.w.host, exitCode: null, stopped: s.stopRequested, error: 'no result' });
    const ok = !cancelled && workers.every((w) => w.exitCode === 0 && !w.error);
    return { runId: spec.runId, workers, durationMs: Date.now() - t0, cancelled, ok };
  });

  return {
    result,
    cancel: async () => {
      const alreadyDone = states.every((s) => s.result);
      if (!alreadyDone) cancelled = true;
      await stopAll();
      await result;
    },
  };
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** `[w3] line`: how every worker's output is shown in the CLI and the output channel. */
export function prefixLine(worker: number, line: string): string {
  return `[w${worker}] ${line}`;
}

function workerStatus(w: WorkerResult): string {
  if (w.error && !w.stopped) return 'error';
  if (w.stopped) return 'stopped';
  if (w.exitCode === 0) return '0';
  if (w.exitCode !== null) return `${w.exitCode} (failed)`;
  if (w.signal) return `${w.signal} (failed)`;
  return 'unknown';
}

/** One line: `run <id>: 4/4 workers ok in 12.3s — w0=0 w1=0 w2=1 (failed) w3=stopped`. */
export function formatRunSummary(result: RunResult): string {
  const n = result.workers.length;
  const okCount = result.workers.filter((w) => w.exitCode === 0 && !w.error && !w.stopped).length;
  const secs = (result.durationMs / 1000).toFixed(1);
  const head = result.preempted
    ? `run ${result.runId}: preempted after ${secs}s (${result.preemptedReason ?? 'VM preempted'})`
    : result.cancelled ? `run ${result.runId}: cancelled after ${secs}s` : `run ${result.runId}: ${okCount}/${n} workers ok in ${secs}s`;
  const parts = [...result.workers].sort((a, b) => a.index - b.index).map((w) => `w${w.index}=${workerStatus(w)}`);
  return `${head} — ${parts.join(' ')}`;
}
