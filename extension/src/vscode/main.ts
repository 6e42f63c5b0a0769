import * as vscode from 'vscode';
import { registerCommands } from './commands';
import * as config from './config';
import { Ctx } from './ctx';
import { RunManager } from './run';
import { VmTreeProvider } from './vmTree';

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
  const runs = c.own(new RunManager(c, tree));
  registerCommands({ ctx: c, tree, runs });
  c.own(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (!config.affectsBackend(e)) return;
      c.dropBackend();
      tree.refresh();
    }),
  );
  c.log.info(`TPU Workbench ${String(context.extension.packageJSON.version)} activated`);
}

export function deactivate(): void {
  ctx?.dispose();
  ctx = undefined;
}
