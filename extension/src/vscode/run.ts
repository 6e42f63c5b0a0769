import * as path from 'node:path';
import * as vscode from 'vscode';
import { describeError, TpwError } from '../core/errors';
import { runRecipe } from '../core/run/pipeline';
import { stopRecordedRun, watchRecordedRun } from '../core/run/session';
import { ConnectionManager } from '../core/ssh/connection';
import { formatRunSummary, prefixLine } from '../core/run/runner';
import type { RunResult } from '../core/run/types';
import type { RunPhase } from '../core/run/pipeline-types';
import { parseNodeName, shortName, type TpuNode } from '../core/tpu/models';
import * as config from './config';
import type { Ctx } from './ctx';
import { signalFor } from './cancel';
import { runEnvironment } from './secrets';
import { vscodeHostKeys } from './hostKeys';
import { nodeFromArg, pickNode } from './vmCommands';
import { listAllNodes, type VmTreeProvider } from './vmTree';
import { runViewFeed } from './runView/hook';
import { PreparedRecipe } from './prepareWorkers';

/** Output is flushed to the channel in batches: a chatty trainer on 64 workers would otherwise send thousands of IPC messages a second. */
const FLUSH_MS = 100;

interface ActiveRun {
  label: string;
  /** Aborting stops the run on every worker. */
  controller: AbortController;
  /** Aborting stops watching only (VS Code closing): the run goes on and is reattached on the next start. */
  detach: AbortController;
  runId?: string;
}

/**
 * "Run on TPU": one run at a time, its output in the "TPU Run" channel (every line prefixed `[wN]`),
 * a cancellable progress notification, and a status bar item while it runs.
 */
export class RunManager implements vscode.Disposable {
  readonly output: vscode.OutputChannel;
  private readonly status: vscode.StatusBarItem;
  private active: ActiveRun | undefined;

  constructor(
    private readonly ctx: Ctx,
    private readonly tree: VmTreeProvider,
  ) {
    this.output = vscode.window.createOutputChannel('TPU Run');
    this.status = vscode.window.createStatusBarItem('tpuWorkbench.run', vscode.StatusBarAlignment.Left, 50);
    this.status.name = 'TPU Run';
    this.status.command = { command: 'tpuWorkbench.showRunOutput', title: 'Show Run Output' };
  }

  showOutput(): void {
    this.output.show(true);
  }

  /** The run being watched, if any (its id once started). */
  get activeRunId(): string | undefined {
    return this.active?.runId;
  }

  /** Stops the watched run on every worker; false if `runId` is not the one being watched. */
  stopActive(runId: string): boolean {
    if (this.active?.runId !== runId) return false;
    this.active.controller.abort();
    return true;
  }

  /** `extraOverrides` go after the recipe's own hydra overrides, one argv entry each (see runRecipe). */
  async run(arg: unknown, nodeOverride?: TpuNode, resume = false, extraOverrides: string[] = []): Promise<void> {
    if (this.active) {
      const choice = await vscode.window.showInformationMessage(`A run is already in progress (${this.active.label}).`, 'Show output', 'Stop it');
      if (choice === 'Show output') this.showOutput();
      if (choice === 'Stop it') this.active.controller.abort();
      return;
    }
    const recipe = await resolveRecipe(arg);
    if (!recipe) return;
    const backend = await this.ctx.backend();
    const node = nodeOverride ?? (await this.resolveNode(arg));
    if (!node) return;
    if (node.state !== 'READY') {
      throw new TpwError('FAILED_PRECONDITION', `TPU VM ${shortName(node.name)} is ${node.state}; it must be READY to run on it.`);
    }
    const folder = vscode.workspace.getWorkspaceFolder(recipe) ?? vscode.workspace.workspaceFolders?.[0];
    if (!folder || folder.uri.scheme !== 'file') {
      throw new TpwError('FAILED_PRECONDITION', 'Open a local workspace folder to run on TPU: its contents are synced to every worker.');
    }
    // The run syncs files from disk: unsaved edits (to the recipe or the trainer) would silently not be run.
    await vscode.workspace.saveAll(false);

    // Re-checked after the awaits above: a second invocation may have started meanwhile.
    const busy = this.active as ActiveRun | undefined;
    if (busy) throw new TpwError('FAILED_PRECONDITION', `A run is already in progress (${busy.label}).`);
    const vm = shortName(node.name);
    const recipeName = path.basename(recipe.fsPath);
    const label = `${recipeName} on ${vm}`;
    const controller = new AbortController();
    const active: ActiveRun = { label, controller, detach: new AbortController() };
    this.active = active;
    this.ctx.setContext('running', true);
    this.status.text = `$(sync~spin) TPU: ${label}`;
    this.status.tooltip = `Running ${recipeName} on every worker of ${vm} (${node.acceleratorType}). Click to show the output.`;
    this.status.show();

    const out = new LineBuffer(this.output);
    const view = runViewFeed(this.ctx, label, node.networkEndpoints.length);
    this.output.clear();
    this.output.appendLine(`Run ${recipeName} on ${vm} (${node.acceleratorType}, ${node.networkEndpoints.length} workers) from ${folder.uri.fsPath}`);
    this.showOutput();
    this.ctx.log.info(`run ${label}: start`);

    try {
      const result = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `TPU: ${label}`, cancellable: true },
        async (progress, token) => {
          signalFor(token).addEventListener('abort', () => controller.abort(), { once: true });
          return runRecipe({
            backend,
            node,
            recipePath: recipe.fsPath,
            workspaceRoot: folder.uri.fsPath,
            failFast: config.failFast(),
            passEnv: await runEnvironment(this.ctx),
            hostKeys: vscodeHostKeys(backend.kind),
            resume,
            extraOverrides,
            signal: controller.signal,
            detachSignal: active.detach.signal,
            onStarted: (runId) => {
              active.runId = runId;
              this.onRunsChanged();
            },
            listener: {
              onLine: (worker, _stream, line) => {
                out.push(prefixLine(worker, line));
                view.onLine(worker, line);
              },
              onPhase: (phase: RunPhase, detail: string) => {
                progress.report({ message: detail || phase });
                // Sync and start progress belong in the transcript too; "done" is said by the summary.
                if (phase !== 'done' && detail) out.push(detail);
                this.ctx.log.info(`run ${label}: ${phase}${detail ? ` — ${detail}` : ''}`);
              },
              onWorkerExit: (w) => {
                view.onWorkerExit(w);
                this.ctx.log.info(`run ${label}: w${w.index} exit=${w.exitCode ?? w.signal ?? 'none'}${w.error ? ` error=${w.error}` : ''}`);
              },
            },
          });
        },
      );
      out.flush();
      view.done(result);
      this.output.appendLine(formatRunSummary(result));
      this.report(label, result);
    } catch (e) {
      out.flush();
      view.failed(e, controller.signal.aborted);
      this.output.appendLine(`Run failed: ${describeError(e)}`);
      if (controller.signal.aborted) {
        void vscode.window.showInformationMessage(`Run cancelled: ${label}.`);
        return;
      }
      throw e;
    } finally {
      out.dispose();
      this.active = undefined;
      this.ctx.setContext('running', false);
      this.status.hide();
      // A failed run may mean the VM was preempted; let the tree show it.
      this.tree.refresh();
      this.onRunsChanged();
    }
  }

  /** Follows a recorded run (after a VS Code restart, or from the Runs view) into the output channel. */
  async attach(runId: string, label: string): Promise<void> {
    if (this.active) {
      if (this.active.runId !== runId) throw new TpwError('FAILED_PRECONDITION', `Another run is being watched (${this.active.label}).`);
      this.showOutput();
      return;
    }
    const backend = await this.ctx.backend();
    const active: ActiveRun = { label, controller: new AbortController(), detach: new AbortController(), runId };
    this.active = active;
    this.ctx.setContext('running', true);
    this.status.text = `$(sync~spin) TPU: ${label}`;
    this.status.show();
    const out = new LineBuffer(this.output);
    this.output.clear();
    this.output.appendLine(`Reattached to run ${runId} (${label}); the log continues from the start of each worker's file.`);
    const conns = new ConnectionManager(vscodeHostKeys(backend.kind));
    try {
      active.controller.signal.addEventListener('abort', () => void stopRecordedRun(backend, conns, runId).catch((e: unknown) => this.ctx.log.warn(`stop ${runId}: ${describeError(e)}`)), { once: true });
      const result = await watchRecordedRun(backend, conns, runId, { onLine: (w, _s, line) => out.push(prefixLine(w, line)) }, {
        follow: true,
        signal: active.detach.signal,
        onNotice: (w, m) => out.push(`tpw: w${w}: ${m}`),
      });
      out.flush();
      if (!result.detached) {
        this.output.appendLine(formatRunSummary(result));
        this.report(label, result);
      }
    } finally {
      out.dispose();
      conns.dispose();
      if (this.active === active) this.active = undefined;
      this.ctx.setContext('running', false);
      this.status.hide();
      this.onRunsChanged();
    }
  }

  /** Set by the Runs view so that starts and ends show up at once. */
  onRunsChanged: () => void = () => undefined;

  private report(label: string, result: RunResult): void {
    this.ctx.log.info(`run ${label}: ${formatRunSummary(result)}`);
    if (result.detached) return; // still running on the workers; the Runs view shows it
    if (result.preempted) {
      const message = `Run preempted: ${label} (${result.preemptedReason ?? 'the VM was preempted'}).`;
      this.ctx.log.warn(message);
      void vscode.window.showWarningMessage(message, 'Recreate and resume', 'Show output').then((c) => {
        if (c === 'Show output') this.showOutput();
        if (c === 'Recreate and resume') void vscode.commands.executeCommand('tpuWorkbench.resumeRun', result.runId);
      });
      return;
    }
    if (result.cancelled) {
      void vscode.window.showInformationMessage(`Run cancelled: ${label}.`);
      return;
    }
    if (result.ok) {
      void vscode.window.showInformationMessage(`Run finished: ${label}, all ${result.workers.length} workers ok.`, 'Show output').then((c) => {
        if (c) this.showOutput();
      });
      return;
    }
    const failed = result.workers.filter((w) => !w.stopped && (w.error !== undefined || w.exitCode !== 0));
    const first = failed[0];
    const why = first ? (first.error ?? (first.exitCode !== null ? `exit code ${first.exitCode}` : `signal ${first.signal ?? '?'}`)) : 'see the output';
    const message = `Run failed: ${label}: ${failed.length} of ${result.workers.length} workers failed${first ? ` (w${first.index}: ${why})` : ''}.`;
    this.ctx.log.error(message);
    void vscode.window.showErrorMessage(message, 'Show output', 'Show log').then((c) => {
      if (c === 'Show output') this.showOutput();
      if (c === 'Show log') this.ctx.log.show(true);
    });
  }

  private async resolveNode(arg: unknown): Promise<TpuNode | undefined> {
    const backend = await this.ctx.backend();
    const fromTree = nodeFromArg(arg);
    if (fromTree) {
      // The tree may be seconds old: ask for the current state before running.
      return backend.api.getNode(parseNodeName(fromTree.name));
    }
    const ready = (await listAllNodes(backend)).nodes.filter((n) => n.state === 'READY');
    if (ready.length === 1) return ready[0];
    return pickNode(backend, 'Run on TPU: target VM', (n) => n.state === 'READY', 'There is no READY TPU VM to run on. Create one with "TPU: Create TPU VM".');
  }

  dispose(): void {
    // Closing VS Code must not stop a week-long run: stop watching; the next start reattaches.
    this.active?.detach.abort();
    this.status.dispose();
    this.output.dispose();
  }
}

/** A shell file in a `recipes` folder. */
function isRecipe(uri: vscode.Uri): boolean {
  return uri.scheme === 'file' && uri.path.endsWith('.sh') && path.posix.basename(path.posix.dirname(uri.path)) === 'recipes';
}

/**
 * The recipe to run: one a command chose (Prepare Workers' setup recipe), the file the command was invoked
 * on (editor title passes its URI), else the
 * active editor if it is a recipe, else a pick among `recipes/*.sh` (a single one is used directly).
 */
async function resolveRecipe(arg: unknown): Promise<vscode.Uri | undefined> {
  if (arg instanceof PreparedRecipe) return arg.uri;
  if (arg instanceof vscode.Uri && isRecipe(arg)) return arg;
  const active = vscode.window.activeTextEditor?.document.uri;
  if (active && isRecipe(active)) return active;
  const found = await vscode.workspace.findFiles('**/recipes/*.sh', '**/node_modules/**', 200);
  if (found.length === 0) {
    throw new TpwError('RECIPE', 'No recipe to run: open a recipes/*.sh file, or add one to the workspace.');
  }
  if (found.length === 1) return found[0];
  const picked = await vscode.window.showQuickPick(
    found
      .sort((a, b) => a.path.localeCompare(b.path))
      .map((uri) => ({ label: path.basename(uri.fsPath), description: vscode.workspace.asRelativePath(uri), uri })),
    { title: 'Run on TPU: recipe', placeHolder: 'Recipe to run' },
  );
  return picked?.uri;
}

/** Collects lines and appends them to the channel in batches. */
class LineBuffer implements vscode.Disposable {
  private lines: string[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly channel: vscode.OutputChannel) {}

  push(line: string): void {
    this.lines.push(line);
    this.timer ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.lines.length === 0) return;
    this.channel.appendLine(this.lines.join('\n'));
    this.lines = [];
  }

  dispose(): void {
    this.flush();
  }
}
