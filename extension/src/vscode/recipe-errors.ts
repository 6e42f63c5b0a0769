import * as path from 'node:path';
import * as vscode from 'vscode';
import * as config from './config';

/**
 * Before a run: a recipe the editor already shows errors in (an unknown override, a flag libtpu does not have, a
 * bad quote) would fail on every worker after the sync, or run something other than what was meant. Ask first,
 * naming the first error at its line; "Don't Ask Again" turns the question off (setting
 * `tpuWorkbench.run.confirmRecipeErrors`). Only errors already known are asked about: nothing is checked anew.
 */
export async function confirmRecipeErrors(recipe: vscode.Uri): Promise<boolean> {
  if (!config.confirmRecipeErrors()) return true;
  const errors = vscode.languages.getDiagnostics(recipe).filter((d) => d.severity === vscode.DiagnosticSeverity.Error);
  if (errors.length === 0) return true;
  const first = [...errors].sort((a, b) => a.range.start.line - b.range.start.line)[0];
  const name = path.basename(recipe.fsPath);
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : '';
  const RUN = 'Run Anyway';
  const SHOW = 'Show Problems';
  const NEVER = "Don't Ask Again";
  const choice = await vscode.window.showWarningMessage(
    `${name} has ${errors.length === 1 ? 'an error' : `${errors.length} errors`}. Run it anyway?`,
    { modal: true, detail: `${name}:${first.range.start.line + 1}: ${first.message}${more}` },
    RUN,
    SHOW,
    NEVER,
  );
  if (choice === SHOW) {
    await vscode.window.showTextDocument(recipe, { selection: first.range });
    await vscode.commands.executeCommand('workbench.actions.view.problems');
    return false;
  }
  if (choice === NEVER) await config.stopConfirmingRecipeErrors();
  return choice === RUN || choice === NEVER;
}
