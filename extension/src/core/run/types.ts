import type { MetricRecord } from '../../../../protocol/metrics-record';
import type { OutputStream, WorkerTarget } from '../ssh/types';

export type { OutputStream } from '../ssh/types';

/**
 * An environment value: a literal string (quoted on the worker, arrives byte for byte), or shell text the
 * user wrote in a recipe that must expand on the worker (`{ shell: '"$HOME/data"' }`), in file order.
 */
export type EnvValue = string | { shell: string };

/** A command to run on every worker of a VM at once. */
export interface RunSpec {
  runId: string;
  workers: WorkerTarget[];
  /** argv of the program to start (e.g. ["python3", "-m", "tpu_trainer.train", "max_steps=10"]); each element arrives literally. */
  argv: string[];
  /** Remote working directory, relative to the login's home unless absolute. */
  cwd: string;
  /** Environment for the program, delivered through a 0600 file on the worker, never in argv. */
  env: Record<string, EnvValue>;
  /** When one worker fails, stop the others (default true). */
  failFast?: boolean;
  /** Grace period between SIGINT/SIGTERM and SIGKILL when stopping (default 5000 ms). */
  stopGraceMs?: number;
}

export interface WorkerResult {
  index: number;
  host: string;
  /** Exit code of the remote program; null if it died on a signal or never started. */
  exitCode: number | null;
  signal?: string;
  /** Set when the worker could not run the program at all (SSH refused, auth failed, ...). */
  error?: string;
  /** True if we stopped it (cancel or fail-fast), rather than it ending on its own. */
  stopped: boolean;
}

export interface RunResult {
  runId: string;
  workers: WorkerResult[];
  durationMs: number;
  cancelled: boolean;
  ok: boolean;
  /** We stopped watching while the run goes on (detached start, or the watcher was closed). */
  detached?: boolean;
  /** The VM was preempted (or the trainer exited with its preempted status): not a failure of the program. */
  preempted?: boolean;
  /** Why it was judged preempted, for the summary. */
  preemptedReason?: string;
  /** The worker seen failing first on its own (before fail-fast stopped the others), when one did. */
  firstFailed?: number;
}

export interface RunListener {
  /** A complete line of output from one worker (no trailing newline). */
  onLine?(worker: number, stream: OutputStream, line: string): void;
  onWorkerExit?(result: WorkerResult): void;
  /**
   * Metrics records that arrived with the output (a GKE pod's log carries the trainer's records: core/gke), rather
   * than being read from the worker's metrics.jsonl.
   */
  onMetrics?(worker: number, records: MetricRecord[]): void;
  /** Notes for a person about the run as a whole (a restart of the JobSet, a preempted node pool): never output. */
  onNotice?(message: string): void;
}
