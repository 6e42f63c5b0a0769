/**
 * The run engine's front door: the one module the CLI, VS Code, tests and benchmarks call to start a run,
 * follow it or reattach to it, stop it and fetch its logs, and to read the run history and the end-of-run
 * report. Every function that talks to workers takes the caller's connection owner (ssh/connection.ts's
 * ConnectionManager: one per process), so a run, its viewers and a terminal on the same worker share one SSH
 * connection.
 *
 * Behind it, one engine — runs are *detached*: each worker's program runs in a process group of its own with
 * its output in a log file, and everything else reads that file from byte offsets:
 *   pipeline.ts        "Run on TPU": recipe → workspace sync → start → follow, recorded in the registry
 *   program.ts         any other program (a task YAML's setup and run) on resolved, synced workers: start → follow, recorded
 *   detached.ts        start, tail (with reconnects and fail-fast) and stop on every worker
 *   session.ts         a recorded run seen again from another process (`tpw logs`, a restarted VS Code)
 *   remote-script.ts   the shell programs sent to the workers
 *   registry.ts        the local run history; summary.ts the report; preemption.ts spot VMs
 *   dispatch.ts        a recorded run on VMs or on GKE, seen again the same way
 *   gke-run.ts         "Run on TPU" on GKE (gke-plan.ts the JobSet, gke-follow.ts its pods' logs as the workers' output)
 */
export { newRunId, remoteWorkspaceDir, runRecipe, sliceWorkers, type SliceWorkers } from './pipeline';
export { runProgram, type ProgramRunRequest } from './program';
export type { RecipeRunRequest, RunConnections, RunPhase } from './pipeline-types';
export { attachRun, startDetached, stopDetached, type AttachHandle, type AttachOptions, type RunsRoot } from './detached';
export { downloadRunLogs, followRun, markStopping, recordResult, statusOf, workersOfRecord, type WatchOptions } from './session';
export { isGkeRun, stopRecordedRun, watchRecordedRun } from './dispatch';
export { downloadGkeRunLogs, gkeRunManifest, runRecipeOnGke, type GkeRunRequest } from './gke-run';
export { fetchGkeCaptures, listGkeCaptures, localCapturePath, type GkeCapture } from './gke-captures';
export { deleteWorkload } from './gke-follow';
export { firstFailure, formatRunSummary, prefixLine, RunTails, type FirstFailure } from './summary';
export { formatDuration, isActive, listRuns, loadRun, resolveRunId, runsDir, runStatusText, type GkeRunRef, type RunRecord, type RunStatus } from './registry';
export { isGoneState, PREEMPTED_EXIT, recreateNode, vmForResume, withResume } from './preemption';
export { PASSTHROUGH_NAMES, passthroughEnv, redact, SECRET_NAMES } from './secrets';
export { locateTrainerLine, type RecipeLocation } from './problem-lines';
export type { EnvValue, OutputStream, RunListener, RunResult, RunSpec, WorkerResult } from './types';
