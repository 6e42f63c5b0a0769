import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { parseTaskYaml } from '../../../protocol/task-yaml-check';
import { TpwError } from '../core/errors';
import { formatRunSummary } from '../core/run/engine';
import { SECRET_NAMES } from '../core/run/engine';
import { executeLaunch } from '../core/task-yaml/launch';
import { formatPlan, planLaunch } from '../core/task-yaml/plan';
import { rankPrefix } from '../core/task-yaml/task-env';
import { signalFor } from './cancel';
import type { Ctx } from './ctx';

/**
 * "Run on TPU" on a SkyPilot task YAML: the same plan and launch as `tpw launch` (core/task-yaml/), with what
 * the CLI takes from flags asked for here: a value for each env or secret
 * the YAML leaves empty (secrets from VS Code's SecretStorage or the environment first, else a password box).
 * Output goes to one channel per task, each line with SkyPilot's `(worker1, rank=1)` prefix.
 */

const channels = new Map<string, vscode.OutputChannel>();

function channelFor(ctx: Ctx, name: string): vscode.OutputChannel {
  let ch = channels.get(name);
  if (!ch) {
    ch = ctx.own(vscode.window.createOutputChannel(`TPU Task: ${name}`));
    channels.set(name, ch);
  }
  return ch;
}

/** Top-level keys that make a YAML a task (the language server's test is the same). */
const TASK_TOP = /^(resources|run|setup|num_nodes|file_mounts|workdir)\s*:/m;

/**
 * Keeps the `tpuWorkbench.isTaskYaml` context key in step with the active editor, so "Run on TPU" shows on a
 * task YAML's title bar and nowhere else (once the extension is active; the palette offers it on any YAML,
 * which activates the extension, and the command checks the file).
 */
export function watchTaskYamlContext(ctx: Ctx): void {
  const update = () => {
    const doc = vscode.window.activeTextEditor?.document;
    const yes = doc !== undefined && doc.languageId === 'yaml' && TASK_TOP.test(doc.getText());
    void vscode.commands.executeCommand('setContext', 'tpuWorkbench.isTaskYaml', yes);
  };
  ctx.own(vscode.window.onDidChangeActiveTextEditor(update));
  ctx.own(vscode.workspace.onDidSaveTextDocument((d) => d === vscode.window.activeTextEditor?.document && update()));
  update();
}

function taskUri(arg: unknown): vscode.Uri | undefined {
  if (arg instanceof vscode.Uri) return arg;
  const doc = vscode.window.activeTextEditor?.document;
  return doc && /\.ya?ml$/i.test(doc.uri.path) ? doc.uri : undefined;
}

/** `cluster`: the VM to launch on (Run Again of a task's run: the VM it ran on); default as `tpw launch` names it. */
export async function launchTaskYaml(ctx: Ctx, arg: unknown, cluster?: string): Promise<void> {
  const uri = taskUri(arg);
  const notTask = 'Open a SkyPilot task YAML (a file with resources: and run:) to run it on TPU.';
  if (!uri || uri.scheme !== 'file') throw new TpwError('INVALID_ARGUMENT', notTask);
  await vscode.workspace.saveAll(false);
  const file = uri.fsPath;
  if (!TASK_TOP.test(fs.readFileSync(file, 'utf8'))) throw new TpwError('INVALID_ARGUMENT', `${path.basename(file)} is not a task YAML. ${notTask}`);
  const first = parseTaskYaml(fs.readFileSync(file, 'utf8'));
  // Refusals are shown as they are; the plan below repeats the check with the values asked for.
  const task = first.task;
  const envOverrides: Record<string, string> = {};
  const secretOverrides: Record<string, string> = {};
  for (const p of first.problems) {
    const m = /^envs\.(\w+)$/.exec(p.field);
    if (!m || p.kind !== 'invalid' || !/has no value/.test(p.message)) continue;
    const v = await vscode.window.showInputBox({ title: `${path.basename(file)}: env ${m[1]}`, prompt: `A value for ${m[1]} (the task leaves it empty)`, ignoreFocusOut: true });
    if (v === undefined) return;
    envOverrides[m[1]] = v;
  }
  for (const [k, v] of Object.entries(task?.secrets ?? {})) {
    if (v !== null) continue;
    const stored = (SECRET_NAMES as readonly string[]).includes(k) ? await ctx.extContext.secrets.get(k) : undefined;
    const value = stored ?? process.env[k] ?? (await vscode.window.showInputBox({ title: `${path.basename(file)}: secret ${k}`, prompt: `The value of ${k} (written only to a 0600 file on each host)`, password: true, ignoreFocusOut: true }));
    if (value === undefined) return;
    secretOverrides[k] = value;
  }
  const backend = await ctx.backend();
  // Relative workdir and file_mounts start where `sky launch` would be typed: the workspace folder.
  const cwd = vscode.workspace.getWorkspaceFolder(uri)?.uri.fsPath ?? path.dirname(file);
  const plan = await planLaunch({ backend, mode: 'launch', yamlPath: file, cluster, cwd, envOverrides, secretOverrides });
  const out = channelFor(ctx, plan.cluster);
  out.appendLine(`Launch ${path.basename(file)} on ${plan.cluster}:`);
  for (const line of formatPlan(plan)) out.appendLine(`  ${line}`);
  out.show(true);
  if (plan.vm.action === 'create' || plan.vm.action === 'create-group') {
    const what = plan.vm.action === 'create' ? `TPU VM ${plan.cluster} (tpu-${plan.task.acceleratorType})` : `multislice group ${plan.cluster} (${plan.slices} slices of tpu-${plan.task.acceleratorType})`;
    const ok = await vscode.window.showWarningMessage(`Create ${what} in ${plan.vm.zone} for ${path.basename(file)}?`, { modal: true, detail: 'It is billed until you delete it (tpw down / Delete TPU VM).' }, 'Create and Run');
    if (ok !== 'Create and Run') return;
  }
  let hosts = plan.hosts ?? 1;
  const result = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `TPU: ${path.basename(file)} on ${plan.cluster}`, cancellable: true }, (progress, token) =>
    executeLaunch(plan, {
      backend,
      conns: ctx.connections(backend),
      signal: signalFor(token),
      say: (line) => {
        out.appendLine(line);
        progress.report({ message: line });
      },
      onHosts: (n) => (hosts = n),
      onLine: (stage, w, line) => out.appendLine(`${rankPrefix(w, hosts, plan.task.name, stage)} ${line}`),
    }),
  );
  const stage = result.setup && !result.setup.ok ? result.setup : result.run;
  if (!stage) {
    out.appendLine(`${plan.cluster}: done (the task has no run).`);
    return;
  }
  const summary = `${stage === result.setup ? 'Setup' : 'Run'}: ${formatRunSummary(stage)}`;
  out.appendLine(summary);
  if (stage.ok) void vscode.window.showInformationMessage(`${path.basename(file)} on ${plan.cluster}: ${summary}`);
  else if (!stage.cancelled) void vscode.window.showErrorMessage(`${path.basename(file)} on ${plan.cluster}: ${summary}`);
}
