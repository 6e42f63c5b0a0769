import { isTaskYamlRun, relaunchInstead } from '../core/task-yaml/launch';
import { launchTaskYaml } from './task-launch';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { describeError, TpwError } from '../core/errors';
import { downloadGkeRunLogs, downloadRunLogs, isGkeRun, loadRun, stopRecordedRun, vmForResume, workersOfRecord, type RunRecord } from '../core/run/engine';
import { parseClusterName } from '../core/gke/models';
import { runOnGke } from './gke-run';
import { parseNodeName } from '../core/tpu/models';
import * as config from './config';
import type { Ctx } from './ctx';
import type { RunManager } from './run';
import { RunItem, type RunsTreeProvider } from './runs-tree';
import { openRecordedRunView } from './run-view/recorded';

/**
 * Commands of the Runs view: show (reattach), stop, run again, download logs; and reattaching active runs
 * when the extension starts (the runs kept going on the workers while VS Code was closed).
 */

function recordOf(arg: unknown): RunRecord {
  if (arg instanceof RunItem) return loadRun(arg.record.runId); // re-read: the item may be stale
  if (typeof arg === 'string') return loadRun(arg); // from a notification's action
  throw new TpwError('INVALID_ARGUMENT', 'Pick a run in the Runs view.');
}

const labelOf = (r: RunRecord) => `${path.basename(r.recipe)} on ${r.vm}`;

export async function showRun(ctx: Ctx, runs: RunManager, arg: unknown): Promise<void> {
  const rec = recordOf(arg);
  // Without an Output channel (the default) a run's output is its run view.
  if (!config.runOutputChannel()) return openRecordedRunView(ctx, rec);
  // attach shows the run's channel if it is watched already, else opens one and follows it there.
  await runs.attach(rec.runId, labelOf(rec), true);
}

/** "Open Run View": the run's logs, live metrics and profiles in a panel, for any run the Runs view lists. */
export async function openRunViewOfRun(ctx: Ctx, arg: unknown): Promise<void> {
  await openRecordedRunView(ctx, recordOf(arg));
}

export async function stopRun(ctx: Ctx, runs: RunManager, arg: unknown): Promise<void> {
  const rec = recordOf(arg);
  if (runs.stopActive(rec.runId)) return;
  // Said at once (the registry says "stopping" before the first signal: the Runs view shows it), done in seconds.
  const backend = await ctx.backend();
  await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Stopping ${labelOf(rec)}…` }, () => stopRecordedRun(backend, ctx.connections(backend), rec.runId));
  void vscode.window.showInformationMessage(`Run stopped: ${labelOf(rec)}.`);
}

export async function runAgain(ctx: Ctx, runs: RunManager, arg: unknown): Promise<void> {
  const rec = recordOf(arg);
  if (!fs.existsSync(rec.recipe)) throw new TpwError('NOT_FOUND', `The recipe of that run is gone: ${rec.recipe}`);
  // A task YAML's run goes again the way it went first: launch (setup skipped while unchanged).
  if (isTaskYamlRun(rec)) return launchTaskYaml(ctx, vscode.Uri.file(rec.recipe), rec.vm);
  if (isGkeRun(rec)) return rerunOnGke(ctx, runs, rec, false);
  const backend = await ctx.backend();
  const node = await backend.api.getNode(parseNodeName(rec.node));
  // Its run view (once that run ended) shows the new one: no new tab, no new editor group.
  await runs.run(vscode.Uri.file(rec.recipe), node, false, [], { again: rec.runId });
}

/** Every worker's log into `<workspace>/.tpw/logs/<run>/wN.log`, then opens worker 0's. */
export async function downloadLogs(ctx: Ctx, arg: unknown): Promise<void> {
  const rec = recordOf(arg);
  const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'file')?.uri.fsPath ?? rec.workspaceRoot;
  const dest = path.join(folder, '.tpw', 'logs', rec.runId);
  const backend = await ctx.backend();
  const files = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Downloading logs of ${rec.runId}` }, async () =>
    isGkeRun(rec) ? downloadGkeRunLogs(backend.gke, rec, dest) : downloadRunLogs(await workersOfRecord(backend, rec), ctx.connections(backend), rec.runId, dest),
  );
  ctx.log.info(`downloaded ${files.length} logs of ${rec.runId} to ${dest}`);
  if (files[0]) await vscode.window.showTextDocument(vscode.Uri.file(files[0]), { preview: true });
}

/** After a restart: follow every active run, the newest in "TPU Run" and the others in channels of their own. */
export function reattachOnStart(ctx: Ctx, runs: RunManager, tree: RunsTreeProvider): void {
  for (const rec of tree.activeRuns()) {
    ctx.log.info(`reattaching to run ${rec.runId} (${labelOf(rec)})`);
    runs.attach(rec.runId, labelOf(rec)).catch((e: unknown) => ctx.log.warn(`reattach ${rec.runId}: ${describeError(e)}`));
  }
}

/** "Recreate and resume": a preempted VM is deleted and created again (same spec), then the run restarts with resume=auto. */
export async function resumeRun(ctx: Ctx, runs: RunManager, arg: unknown): Promise<void> {
  const rec = recordOf(arg);
  if (!fs.existsSync(rec.recipe)) throw new TpwError('NOT_FOUND', `The recipe of that run is gone: ${rec.recipe}`);
  if (isTaskYamlRun(rec)) throw relaunchInstead(rec);
  // GKE brings preempted nodes back itself: the same workload is submitted again, resuming from its checkpoint.
  if (isGkeRun(rec)) return rerunOnGke(ctx, runs, rec, true);
  const backend = await ctx.backend();
  // Every slice of a multislice run comes back; only the ones that went away are recreated or started.
  const slices = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `TPU: bringing ${rec.vm} back` }, async (progress) => {
    const back = [];
    for (const [i, name] of (rec.slices && rec.slices.length > 0 ? rec.slices : [rec.node]).entries()) {
      back.push(await vmForResume(backend.api, name, rec.runId, (m) => progress.report({ message: m }), rec.recreate?.[i]));
    }
    return back;
  });
  await runs.run(vscode.Uri.file(rec.recipe), slices.length > 1 ? slices : slices[0], true);
}

/** A GKE run submitted again to the same cluster, type and slices ("Run Again", or "Resume" with resume=auto). */
async function rerunOnGke(ctx: Ctx, runs: RunManager, rec: RunRecord & { gke: NonNullable<RunRecord['gke']> }, resume: boolean): Promise<void> {
  const backend = await ctx.backend();
  const cluster = await backend.gke.api.getCluster(parseClusterName(rec.gke.cluster));
  await runOnGke(ctx, runs, vscode.Uri.file(rec.recipe), { backend, cluster, tpuType: rec.gke.tpuType, numSlices: rec.gke.slices }, resume, rec.extraOverrides);
}
