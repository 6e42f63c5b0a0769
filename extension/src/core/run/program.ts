import { TpwError } from '../errors';
import type { WorkerTarget } from '../ssh/types';
import { shortName, type TpuNode } from '../tpu/models';
import type { Backend } from '../backend';
import type { ConnectionManager } from '../ssh/connection';
import { newRunId } from './pipeline';
import type { RunConnections, RunPhase } from './pipeline-types';
import type { RunRecord } from './registry';
import { followRecorded, startRecorded } from './recorded-run';
import type { EnvValue, RunListener, RunResult } from './types';

/**
 * A program that is not a recipe (a task YAML's `setup` or `run`), run like one: started detached on the given
 * workers, recorded in the registry (so `tpw runs`, `tpw logs` and `tpw stop` see it), followed to its end.
 * The caller has resolved the workers and synced what the program needs.
 */
export interface ProgramRunRequest {
  backend: Backend;
  /** The VM, or slice 0 of a multislice group. */
  node: TpuNode;
  /** A multislice group's slices in slice order (node is the first); the VM watch covers every one. */
  slices?: TpuNode[];
  /** Global indexes, slice-major (run/pipeline.ts sliceWorkers). */
  workers: WorkerTarget[];
  /** The run's id (default: a new one), for a caller that hands it to the program beforehand. */
  runId?: string;
  /** What the registry shows as the run's source (the task YAML's path). */
  label: string;
  workspaceRoot: string;
  argv: string[];
  /** Remote working folder, relative to the login's home unless absolute. */
  cwd: string;
  /** Delivered in the worker's 0600 env file only (secrets included). */
  env: Record<string, EnvValue>;
  failFast?: boolean;
  /** Aborting stops the program on every worker. */
  signal?: AbortSignal;
  statePollMs?: number;
  conns: ConnectionManager;
  tpwHome?: string;
  onStarted?(runId: string, source: RunConnections): void;
  listener: RunListener & { onPhase?(phase: RunPhase, detail: string): void };
}

export async function runProgram(req: ProgramRunRequest): Promise<RunResult> {
  const phase = req.listener.onPhase?.bind(req.listener) ?? (() => undefined);
  if (req.signal?.aborted) throw new TpwError('CANCELLED', 'The run was cancelled before it started.');
  const runId = req.runId ?? newRunId();
  const spec = { runId, workers: req.workers, argv: req.argv, cwd: req.cwd, env: req.env, failFast: req.failFast ?? true };
  const slices = req.slices && req.slices.length > 1 ? req.slices : [req.node];
  const record: RunRecord = {
    runId,
    node: req.node.name,
    vm: slices.length > 1 ? `${shortName(req.node.name)} (+${slices.length - 1} slices)` : shortName(req.node.name),
    recipe: req.label,
    workspaceRoot: req.workspaceRoot,
    extraOverrides: [],
    workers: req.workers.map((w) => ({ index: w.index, host: w.host, port: w.port })),
    ...(slices.length > 1 ? { slices: slices.map((s) => s.name), workersPerSlice: req.workers.length / slices.length } : {}),
    startedAt: new Date().toISOString(),
    status: 'starting',
  };
  await startRecorded(record, spec, req.conns, req.tpwHome);
  req.onStarted?.(runId, { workers: req.workers, conns: req.conns });
  return followRecorded(req.backend.api, slices.map((s) => s.name), runId, req.workers, req.conns, req.listener, {
    failFast: spec.failFast,
    signal: req.signal,
    statePollMs: req.statePollMs,
    onNotice: (w, m) => phase('run', `w${w}: ${m}`),
    home: req.tpwHome,
  });
}
