import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Ctx } from './ctx';

/** The sample recipe the walkthrough runs, shipped in the extension (.vscodeignore lets it in). */
export const SAMPLE_RECIPE = path.join('recipes', 'tiny-llama.sh');

/**
 * "Get the Sample Recipe": recipes/tiny-llama.sh into the workspace (an empty one has nothing to run), then
 * opened, with ▷ Run on TPU in its title. A recipe of that name already there is opened as it is, never
 * overwritten. With no folder open, a folder is asked for and opened with the recipe in it.
 */
export async function getSampleRecipe(ctx: Ctx): Promise<void> {
  const shipped = path.join(ctx.extensionPath, SAMPLE_RECIPE);
  let folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'file')?.uri;
  const reopen = folder === undefined;
  if (!folder) {
    const picked = await vscode.window.showOpenDialog({ canSelectFiles: false, canSelectFolders: true, openLabel: 'Put the Sample Recipe Here', title: 'Get the Sample Recipe: the project folder' });
    folder = picked?.[0];
    if (!folder) return;
  }
  const dest = path.join(folder.fsPath, SAMPLE_RECIPE);
  if (!fs.existsSync(dest)) {
    fs.mkdirSync(path.dirname(dest), { recursive: true });
    fs.copyFileSync(shipped, dest);
    ctx.log.info(`sample recipe written to ${dest}`);
  }
  if (reopen) {
    await vscode.commands.executeCommand('vscode.openFolder', folder);
    return;
  }
  await vscode.window.showTextDocument(vscode.Uri.file(dest), { preview: false });
}
