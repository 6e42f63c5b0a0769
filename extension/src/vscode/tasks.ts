import { spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { readRecipe } from '../core/recipes/recipe';
import { locateTrainerLine, type RecipeLocation } from '../core/run/engine';
import { LineSplitter } from '../core/ssh/exec';
import type { Ctx } from './ctx';
import { shortName } from '../core/tpu/models';
import { listAllNodes, type VmTreeProvider } from './vm-tree';

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
  /** The TPU VM's name; asked for when the task runs if missing. */
  vm?: string;
  /** Hydra overrides, after the recipe's own. */
  overrides?: string[];
  zone?: string;
}

export const TPU_PROBLEM_MATCHERS = ['$tpu-python-traceback', '$tpu-python-traceback-plain', '$tpu-hydra-override', '$tpu-diverged', '$tpu-xla-oom', '$tpu-xla-compile-cause'];

/** The argv of `tpw run` for a definition with its VM (after the CLI bundle's path). */
export function tpwRunArgs(def: TpuTaskDefinition & { vm: string }): string[] {
  return ['run', def.recipe, '--vm', def.vm, ...(def.zone ? ['--zone', def.zone] : []), ...(def.overrides && def.overrides.length > 0 ? ['--', ...def.overrides] : [])];
}

export function tpuTask(ctx: Ctx, vms: VmSource, def: TpuTaskDefinition, scope: vscode.WorkspaceFolder | vscode.TaskScope = vscode.TaskScope.Workspace): vscode.Task {
  const folder = typeof scope === 'object' ? scope.uri.fsPath : vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const exec = new vscode.CustomExecution(async () => new TpwRunTerminal(path.join(ctx.extensionPath, 'dist', 'cli.js'), def, folder ?? process.cwd(), vms));
  const task = new vscode.Task(def, scope, `${path.basename(def.recipe)} ${def.vm ? `on ${def.vm}` : '(asks for the TPU VM)'}`, TPU_TASK_TYPE, exec, TPU_PROBLEM_MATCHERS);
  task.presentationOptions = { reveal: vscode.TaskRevealKind.Always, panel: vscode.TaskPanelKind.Dedicated };
  return task;
}

/** How long "Run Task" waits for the VM list before it offers tasks that ask for the VM instead. */
const LIST_FOR_TASKS_MS = 8000;

/** The READY VMs (their short names, each once), as the tree last listed them or listed now. */
export interface VmSource {
  readyVms(): Promise<string[]>;
}

/** READY VMs from the TPU VMs view's last listing, or from a listing made now (none if it fails or is slow). */
export function vmSource(ctx: Ctx, tree: VmTreeProvider): VmSource {
  return {
    readyVms: async () => {
      let nodes = tree.lastListedAt > 0 && ctx.backendState === 'ready' ? tree.lastNodes : undefined;
      if (!nodes) {
        const timeout = new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), LIST_FOR_TASKS_MS).unref());
        nodes = await Promise.race([ctx.backend().then(listAllNodes).then((l) => l.nodes), timeout]).catch(() => undefined);
      }
      return [...new Set((nodes ?? []).filter((n) => n.state === 'READY').map((n) => shortName(n.name)))].sort();
    },
  };
}

/**
 * Offers, per recipe under `recipes/`, a task for each READY VM there is, or one that asks for the VM when it
 * runs (never a VM that does not exist); resolves tasks.json entries, with or without a `vm`.
 */
export function registerTpuTasks(ctx: Ctx, vms: VmSource): vscode.Disposable {
  return vscode.tasks.registerTaskProvider(TPU_TASK_TYPE, {
    provideTasks: async () => {
      const folder = vscode.workspace.workspaceFolders?.[0];
      if (!folder) return [];
      const [recipes, ready] = await Promise.all([vscode.workspace.findFiles('recipes/*.sh', undefined, 50), vms.readyVms()]);
      const defs = recipes.map((r) => ({ type: TPU_TASK_TYPE, recipe: path.relative(folder.uri.fsPath, r.fsPath) }) as const);
      const all = ready.length > 0 ? defs.flatMap((d) => ready.map((vm) => ({ ...d, vm }))) : defs;
      return all.map((d) => tpuTask(ctx, vms, d, folder));
    },
    resolveTask: (task) => {
      const def = task.definition as TpuTaskDefinition;
      if (!def.recipe) return undefined;
      return tpuTask(ctx, vms, def, task.scope ?? vscode.TaskScope.Workspace);
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
    private readonly vms: VmSource,
  ) {}

  open(): void {
    if (this.def.vm) return this.start(this.def.vm);
    // A task without a VM asks for one among those that are READY now.
    void this.vms.readyVms().then(async (ready) => {
      if (ready.length === 0) return this.end('tpu: there is no READY TPU VM to run on. Create one ("TPU: Create TPU VM"), then run the task again.');
      const vm = ready.length === 1 ? ready[0] : await vscode.window.showQuickPick(ready, { title: `Run ${path.basename(this.def.recipe)} on TPU: VM`, placeHolder: 'TPU VM', ignoreFocusOut: true });
      if (!vm) return this.end('tpu: no TPU VM chosen.');
      this.start(vm);
    });
  }

  private end(message: string): void {
    this.write.fire(`${message}\r\n`);
    this.closed.fire(1);
  }

  private start(vm: string): void {
    let recipe: RecipeLocation = { path: this.def.recipe, commandLine: 1 };
    try {
      const r = readRecipe(path.resolve(this.cwd, this.def.recipe));
      recipe = { path: this.def.recipe, commandLine: r.commandLine, overrides: r.overrides, overrideLines: r.overrideLines };
    } catch {
      // tpw run says what is wrong with the recipe
    }
    const emit = (line: string) => this.write.fire(`${locateTrainerLine(line, recipe)}\r\n`);
    // process.execPath runs a script as node in code-server and, with ELECTRON_RUN_AS_NODE, in desktop VS Code.
    const child = spawn(process.execPath, [this.cli, ...tpwRunArgs({ ...this.def, vm })], { cwd: this.cwd, env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' } });
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
