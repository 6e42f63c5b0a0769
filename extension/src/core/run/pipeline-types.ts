import type { Backend } from '../backend';
import type { TpuNode } from '../tpu/models';
import type { RunListener } from './types';

export type RunPhase = 'resolve' | 'sync' | 'start' | 'run' | 'done';

/** Run a recipe on every worker of a node: resolve workers, sync the workspace, start, stream, collect. */
export interface RecipeRunRequest {
  backend: Backend;
  node: TpuNode;
  /** Absolute path of the recipe (a shell file with `export` lines and a trainer command). */
  recipePath: string;
  /** Local folder synced to every worker (the VS Code workspace or the CLI's cwd). */
  workspaceRoot: string;
  /** Hydra overrides appended after the recipe's own. */
  extraOverrides?: string[];
  failFast?: boolean;
  signal?: AbortSignal;
  listener: RunListener & { onPhase?(phase: RunPhase, detail: string): void };
}
