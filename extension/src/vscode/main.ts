import * as vscode from 'vscode';
import { registerCommands } from './commands';
import { registerTpuDebugAdapter } from './debug';
import { watchTaskYamlContext } from './task-launch';
import { PortForwards } from './port-forwards';
import { registerTpuTasks, vmSource } from './tasks';
import * as config from './config';
import { Ctx } from './ctx';
import { startLanguageClient } from './language-client';
import { RunManager } from './run';
import { reattachOnStart } from './run-actions';
import { RunsTreeProvider } from './runs-tree';
import { registerRunView } from './run-view/hook';
import { WorkerTerminals } from './terminal';
import { VmTreeProvider } from './vm-tree';
import { ExplorerWatch } from './explorer/watch';
import { GkeTreeProvider } from './gke-tree';
import { DetailsDocuments } from './worker-actions';

let ctx: Ctx | undefined;

/**
 * Activation stays cheap: no network and no backend until the view is shown or a command runs
 * (the tree opens the backend on its first getChildren).
 */
export function activate(context: vscode.ExtensionContext): void {
  const c = new Ctx(context);
  ctx = c;
  const tree = c.own(new VmTreeProvider(c));
  const view = c.own(vscode.window.createTreeView('tpuWorkbench.vms', { treeDataProvider: tree, showCollapseAll: true }));
  tree.attach(view);
  c.own(new ExplorerWatch(c, tree));
  const runs = c.own(new RunManager(c, tree));
  const gkeTree = c.own(new GkeTreeProvider(c));
  c.own(vscode.window.createTreeView('tpuWorkbench.gke', { treeDataProvider: gkeTree, showCollapseAll: true }));
  const runsTree = c.own(new RunsTreeProvider(c));
  runsTree.attach(c.own(vscode.window.createTreeView('tpuWorkbench.runs', { treeDataProvider: runsTree })));
  runs.onRunsChanged = () => runsTree.refresh();
  // Started before the commands: "Run on TPU with Overrides…" asks it to check the overrides.
  const language = c.own(startLanguageClient(context, c.log));
  const terminals = c.own(new WorkerTerminals(c));
  const details = new DetailsDocuments();
  c.own(vscode.workspace.registerTextDocumentContentProvider(DetailsDocuments.scheme, details));
  const forwards = c.own(new PortForwards(c));
  registerCommands({ ctx: c, tree, runs, runsTree, language, terminals, details, forwards, gkeTree });
  watchTaskYamlContext(c);
  registerTpuDebugAdapter(c);
  c.own(registerTpuTasks(c, vmSource(c, tree)));
  registerRunView(c);
  // Runs go on while VS Code is closed; follow the one that was active (this opens the backend only then).
  reattachOnStart(c, runs, runsTree);
  c.own(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (!config.affectsBackend(e)) return;
      c.dropBackend();
      tree.refresh(true);
      gkeTree.refresh();
    }),
  );
  c.log.info(`TPU Workbench ${String(context.extension.packageJSON.version)} activated`);
}

export function deactivate(): void {
  ctx?.dispose();
  ctx = undefined;
}
