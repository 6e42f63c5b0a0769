import * as path from 'node:path';
import * as vscode from 'vscode';
import { describeError, TpwError } from '../core/errors';
import {
  firstFailure,
  formatRunSummary,
  loadRun,
  markStopping,
  prefixLine,
  runRecipe,
  RunTails,
  stopRecordedRun,
  watchRecordedRun,
  type EnvValue,
  type RunConnections,
  type RunListener,
  type RunPhase,
  type RunResult,
} from '../core/run/engine';
import { runTargetItems } from '../core/explorer/run-targets';
import { parseNodeName, shortName, type TpuNode } from '../core/tpu/models';
import * as config from './config';
import type { Ctx } from './ctx';
import { signalFor } from './cancel';
import { runEnvironment } from './secrets';
import { nodeFromArg } from './vm-commands';
import { listAllNodes, SliceGroupItem, type VmTreeProvider } from './vm-tree';
import { runViewFeed } from './run-view/hook';
import { PreparedRecipe } from './prepare-workers';
import { RunChannels, type RunOutput } from './run-output';
import { confirmRecipeErrors } from './recipe-errors';
import { openRecordedRunView } from './run-view/recorded';

/** What RunManager.track hands the code that starts a run. */
export interface RunHooks {
  /** Aborting stops the run (every worker, or the JobSet). */
  signal: AbortSignal;
  /** Aborting stops watching only. */
  detachSignal: AbortSignal;
  /** Once the run has its id; `source`: its workers over SSH (VM runs), for live metrics and artifacts. */
  onStarted(runId: string, source?: RunConnections): void;
  listener: RunListener & { onPhase(phase: RunPhase, detail: string): void };
}

/** What a caller adds to a run started by RunManager.run ("Debug on TPU", "Run Again"). */
export interface RunLaunchExtras {
  extraEnv?: Record<string, EnvValue>;
  envPrepend?: Record<string, string>;
  /** Once the run started on every worker; `stopped` aborts when the run is stopped. */
  onStarted?: (runId: string, stopped: AbortSignal) => void;
  /** The run this one repeats (Run Again): its run view shows this one. */
  again?: string;
}

interface ActiveRun {
  label: string;
  /** Aborting stops the run on every worker. */
  controller: AbortController;
  /** Stop was asked for and the workers are being stopped. */
  stopping?: boolean;
  /** Aborting stops watching only (VS Code closing): the run goes on and is reattached on the next start. */
  detach: AbortController;
  runId?: string;
  /** Full node name of a run started here: one run per VM at a time (its chips are not shared). */
  node?: string;
  out: RunOutput;
}

/**
 * "Run on TPU": one run per VM at a time, each run's output in its own channel (see run-output.ts; every line
 * prefixed `[wN]`), a cancellable progress notification, and a status bar item while runs are watched.
 */
export class RunManager implements vscode.Disposable {
  private readonly channels = new RunChannels();
  private readonly status: vscode.StatusBarItem;
  private readonly active = new Set<ActiveRun>();

  constructor(
    private readonly ctx: Ctx,
    private readonly tree: VmTreeProvider,
  ) {
    this.status = vscode.window.createStatusBarItem('tpuWorkbench.run', vscode.StatusBarAlignment.Left, 50);
    this.status.name = 'TPU Run';
    this.status.command = { command: 'tpuWorkbench.showRunOutput', title: 'Show Run Output' };
  }

  /** "Show Run Output": the run's channel, or a pick when several runs have one. */
  showOutput(): Promise<void> {
    return this.channels.show();
  }

  /** Shows the output of `runId` if it is being watched here; false if it is not. */
  showIfWatched(runId: string): boolean {
    const out = this.channels.live(runId);
    out?.show();
    return out !== undefined;
  }

  /** Stops a watched run on every worker; false if `runId` is not being watched here. */
  stopActive(runId: string): boolean {
    const run = [...this.active].find((a) => a.runId === runId);
    run?.controller.abort();
    return run !== undefined;
  }

  /**
   * Says at once that a run is stopping (its workers take seconds to go): the status bar, the registry (so the
   * Runs view and `tpw runs`), and `also` (the run view, the progress notification).
   */
  private stopping(run: ActiveRun, also: () => void = () => undefined): void {
    if (run.stopping) return;
    run.stopping = true;
    if (run.runId) markStopping(run.runId);
    also();
    this.updateStatus();
    this.onRunsChanged();
  }

  private onVm(nodeName: string): ActiveRun | undefined {
    return [...this.active].find((a) => a.node === nodeName);
  }

  private watching(run: ActiveRun): void {
    this.active.add(run);
    this.updateStatus();
  }

  private unwatched(run: ActiveRun): void {
    run.out.end();
    this.active.delete(run);
    this.updateStatus();
  }

  private updateStatus(): void {
    const runs = [...this.active];
    this.ctx.setContext('running', runs.length > 0);
    if (runs.length === 0) {
      this.status.hide();
      return;
    }
    const only = runs.length === 1 ? runs[0] : undefined;
    this.status.text = only ? `$(${only.stopping ? 'loading' : 'sync'}~spin) TPU: ${only.stopping ? 'stopping ' : ''}${only.label}${only.stopping ? '…' : ''}` : `$(sync~spin) TPU: ${runs.length} runs`;
    this.status.tooltip = `${runs.map((r) => `${r.label}${r.stopping ? ' (stopping)' : ''}`).join('\n')}\nClick to show the output.`;
    this.status.show();
  }

  /**
   * `nodeOverride`: the VM, or every slice of a multislice group (slice 0 first). `extraOverrides` go after the
   * recipe's own hydra overrides, one argv entry each (see runRecipe); `launch` is what "Debug on TPU" adds (its
   * environment, and a call once the run started).
   */
  async run(arg: unknown, nodeOverride?: TpuNode | TpuNode[], resume = false, extraOverrides: string[] = [], launch: RunLaunchExtras = {}): Promise<void> {
    const recipe = await resolveRecipe(arg);
    if (!recipe) return;
    if (!(await confirmRecipeErrors(recipe))) return;
    const backend = await this.ctx.backend();
    const target = nodeOverride ?? (await this.resolveNode(arg));
    const slices = Array.isArray(target) && target.length > 1 ? target : undefined;
    const node = Array.isArray(target) ? target[0] : target;
    if (!node) return;
    const other = this.onVm(node.name);
    if (other) {
      const choice = await vscode.window.showInformationMessage(`A run is already in progress on ${shortName(node.name)} (${other.label}).`, 'Show output', 'Stop it');
      if (choice === 'Show output') other.out.show();
      if (choice === 'Stop it') other.controller.abort();
      return;
    }
    for (const n of slices ?? [node]) {
      if (n.state !== 'READY') throw new TpwError('FAILED_PRECONDITION', `TPU VM ${shortName(n.name)} is ${n.state}; it must be READY to run on it.`);
    }
    const folder = vscode.workspace.getWorkspaceFolder(recipe) ?? vscode.workspace.workspaceFolders?.[0];
    if (!folder || folder.uri.scheme !== 'file') {
      throw new TpwError('FAILED_PRECONDITION', 'Open a local workspace folder to run on TPU: its contents are synced to every worker.');
    }
    // The run syncs files from disk: unsaved edits (to the recipe or the trainer) would silently not be run.
    await vscode.workspace.saveAll(false);

    const vm = slices ? `${shortName(node.sliceGroup ?? node.name)} (${slices.length} slices)` : shortName(node.name);
    const workerCount = node.networkEndpoints.length * (slices?.length ?? 1);
    const recipeName = path.basename(recipe.fsPath);
    await this.track({
      label: `${recipeName} on ${vm}`,
      busyKey: node.name,
      workerCount,
      // Multislice lines read [s1w3]: slice 1, its worker 3.
      perSlice: slices ? node.networkEndpoints.length : undefined,
      header: `Run ${recipeName} on ${vm} (${node.acceleratorType}, ${workerCount} workers) from ${folder.uri.fsPath}`,
      again: launch.again,
      start: async (h) =>
        runRecipe({
          backend,
          node,
          ...(slices ? { slices } : {}),
          recipePath: recipe.fsPath,
          workspaceRoot: folder.uri.fsPath,
          failFast: config.failFast(),
          passEnv: await runEnvironment(this.ctx),
          conns: this.ctx.connections(backend),
          resume,
          extraOverrides,
          extraEnv: launch.extraEnv,
          envPrepend: launch.envPrepend,
          signal: h.signal,
          detachSignal: h.detachSignal,
          onStarted: (runId, source) => {
            h.onStarted(runId, source);
            launch.onStarted?.(runId, h.signal);
          },
          listener: h.listener,
        }),
    });
  }

  /**
   * What every run watched here shares, whatever it runs on: its channel (lines prefixed [wN] or [sNwM]), the run
   * view, a cancellable progress notification, the status bar, the report at its end, and one run per target at a
   * time (`busyKey`: the VM, or the GKE node pools' cluster and type). `start` starts it with the hooks.
   */
  async track(o: { label: string; busyKey: string; workerCount: number; perSlice?: number; header: string; again?: string; start(h: RunHooks): Promise<RunResult> }): Promise<void> {
    // Re-checked after the caller's awaits: a second invocation may have started meanwhile.
    const busy = this.onVm(o.busyKey);
    if (busy) throw new TpwError('FAILED_PRECONDITION', `A run is already in progress on ${o.label.split(' on ').pop()} (${busy.label}).`);
    const { label, perSlice } = o;
    const controller = new AbortController();
    const out = this.channels.open(label, undefined, config.runOutputChannel());
    const active: ActiveRun = { label, controller, detach: new AbortController(), node: o.busyKey, out };
    this.watching(active);
    const tails = new RunTails();

    const view = runViewFeed(this.ctx, label, o.workerCount, { reuse: o.again, workersPerSlice: perSlice });
    out.reveal = () => view.reveal();
    out.appendLine(o.header);
    if (out.channel) out.show();
    this.ctx.log.info(`run ${label}: start`);

    try {
      const result = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `TPU: ${label}`, cancellable: true },
        async (progress, token) => {
          signalFor(token).addEventListener('abort', () => controller.abort(), { once: true });
          controller.signal.addEventListener('abort', () => this.stopping(active, () => {
            view.stopping();
            progress.report({ message: 'Stopping…' });
          }), { once: true });
          return o.start({
            signal: controller.signal,
            detachSignal: active.detach.signal,
            onStarted: (runId, source) => {
              active.runId = runId;
              out.runId = runId;
              // Stopped while it was starting: the registry hears of it now that it has a record.
              if (active.stopping) markStopping(runId);
              view.started(runId, source);
              this.onRunsChanged();
            },
            listener: tails.wrap({
              onLine: (worker, _stream, line) => {
                out.push(prefixLine(worker, line, perSlice));
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
              onMetrics: (worker, records) => view.onMetrics(worker, records),
              onNotice: (m) => {
                out.push(`tpw: ${m}`);
                this.ctx.log.info(`run ${label}: ${m}`);
              },
            }),
          });
        },
      );
      view.done(result);
      this.report(label, result, out, tails);
    } catch (e) {
      view.failed(e, controller.signal.aborted);
      out.appendLine(`Run failed: ${describeError(e)}`);
      if (controller.signal.aborted) {
        void vscode.window.showInformationMessage(`Run cancelled: ${label}.`);
        return;
      }
      throw e;
    } finally {
      this.unwatched(active);
      // A failed run may mean the VM was preempted; let the tree show it.
      this.tree.refresh();
      this.onRunsChanged();
    }
  }

  /** Follows a recorded run (after a VS Code restart, or from the Runs view) into its output channel. */
  async attach(runId: string, label: string, reveal = false): Promise<void> {
    if (this.showIfWatched(runId)) return;
    // The channel first, before any await: runs reattached together get channels in the order asked for.
    const out = this.channels.open(label, runId, config.runOutputChannel());
    // Its VM counts as busy while it is watched: "Run on TPU" there asks first, as for a run started here.
    let node: string | undefined;
    try {
      node = loadRun(runId).node;
    } catch {
      // no record: watchRecordedRun below says so
    }
    const active: ActiveRun = { label, controller: new AbortController(), detach: new AbortController(), runId, node, out };
    this.watching(active);
    active.controller.signal.addEventListener('abort', () => this.stopping(active), { once: true });
    out.reveal = () => void openRecordedRunView(this.ctx, loadRun(runId)).catch((e: unknown) => this.ctx.showError('Open Run View failed', e));
    out.appendLine(`Reattached to run ${runId} (${label}); the log continues from the start of each worker's file.`);
    // Shown when the user asked for this run; a reattach at start-up does not pop the panel open.
    if (reveal) out.show();
    const tails = new RunTails();
    try {
      const backend = await this.ctx.backend();
      const cm = this.ctx.connections(backend);
      active.controller.signal.addEventListener('abort', () => void stopRecordedRun(backend, cm, runId).catch((e: unknown) => this.ctx.log.warn(`stop ${runId}: ${describeError(e)}`)), { once: true });
      const result = await watchRecordedRun(backend, cm, runId, tails.wrap({ onLine: (w, _s, line) => out.push(prefixLine(w, line)) }), {
        follow: true,
        signal: active.detach.signal,
        onNotice: (w, m) => out.push(`tpw: w${w}: ${m}`),
      });
      // A run that ended before this watch began: the registry knows who failed first, not this watch.
      if (!result.detached) this.report(label, result, out, tails, loadRun(runId).failedWorker);
    } finally {
      this.unwatched(active);
      this.onRunsChanged();
    }
  }

  /** Set by the Runs view so that starts and ends show up at once. */
  onRunsChanged: () => void = () => undefined;

  /** The summary (and for a failure, the first failing worker's last lines) into the run's channel, and a notification. */
  private report(label: string, result: RunResult, out: RunOutput, tails: RunTails, failedFirst?: number): void {
    const lines = tails.report(result, failedFirst);
    for (const line of lines) out.appendLine(line);
    this.ctx.log.info(`run ${label}: ${formatRunSummary(result)}`);
    if (result.detached) return; // still running on the workers; the Runs view shows it
    if (result.preempted) {
      const message = `Run preempted: ${label} (${result.preemptedReason ?? 'the VM was preempted'}).`;
      this.ctx.log.warn(message);
      void vscode.window.showWarningMessage(message, 'Recreate and resume', 'Show output').then((c) => {
        if (c === 'Show output') out.show();
        if (c === 'Recreate and resume') void vscode.commands.executeCommand('tpuWorkbench.resumeRun', result.runId);
      });
      return;
    }
    if (result.cancelled) {
      void vscode.window.showInformationMessage(`Run cancelled: ${label}.`);
      return;
    }
    if (result.ok) {
      this.ctx.setContext('runFinished', true);
      void vscode.window.showInformationMessage(`Run finished: ${label}, all ${result.workers.length} workers ok.`, 'Show output').then((c) => {
        if (c) out.show();
      });
      return;
    }
    const failed = result.workers.filter((w) => !w.stopped && (w.error !== undefined || w.exitCode !== 0));
    const first = firstFailure(result, failedFirst);
    // The last thing the failing worker said is usually the reason (a Python traceback's last line).
    const lastLine = first ? tails.last(first.index).filter((l) => l.trim()).pop() : undefined;
    const quoted = lastLine ? `; last line: "${lastLine.length > 160 ? `${lastLine.slice(0, 157)}...` : lastLine}"` : '';
    const message = `Run failed: ${label}: ${Math.max(failed.length, first ? 1 : 0)} of ${result.workers.length} workers failed${first ? ` (w${first.index} first: ${first.why}${quoted})` : ''}.`;
    this.ctx.log.error(message);
    void vscode.window.showErrorMessage(message, 'Show output', 'Show log').then((c) => {
      if (c === 'Show output') out.show();
      if (c === 'Show log') this.ctx.log.show(true);
    });
  }

  private async resolveNode(arg: unknown): Promise<TpuNode | TpuNode[] | undefined> {
    const backend = await this.ctx.backend();
    // A multislice group: every slice, as it is now.
    if (arg instanceof SliceGroupItem) return Promise.all(arg.slices.map((n) => backend.api.getNode(parseNodeName(n.name))));
    const fromTree = nodeFromArg(arg);
    if (fromTree) {
      // The tree may be seconds old: ask for the current state before running.
      return backend.api.getNode(parseNodeName(fromTree.name));
    }
    // READY VMs and READY multislice groups, a group as one item (its slices are never offered alone).
    const items = runTargetItems((await listAllNodes(backend)).nodes);
    if (items.length === 0) throw new TpwError('FAILED_PRECONDITION', 'There is no READY TPU VM or multislice group to run on. Create one with "TPU: Create TPU VM".');
    const picked =
      items.length === 1
        ? items[0]
        : await vscode.window.showQuickPick(items, {
            title: 'Run on TPU: target VM or multislice group',
            placeHolder: 'TPU VM or multislice group',
            matchOnDescription: true,
            // Often a second step (recipe, then VM); stays open when a webview takes focus (see secrets.ts).
            ignoreFocusOut: true,
          });
    if (!picked) return undefined;
    if (picked.target === 'vm') return picked.node;
    return Promise.all(picked.slices.map((n) => backend.api.getNode(parseNodeName(n.name))));
  }

  dispose(): void {
    // Closing VS Code must not stop a week-long run: stop watching; the next start reattaches.
    for (const run of this.active) run.detach.abort();
    this.status.dispose();
    this.channels.dispose();
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
export async function resolveRecipe(arg: unknown): Promise<vscode.Uri | undefined> {
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
    // Stays open when focus moves: an active run view takes focus back after the palette closes (see secrets.ts).
    { title: 'Run on TPU: recipe', placeHolder: 'Recipe to run', ignoreFocusOut: true },
  );
  return picked?.uri;
}
