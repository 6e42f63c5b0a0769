import * as vscode from 'vscode';
import { isTpwError } from '../core/errors';
import type { Ctx } from './ctx';
import { startEmulator } from './emulator';
import type { RunManager } from './run';
import { downloadLogs, openRunViewOfRun, resumeRun, runAgain, showRun, stopRun } from './run-actions';
import type { RunsTreeProvider } from './runs-tree';
import { setSecret } from './secrets';
import { createVm, deleteQueuedResource, deleteVm, nodeFromArg, pickNode, startVm, stopVm } from './vm-commands';
import { addMyKey } from './host-keys';
import type { LanguageService } from './language-client';
import { askOverrides } from './overrides-pick';
import { parseNodeName, type TpuNode } from '../core/tpu/models';
import type { VmTreeProvider } from './vm-tree';
import { prepareWorkers } from './prepare-workers';
import type { WorkerTerminals } from './terminal';
import { copyIp, copySshCommand, openInRemoteSsh, workerFromArg, type DetailsDocuments } from './worker-actions';
import { chooseZones } from './zones-pick';
import { getSampleRecipe } from './sample-recipe';
import { launchTaskYaml } from './task-launch';
import { attachDebugger, debugOnTpu } from './debug';
import { openInBrowser, type PortForwards } from './port-forwards';
import { loadMore, runHere, runOnTpuGke, showPodLog, stopWorkload, useThisCluster } from './gke-commands';
import type { GkeTreeProvider } from './gke-tree';

/** What command handlers need besides the context. */
export interface Services {
  ctx: Ctx;
  tree: VmTreeProvider;
  runs: RunManager;
  runsTree: RunsTreeProvider;
  language: LanguageService;
  terminals: WorkerTerminals;
  details: DetailsDocuments;
  forwards: PortForwards;
  gkeTree: GkeTreeProvider;
}

/** The VM of a tree item, fetched again (the row may be seconds old), or a pick among the READY ones. */
async function readyNode(s: Services, arg: unknown, title: string): Promise<TpuNode | undefined> {
  const backend = await s.ctx.backend();
  const fromTree = nodeFromArg(arg);
  if (fromTree) return backend.api.getNode(parseNodeName(fromTree.name));
  return pickNode(backend, title, (n) => n.state === 'READY', 'There is no READY TPU VM.');
}

type Handler = (s: Services, arg: unknown) => Promise<void> | void;

interface CommandSpec {
  /** Used in error messages: "<title> failed: …". */
  title: string;
  handler: Handler;
}

/** Every command of the extension; ids match `contributes.commands` in package.json. */
const COMMANDS: Record<string, CommandSpec> = {
  'tpuWorkbench.runOnTpu': {
    title: 'Run on TPU',
    handler: async ({ ctx, runs }, arg) => {
      if (!(await runOnTpuGke(ctx, runs, arg))) await runs.run(arg);
    },
  },
  'tpuWorkbench.gke.refresh': { title: 'Refresh GKE', handler: ({ gkeTree }) => gkeTree.refresh() },
  'tpuWorkbench.gke.runHere': { title: 'Run on TPU Here', handler: ({ ctx, runs, gkeTree }, arg) => runHere(ctx, runs, arg).finally(() => gkeTree.refresh()) },
  'tpuWorkbench.gke.useCluster': { title: 'Use This Cluster', handler: ({ gkeTree }, arg) => useThisCluster(gkeTree, arg) },
  'tpuWorkbench.gke.stopWorkload': { title: 'Stop Workload', handler: ({ ctx, gkeTree }, arg) => stopWorkload(ctx, gkeTree, arg) },
  'tpuWorkbench.gke.showPodLog': { title: 'Show Pod Log', handler: (_s, arg) => showPodLog(arg) },
  'tpuWorkbench.gke.loadMore': { title: 'Load More Workloads', handler: ({ gkeTree }, arg) => loadMore(gkeTree, arg) },
  'tpuWorkbench.runOnTpuWithOverrides': {
    title: 'Run on TPU with Overrides',
    handler: async ({ runs, language }, arg) => {
      const overrides = await askOverrides(language);
      if (overrides) await runs.run(arg, undefined, false, overrides);
    },
  },
  'tpuWorkbench.runTaskYaml': { title: 'Run on TPU (Task YAML)', handler: ({ ctx, tree }, arg) => launchTaskYaml(ctx, arg).finally(() => tree.refresh()) },
  'tpuWorkbench.createVm': { title: 'Create TPU VM', handler: ({ ctx, tree }, arg) => createVm(ctx, tree, arg) },
  'tpuWorkbench.deleteVm': { title: 'Delete TPU VM', handler: ({ ctx, tree }, arg) => deleteVm(ctx, tree, arg) },
  'tpuWorkbench.startVm': { title: 'Start TPU VM', handler: ({ ctx, tree }, arg) => startVm(ctx, tree, arg) },
  'tpuWorkbench.stopVm': { title: 'Stop TPU VM', handler: ({ ctx, tree }, arg) => stopVm(ctx, tree, arg) },
  'tpuWorkbench.deleteQueuedResource': { title: 'Delete Queued Resource', handler: ({ ctx, tree }, arg) => deleteQueuedResource(ctx, tree, arg) },
  'tpuWorkbench.chooseZones': { title: 'Choose Zones', handler: ({ ctx, tree }) => chooseZones(ctx, tree) },
  'tpuWorkbench.openTerminal': {
    title: 'Open Terminal on Worker',
    handler: async (s, arg) => {
      const w = arg === undefined ? await pickWorker(s) : await workerFromArg(arg, 'Open Terminal on Worker');
      if (w) await s.terminals.open(w.node, [w.index]);
    },
  },
  'tpuWorkbench.openTerminalsAll': {
    title: 'Open Terminals on All Workers',
    handler: async (s, arg) => {
      const node = await readyNode(s, arg, 'Open Terminals on All Workers');
      if (node) await s.terminals.open(node);
    },
  },
  'tpuWorkbench.openInRemoteSsh': { title: 'Open Worker in Remote-SSH', handler: ({ ctx }, arg) => openInRemoteSsh(ctx, arg) },
  'tpuWorkbench.copyIp': { title: 'Copy IP', handler: (_s, arg) => copyIp(arg) },
  'tpuWorkbench.copySshCommand': { title: 'Copy SSH Command', handler: ({ ctx }, arg) => copySshCommand(ctx, arg) },
  'tpuWorkbench.showDetails': { title: 'Show Details', handler: ({ details }, arg) => details.show(arg) },
  'tpuWorkbench.prepareWorkers': {
    title: 'Prepare Workers',
    handler: async (s, arg) => {
      const node = await readyNode(s, arg, 'Prepare Workers');
      if (node) await prepareWorkers(s.ctx, s.runs, node);
    },
  },
  'tpuWorkbench.refresh': { title: 'Refresh', handler: ({ tree }) => tree.refresh(true) },
  'tpuWorkbench.startEmulator': { title: 'Start Local Emulator', handler: ({ ctx, tree }) => startEmulator(ctx, tree) },
  'tpuWorkbench.showLog': { title: 'Show Log', handler: ({ ctx }) => ctx.log.show() },
  'tpuWorkbench.showRunOutput': { title: 'Show Run Output', handler: ({ runs }) => runs.showOutput() },
  'tpuWorkbench.showRun': { title: 'Show Run Log', handler: ({ ctx, runs }, arg) => showRun(ctx, runs, arg) },
  'tpuWorkbench.stopRun': { title: 'Stop Run', handler: ({ ctx, runs }, arg) => stopRun(ctx, runs, arg) },
  'tpuWorkbench.runAgain': { title: 'Run Again', handler: ({ ctx, runs }, arg) => runAgain(ctx, runs, arg) },
  'tpuWorkbench.downloadLogs': { title: 'Download Logs', handler: ({ ctx }, arg) => downloadLogs(ctx, arg) },
  'tpuWorkbench.openRunViewOfRun': { title: 'Open Run View', handler: ({ ctx }, arg) => openRunViewOfRun(ctx, arg) },
  'tpuWorkbench.resumeRun': { title: 'Recreate and Resume', handler: ({ ctx, runs }, arg) => resumeRun(ctx, runs, arg) },
  'tpuWorkbench.addMyKey': {
    title: 'Add My Key to This VM',
    handler: async ({ ctx }, arg) => {
      const node = nodeFromArg(arg) ?? (await pickNode(await ctx.backend(), 'Add My Key to This VM', (n) => n.state === 'READY', 'There is no READY TPU VM.'));
      if (node) await addMyKey(ctx, node);
    },
  },
  'tpuWorkbench.setSecret': { title: 'Set Secret', handler: ({ ctx }) => setSecret(ctx) },
  'tpuWorkbench.getStarted': {
    title: 'Get Started',
    handler: async ({ ctx }) => {
      await vscode.commands.executeCommand('workbench.action.openWalkthrough', `${ctx.extContext.extension.id}#tpuWorkbench.firstRun`, false);
    },
  },
  'tpuWorkbench.getSampleRecipe': { title: 'Get the Sample Recipe', handler: ({ ctx }) => getSampleRecipe(ctx) },
  'tpuWorkbench.refreshRuns': { title: 'Refresh Runs', handler: ({ runsTree }) => runsTree.refresh() },
  'tpuWorkbench.debugOnTpu': {
    title: 'Debug on TPU',
    handler: async (s, arg) => {
      const node = await readyNode(s, arg, 'Debug on TPU');
      if (node) await debugOnTpu(s.ctx, s.runs, arg, node);
    },
  },
  'tpuWorkbench.attachDebugger': { title: 'Attach Debugger', handler: ({ ctx }, arg) => attachDebugger(ctx, arg) },
  'tpuWorkbench.forwardPort': {
    title: 'Forward Port',
    handler: async (s, arg) => {
      const w = arg === undefined ? await pickWorker(s) : await workerFromArg(arg, 'Forward Port');
      if (w) await s.forwards.ask(w.node, w.index);
    },
  },
  'tpuWorkbench.openForwardedPort': {
    title: 'Open Forwarded Port in Browser',
    handler: async ({ forwards }) => {
      const f = await forwards.pick('Open Forwarded Port in Browser');
      if (f) await openInBrowser(f.forward);
    },
  },
  'tpuWorkbench.stopForwardingPort': {
    title: 'Stop Forwarding Port',
    handler: async ({ forwards }) => {
      const f = await forwards.pick('Stop Forwarding Port');
      if (f) await forwards.stop(f);
    },
  },
};

/** From the palette: a READY VM, then one of its workers. */
async function pickWorker(s: Services): Promise<{ node: TpuNode; index: number } | undefined> {
  const node = await readyNode(s, undefined, 'Open Terminal on Worker');
  if (!node) return undefined;
  if (node.networkEndpoints.length <= 1) return { node, index: 0 };
  const picked = await vscode.window.showQuickPick(
    node.networkEndpoints.map((ep, index) => ({ label: `w${index}`, description: ep.ipAddress, index })),
    { title: `Open Terminal on Worker: worker of ${parseNodeName(node.name).node}` },
  );
  return picked ? { node, index: picked.index } : undefined;
}

/**
 * Registers the table. Each handler is wrapped so that a thrown error becomes one notification
 * with "Show log" instead of VS Code's generic "command resulted in an error".
 */
export function registerCommands(s: Services): void {
  for (const [id, spec] of Object.entries(COMMANDS)) {
    s.ctx.own(
      vscode.commands.registerCommand(id, async (arg: unknown) => {
        try {
          await spec.handler(s, arg);
        } catch (e) {
          s.ctx.showError(`${spec.title} failed`, e);
          // A VM or queued resource that is gone (deleted from a terminal, the console): the view must not keep it.
          if (isTpwError(e, 'NOT_FOUND')) s.tree.refresh();
        }
      }),
    );
  }
}
