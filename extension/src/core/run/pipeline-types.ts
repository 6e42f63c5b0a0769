import type { Backend } from '../backend';
import type { ConnectionManager } from '../ssh/connection';
import type { WorkerTarget } from '../ssh/types';
import type { TpuNode } from '../tpu/models';
import type { EnvValue, RunListener } from './types';

/** A run's workers and the connections that reach them. */
export interface RunConnections {
  workers: WorkerTarget[];
  conns: ConnectionManager;
}

export type RunPhase = 'resolve' | 'sync' | 'start' | 'run' | 'done';

/** Run a recipe on every worker of a node: resolve workers, sync the workspace, start, stream, collect. */
export interface RecipeRunRequest {
  backend: Backend;
  node: TpuNode;
  /**
   * Multislice: every slice of the group, in slice order (`node` is slice 0). The run starts on every worker
   * of every slice, with the MEGASCALE_* variables the TPU runtime sets for multislice.
   */
  slices?: TpuNode[];
  /** Absolute path of the recipe (a shell file with `export` lines and a trainer command). */
  recipePath: string;
  /** Local folder synced to every worker (the VS Code workspace or the CLI's cwd). */
  workspaceRoot: string;
  /** Hydra overrides appended after the recipe's own. */
  extraOverrides?: string[];
  failFast?: boolean;
  /** Aborting stops the run on every worker. */
  signal?: AbortSignal;
  /** Aborting stops *watching*: the run goes on detached and can be reattached (`tpw logs RUN --follow`). */
  detachSignal?: AbortSignal;
  /** Return as soon as the program started on every worker (CLI `--detach`). */
  detach?: boolean;
  /**
   * Passed-through environment (HF_TOKEN, WANDB_API_KEY, XLA_IR_DEBUG, XLA_HLO_DEBUG, LIBTPU_INIT_ARGS; see
   * run/secrets.ts): delivered in the worker's 0600 env file only. The recipe's own exports win over these.
   */
  passEnv?: Record<string, string>;
  /** Settings the product adds (not secrets: written to the env file like the recipe's exports; they win). */
  extraEnv?: Record<string, EnvValue>;
  /**
   * Shell words put in front of a `:`-separated variable (PYTHONPATH for "Debug on TPU"), before the recipe's
   * value or, without one, the login's.
   */
  envPrepend?: Record<string, string>;
  /** Continue from the trainer's newest checkpoint: appends `resume=auto` when the recipe runs tpu_trainer. */
  resume?: boolean;
  /** How often the VM state is polled for preemption while the run is watched (default 15 s). */
  statePollMs?: number;
  /**
   * The process's one connection owner (its host-key options fit `backend.kind`): the run shares connections
   * with everything else that talks to these workers, and leaves them open when it returns.
   */
  conns: ConnectionManager;
  /** Overrides TPW_HOME for the run registry (tests). */
  tpwHome?: string;
  /**
   * Called once the run is started on every worker and recorded, with the run's workers and its connections
   * (to read more from the workers while the run goes on).
   */
  onStarted?(runId: string, source: RunConnections): void;
  listener: RunListener & { onPhase?(phase: RunPhase, detail: string): void };
}
