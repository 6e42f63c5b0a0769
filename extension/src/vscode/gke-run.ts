import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Backend } from '../core/backend';
import { TpwError } from '../core/errors';
import { poolsFor } from '../core/gke/provider';
import { gkeTpuType } from '../core/gke/tpu-types';
import type { GkeCluster } from '../core/gke/models';
import { DEFAULT_IMAGE, loadGkeUse, saveGkeUse, type GkeUse } from '../core/gke/use-config';
import { runRecipeOnGke } from '../core/run/engine';
import type { Ctx } from './ctx';
import { resolveRecipe, type RunManager } from './run';
import { runEnvironment } from './secrets';

/**
 * "Run on TPU" on GKE from VS Code: a recipe submitted to a cluster's TPU node pools as xpk's JobSet, watched like a
 * VM run (RunManager.track: its channel with [sNwM] lines, the run view with metrics from the pods' logs, Cancel
 * deleting the workload). The target is a node pool picked in the GKE view, or what `tpw gke use` / "Use This
 * Cluster" remembered for the workspace folder.
 */

export interface GkeTarget {
  backend: Backend;
  cluster: GkeCluster;
  tpuType: string;
  numSlices: number;
  use?: GkeUse;
}

/** The workspace folder a recipe runs from (its contents reach the pods). */
function folderOf(recipe: vscode.Uri): vscode.WorkspaceFolder {
  const folder = vscode.workspace.getWorkspaceFolder(recipe) ?? vscode.workspace.workspaceFolders?.[0];
  if (!folder || folder.uri.scheme !== 'file') throw new TpwError('FAILED_PRECONDITION', 'Open a local workspace folder to run on GKE: its contents reach every pod.');
  return folder;
}

/** What "Use This Cluster" / `tpw gke use` remembered for the first workspace folder, if any. */
export function workspaceGkeUse(): GkeUse | undefined {
  const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'file');
  return folder ? loadGkeUse(folder.uri.fsPath) : undefined;
}

/** Asks how many slices, among the node pools of the type (one pool per slice). */
export async function pickSlices(cluster: GkeCluster, tpuType: string, preset?: number): Promise<number | undefined> {
  const pools = cluster.nodePools.filter((p) => p.tpu?.type === tpuType).length;
  if (pools <= 1) return 1;
  const items = Array.from({ length: pools }, (_, i) => ({ label: String(i + 1), description: i + 1 === pools ? `every ${tpuType} node pool` : '', n: i + 1 }));
  const picked = await vscode.window.showQuickPick(items, {
    title: `Run on TPU: slices of ${tpuType} on ${cluster.cluster}`,
    placeHolder: `How many slices (${pools} node pools of ${tpuType})`,
    ignoreFocusOut: true,
    ...(preset ? { activeItems: items.filter((i) => i.n === preset) } : {}),
  });
  return picked?.n;
}

export async function runOnGke(ctx: Ctx, runs: RunManager, recipeArg: unknown, target: GkeTarget, resume = false, extraOverrides: string[] = []): Promise<void> {
  const recipe = await resolveRecipe(recipeArg);
  if (!recipe) return;
  const folder = folderOf(recipe);
  const { cluster, tpuType, numSlices } = target;
  poolsFor(cluster, tpuType, numSlices);
  await vscode.workspace.saveAll(false);
  const use = target.use ?? loadGkeUse(folder.uri.fsPath);
  const name = path.basename(recipe.fsPath);
  const where = `${cluster.cluster} (${numSlices} × ${tpuType})`;
  const perSlice = gkeTpuType(tpuType).vmsPerSlice;
  await runs.track({
    label: `${name} on ${where}`,
    busyKey: `${cluster.fullName}#${tpuType}`,
    workerCount: numSlices * perSlice,
    perSlice,
    header: `Run ${name} on GKE cluster ${cluster.cluster}: ${numSlices} × ${tpuType} (${numSlices * perSlice} pods) from ${folder.uri.fsPath}`,
    start: async (h) =>
      runRecipeOnGke({
        gke: target.backend.gke,
        cluster,
        tpuType,
        numSlices,
        namespace: use?.namespace ?? 'default',
        image: use?.image ?? DEFAULT_IMAGE,
        ...(use?.artifactDir ? { artifactDir: use.artifactDir } : {}),
        recipePath: recipe.fsPath,
        workspaceRoot: folder.uri.fsPath,
        extraOverrides,
        resume,
        passEnv: await runEnvironment(ctx),
        signal: h.signal,
        detachSignal: h.detachSignal,
        onStarted: (runId) => h.onStarted(runId),
        listener: h.listener,
      }),
  });
}

/** "Use This Cluster": remembers the cluster, a TPU type of its pools and the slices for the workspace folder. */
export async function useCluster(backend: Backend, cluster: GkeCluster, tpuType?: string): Promise<GkeUse | undefined> {
  const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'file');
  if (!folder) throw new TpwError('FAILED_PRECONDITION', 'Open a local workspace folder first: the cluster is remembered for it.');
  const types = [...new Set(cluster.nodePools.flatMap((p) => (p.tpu ? [p.tpu.type] : [])))];
  if (types.length === 0) throw new TpwError('FAILED_PRECONDITION', `GKE cluster "${cluster.cluster}" has no TPU node pools.`);
  const type = tpuType ?? (types.length === 1 ? types[0] : (await vscode.window.showQuickPick(types, { title: `Use ${cluster.cluster}: TPU type`, ignoreFocusOut: true })));
  if (!type) return undefined;
  const numSlices = await pickSlices(cluster, type);
  if (!numSlices) return undefined;
  const before = loadGkeUse(folder.uri.fsPath);
  const use: GkeUse = {
    workspace: folder.uri.fsPath,
    cluster: cluster.cluster,
    project: cluster.project,
    zone: cluster.location,
    numSlices,
    tpuType: type,
    ...(before?.artifactDir ? { artifactDir: before.artifactDir } : {}),
    image: before?.image ?? DEFAULT_IMAGE,
    namespace: before?.namespace ?? 'default',
    priority: before?.priority ?? 'medium',
    emulator: backend.kind === 'emulator',
  };
  saveGkeUse(use);
  void vscode.window.showInformationMessage(`Runs from ${folder.name} go to GKE cluster ${cluster.cluster}: ${numSlices} × ${type} (as \`tpw gke use\`).`);
  return use;
}
