import { spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { readRecipe } from '../core/recipes/recipe';
import { locateTrainerLine } from '../core/run/engine';
import { LineSplitter } from '../core/ssh/exec';
import type { Ctx } from './ctx';

/**
 * The `tpu` task type: "Run on TPU" as a VS Code task, so it can be a build step, bound to a key, or run
 * before a launch. It runs the bundled `tpw run` (the same pipeline as the command), whose `[wN]`-prefixed
 * output the `$tpu-*` problem matchers (package.json) turn into Problems at the local file and line. Lines that
 * name no file (an unknown override, a non-finite loss, XLA out of memory) are written with the recipe's command
 * location in front (core/run/problem-lines.ts), so those Problems open the recipe.
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

export const TPU_PROBLEM_MATCHERS = ['$tpu-python-traceback', '$tpu-python-traceback-plain', '$tpu-hydra-override', '$tpu-diverged', '$tpu-xla-oom', '$tpu-xla-compile-cause'];

/** The argv of `tpw run` for a definition (after the CLI bundle's path). */
export function tpwRunArgs(def: TpuTaskDefinition): string[] {
  return ['run', def.recipe, '--vm', def.vm, ...(def.zone ? ['--zone', def.zone] : []), ...(def.overrides && def.overrides.length > 0 ? ['--', ...def.overrides] : [])];
}

export function tpuTask(ctx: Ctx, def: TpuTaskDefinition, scope: vscode.WorkspaceFolder | vscode.TaskScope = vscode.TaskScope.Workspace): vscode.Task {
  const folder = typeof scope === 'object' ? scope.uri.fsPath : vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const exec = new vscode.CustomExecution(async () => new TpwRunTerminal(path.join(ctx.extensionPath, 'dist', 'cli.js'), def, folder ?? process.cwd()));
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

/** `tpw run` as a child process, its output lines passed to the task's terminal (where the matchers read them). */
class TpwRunTerminal implements vscode.Pseudoterminal {
  private readonly write = new vscode.EventEmitter<string>();
  private readonly closed = new vscode.EventEmitter<number>();
  readonly onDidWrite = this.write.event;
  readonly onDidClose = this.closed.event;
  private child: ChildProcess | undefined;

  constructor(
    private readonly cli: string,
    private readonly def: TpuTaskDefinition,
    private readonly cwd: string,
  ) {}

  open(): void {
    let recipe = { path: this.def.recipe, commandLine: 1 };
    try {
      recipe = { path: this.def.recipe, commandLine: readRecipe(path.resolve(this.cwd, this.def.recipe)).commandLine };
    } catch {
      // tpw run says what is wrong with the recipe
    }
    const emit = (line: string) => this.write.fire(`${locateTrainerLine(line, recipe)}\r\n`);
    // process.execPath runs a script as node in code-server and, with ELECTRON_RUN_AS_NODE, in desktop VS Code.
    const child = spawn(process.execPath, [this.cli, ...tpwRunArgs(this.def)], { cwd: this.cwd, env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' } });
    this.child = child;
    for (const stream of [child.stdout, child.stderr]) {
      const lines = new LineSplitter();
      stream.on('data', (b: Buffer) => lines.push(b).forEach(emit));
      stream.on('end', () => lines.flush().forEach(emit));
    }
    child.on('error', (e) => {
      emit(`tpw: ${e.message}`);
      this.closed.fire(1);
    });
    child.on('close', (code) => this.closed.fire(code ?? 1));
  }

  /** Ctrl-C in the task's terminal, or Terminate Task: `tpw run` stops the run on every worker on SIGINT. */
  handleInput(data: string): void {
    if (data === '\x03') this.child?.kill('SIGINT');
  }

  close(): void {
    this.child?.kill('SIGINT');
  }
}
