import * as vscode from 'vscode';
import { TpwError } from '../core/errors';
import { POD_CONTAINER, readPodLog } from '../core/gke/workloads';
import { deleteWorkload, stopRecordedRun } from '../core/run/engine';
import type { Ctx } from './ctx';
import { GkeClusterItem, GkeMoreItem, GkeNodePoolItem, GkePodItem, GkeWorkloadItem, type GkeTreeProvider } from './gke-tree';
import { pickSlices, runOnGke, useCluster, workspaceGkeUse, type GkeTarget } from './gke-run';
import type { RunManager } from './run';

/**
 * The GKE view's commands: run on a node pool, remember a cluster for the workspace ("Use This Cluster", as
 * `tpw gke use`), stop a workload, read a pod's log, load more workloads.
 */

/** The GKE target of a tree item (a TPU node pool, a cluster), or of what the workspace remembered. */
export async function gkeTargetOf(ctx: Ctx, arg: unknown): Promise<GkeTarget | undefined> {
  if (arg instanceof GkeNodePoolItem) {
    const tpuType = arg.pool.tpu?.type;
    if (!tpuType) throw new TpwError('FAILED_PRECONDITION', `Node pool ${arg.pool.name} has no TPUs.`);
    const use = workspaceGkeUse();
    const numSlices = await pickSlices(arg.cluster, tpuType, use?.cluster === arg.cluster.cluster && use.tpuType === tpuType ? use.numSlices : undefined);
    return numSlices ? { backend: arg.backend, cluster: arg.cluster, tpuType, numSlices } : undefined;
  }
  if (arg instanceof GkeClusterItem) {
    const use = await useCluster(arg.backend, arg.cluster);
    return use ? { backend: arg.backend, cluster: arg.cluster, tpuType: use.tpuType, numSlices: use.numSlices, use } : undefined;
  }
  const use = workspaceGkeUse();
  if (!use) return undefined;
  const backend = await ctx.backend();
  if ((backend.kind === 'emulator') !== use.emulator) {
    throw new TpwError('FAILED_PRECONDITION', `This folder's GKE cluster ${use.cluster} is on ${use.emulator ? 'the local emulator' : `project ${use.project}`}, but TPU Workbench is set to ${backend.kind === 'emulator' ? 'the local emulator' : `project ${backend.project}`}.`);
  }
  const cluster = await backend.gke.findCluster(use.project, use.cluster, use.zone);
  return { backend, cluster, tpuType: use.tpuType, numSlices: use.numSlices, use };
}

/**
 * "Run on TPU" goes to GKE when invoked on a GKE row, or — from a recipe, with no VM given — when the workspace
 * folder has a remembered cluster (`tpw gke use`): then `tpw run` and the button go to the same place.
 */
export async function runOnTpuGke(ctx: Ctx, runs: RunManager, arg: unknown): Promise<boolean> {
  const gkeRow = arg instanceof GkeNodePoolItem || arg instanceof GkeClusterItem;
  if (!gkeRow && !(arg === undefined || arg instanceof vscode.Uri)) return false;
  if (!gkeRow && !workspaceGkeUse()) return false;
  const target = await gkeTargetOf(ctx, arg);
  if (target) await runOnGke(ctx, runs, gkeRow ? undefined : arg, target);
  return true;
}

/** "Run on TPU Here" on a TPU node pool (or a cluster): the recipe on it, slices asked for. */
export async function runHere(ctx: Ctx, runs: RunManager, arg: unknown): Promise<void> {
  const target = await gkeTargetOf(ctx, arg);
  if (target) await runOnGke(ctx, runs, undefined, target);
}

export async function stopWorkload(ctx: Ctx, tree: GkeTreeProvider, arg: unknown): Promise<void> {
  if (!(arg instanceof GkeWorkloadItem)) throw new TpwError('INVALID_ARGUMENT', 'Pick a workload in the GKE view.');
  const w = arg.workload;
  const ok = await vscode.window.showWarningMessage(`Stop workload ${w.name} on ${arg.cluster.cluster}? Its JobSet is deleted and its pods stopped.`, { modal: true }, 'Stop');
  if (ok !== 'Stop') return;
  if (w.runId) {
    // A tpw run: the record says cancelled too.
    await stopRecordedRun(arg.backend, ctx.connections(arg.backend), w.runId).catch(() => deleteWorkload(arg.backend.gke.kube(arg.cluster), w.namespace, w.name));
  } else {
    await deleteWorkload(arg.backend.gke.kube(arg.cluster), w.namespace, w.name);
  }
  tree.refresh();
}

/** A pod's log (all of it, as the API server has it) in an editor. */
export async function showPodLog(arg: unknown): Promise<void> {
  if (!(arg instanceof GkePodItem)) throw new TpwError('INVALID_ARGUMENT', 'Pick a pod in the GKE view.');
  const text = await readPodLog(arg.backend.gke.kube(arg.cluster), arg.workload.namespace, arg.pod.name, POD_CONTAINER);
  const doc = await vscode.workspace.openTextDocument({ content: text, language: 'log' });
  await vscode.window.showTextDocument(doc, { preview: true });
}

export async function loadMore(tree: GkeTreeProvider, arg: unknown): Promise<void> {
  if (arg instanceof GkeMoreItem) await tree.loadMore(arg);
}

/** "Use This Cluster" on a cluster or TPU node pool row. */
export async function useThisCluster(tree: GkeTreeProvider, arg: unknown): Promise<void> {
  if (arg instanceof GkeClusterItem) await useCluster(arg.backend, arg.cluster);
  else if (arg instanceof GkeNodePoolItem) await useCluster(arg.backend, arg.cluster, arg.pool.tpu?.type);
  else throw new TpwError('INVALID_ARGUMENT', 'Pick a GKE cluster or TPU node pool in the GKE view.');
  tree.refresh();
}
