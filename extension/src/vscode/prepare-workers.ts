import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { TpwError } from '../core/errors';
import { parseNodeName, type TpuNode } from '../core/tpu/models';
import type { Ctx } from './ctx';
import type { RunManager } from './run';

/** The workspace's setup recipe: `export` lines and one command, like any recipe (see setup/README.md). */
export const SETUP_RECIPE = path.join('setup', 'prepare-workers.sh');
const TEMPLATE_FILES = ['prepare-workers.sh', 'install.sh', 'README.md'];

/**
 * "Prepare Workers": runs the workspace's setup/ recipe (a venv, torch + torch_xla, the trainer) on every
 * worker at once through the same pipeline as "Run on TPU" — the workspace is synced first, every line is
 * prefixed with its worker, and the run view shows each worker's progress and exit code. A workspace without
 * setup/ is offered TPU Workbench's template.
 */
export async function prepareWorkers(ctx: Ctx, runs: RunManager, node: TpuNode | undefined): Promise<void> {
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (!folder || folder.uri.scheme !== 'file') throw new TpwError('FAILED_PRECONDITION', 'Open a local workspace folder: Prepare Workers syncs it to every worker and runs its setup/ recipe.');
  const recipe = path.join(folder.uri.fsPath, SETUP_RECIPE);
  if (!fs.existsSync(recipe)) {
    const choice = await vscode.window.showInformationMessage(
      `This workspace has no ${SETUP_RECIPE}. Add TPU Workbench's setup recipe (a venv with torch, torch_xla and the trainer)?`,
      { modal: true },
      'Add setup/',
    );
    if (choice !== 'Add setup/') return;
    const template = path.join(ctx.extensionPath, 'setup');
    fs.mkdirSync(path.dirname(recipe), { recursive: true });
    for (const f of TEMPLATE_FILES) {
      const src = path.join(template, f);
      if (fs.existsSync(src)) fs.copyFileSync(src, path.join(folder.uri.fsPath, 'setup', f));
    }
    await vscode.window.showTextDocument(vscode.Uri.file(recipe), { preview: false });
  }
  if (node) ctx.log.info(`prepare workers of ${parseNodeName(node.name).node} with ${recipe}`);
  await runs.run(new PreparedRecipe(vscode.Uri.file(recipe)), node);
}

/** A recipe chosen by a command rather than by the user (not necessarily under recipes/). */
export class PreparedRecipe {
  constructor(readonly uri: vscode.Uri) {}
}
