import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Ctx } from './ctx';

/**
 * The `tpu` task type: "Run on TPU" as a VS Code task, so it can be a build step, bound to a key, or run
 * before a launch. It runs the bundled `tpw run` (the same pipeline as the command), whose `[wN]`-prefixed
 * output the `$tpu-*` problem matchers (package.json) turn into Problems at the local file and line.
 */

export const TPU_TASK_TYPE = 'tpu';

/** `contributes.taskDefinitions` for `tpu`, as a type. */
export interface TpuTaskDefinition extends vscode.TaskDefinition {
  type: typeof TPU_TASK_TYPE;
  /** The recipe (or task YAML), relative to the workspace folder. */
  recipe: string;
  /** The TPU VM's name. */
  vm: string;
  /** Hydra overrides, after the recipe's own. */
  overrides?: string[];
  zone?: string;
}

export const TPU_PROBLEM_MATCHERS = ['$tpu-python-traceback', '$tpu-python-traceback-plain'];

/** The argv of `tpw run` for a definition (after the CLI bundle's path). */
export function tpwRunArgs(def: TpuTaskDefinition): string[] {
  return ['run', def.recipe, '--vm', def.vm, ...(def.zone ? ['--zone', def.zone] : []), ...(def.overrides && def.overrides.length > 0 ? ['--', ...def.overrides] : [])];
}

export function tpuTask(ctx: Ctx, def: TpuTaskDefinition, scope: vscode.WorkspaceFolder | vscode.TaskScope = vscode.TaskScope.Workspace): vscode.Task {
  const cli = path.join(ctx.extensionPath, 'dist', 'cli.js');
  // process.execPath runs a script as node in code-server and, with ELECTRON_RUN_AS_NODE, in desktop VS Code.
  const exec = new vscode.ProcessExecution(process.execPath, [cli, ...tpwRunArgs(def)], { env: { ELECTRON_RUN_AS_NODE: '1' } });
  const task = new vscode.Task(def, scope, `${path.basename(def.recipe)} on ${def.vm}`, TPU_TASK_TYPE, exec, TPU_PROBLEM_MATCHERS);
  task.presentationOptions = { reveal: vscode.TaskRevealKind.Always, panel: vscode.TaskPanelKind.Dedicated };
  return task;
}

/** Offers a task per recipe under `recipes/` for each VM the tree knows; resolves tasks.json entries. */
export function registerTpuTasks(ctx: Ctx): vscode.Disposable {
  return vscode.tasks.registerTaskProvider(TPU_TASK_TYPE, {
    provideTasks: async () => {
      const recipes = await vscode.workspace.findFiles('recipes/*.sh', undefined, 50);
      const folder = vscode.workspace.workspaceFolders?.[0];
      if (!folder) return [];
      const vm = vscode.workspace.getConfiguration('tpuWorkbench').get<string>('defaultVm') || 'my-vm';
      return recipes.map((r) => tpuTask(ctx, { type: TPU_TASK_TYPE, recipe: path.relative(folder.uri.fsPath, r.fsPath), vm }, folder));
    },
    resolveTask: (task) => {
      const def = task.definition as TpuTaskDefinition;
      if (!def.recipe || !def.vm) return undefined;
      return tpuTask(ctx, def, task.scope ?? vscode.TaskScope.Workspace);
    },
  });
}
