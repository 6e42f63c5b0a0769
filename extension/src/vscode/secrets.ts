import * as vscode from 'vscode';
import { passthroughEnv, SECRET_NAMES } from '../core/run/engine';
import type { Ctx } from './ctx';

/**
 * HF_TOKEN and WANDB_API_KEY live in VS Code's SecretStorage (the OS keychain), never in settings. A run gets
 * them, plus the XLA/libtpu knobs set in the environment VS Code was started from, through run/secrets.ts.
 */

export async function runEnvironment(ctx: Ctx): Promise<Record<string, string>> {
  const fromStore: Record<string, string> = {};
  for (const name of SECRET_NAMES) {
    const v = await ctx.extContext.secrets.get(name);
    if (v) fromStore[name] = v;
  }
  // SecretStorage wins over the environment: it is what the user set in VS Code on purpose.
  return passthroughEnv({ ...process.env, ...fromStore });
}

export async function setSecret(ctx: Ctx): Promise<void> {
  const picked = await vscode.window.showQuickPick(
    SECRET_NAMES.map((n) => ({ label: n, description: n === 'HF_TOKEN' ? 'Hugging Face token (gated models and datasets)' : 'Weights & Biases API key' })),
    // The first of two steps: like the other multi-step inputs (quick-input.ts), it stays open when focus moves.
    // From the palette, an active webview editor (the run view) takes focus back a moment after the palette
    // closes, which would otherwise close this pick as it opens (microsoft/vscode#93950).
    { title: 'TPU: Set Secret', placeHolder: 'Which secret to store (in the OS keychain, passed to runs in a 0600 file)', ignoreFocusOut: true },
  );
  if (!picked) return;
  const value = await vscode.window.showInputBox({ title: `TPU: Set ${picked.label}`, password: true, prompt: 'Leave empty to remove it.', ignoreFocusOut: true });
  if (value === undefined) return;
  if (value === '') {
    await ctx.extContext.secrets.delete(picked.label);
    ctx.log.info(`secret ${picked.label} removed`);
  } else {
    await ctx.extContext.secrets.store(picked.label, value);
    // The name only: the value never reaches a log.
    ctx.log.info(`secret ${picked.label} stored`);
    ctx.setContext('secretStored', true);
  }
}
