import * as vscode from 'vscode';
import { isTpwError } from '../core/errors';

/**
 * The one-click fixes an error notification offers, besides "Show log". Google's own errors tell users what to
 * do in prose; here the command to run is one "Copy command" away and the API to enable one "Open" away.
 */
export interface ErrorAction {
  title: string;
  run(): Thenable<unknown> | void;
}

/** The command that creates Application Default Credentials (what google-auth-library reads). */
export const ADC_LOGIN_COMMAND = 'gcloud auth application-default login';

/** The first https URL in a message (the API-activation link Google puts in SERVICE_DISABLED errors). */
export function firstUrl(message: string): string | undefined {
  return /https:\/\/[^\s"'<>)]+/.exec(message)?.[0]?.replace(/[.,;:]+$/, '');
}

/**
 * Codes are compared as strings so that this file does not depend on the exact TpwErrorCode union: an older
 * core without UNAUTHENTICATED simply never produces it.
 */
function codeOf(e: unknown): string | undefined {
  return isTpwError(e) ? String(e.code) : undefined;
}

export function actionsFor(e: unknown): ErrorAction[] {
  const code = codeOf(e);
  const message = e instanceof Error ? e.message : String(e);
  if (code === 'EMULATOR_NOT_RUNNING') {
    return [{ title: 'Start Local Emulator', run: () => vscode.commands.executeCommand('tpuWorkbench.startEmulator') }];
  }
  if (code === 'UNAUTHENTICATED') {
    return [
      {
        title: 'Copy command',
        run: async () => {
          await vscode.env.clipboard.writeText(ADC_LOGIN_COMMAND);
          void vscode.window.showInformationMessage(`Copied \`${ADC_LOGIN_COMMAND}\`: run it in a terminal, then refresh the TPU view.`);
        },
      },
    ];
  }
  if (code === 'API_DISABLED' || code === 'PERMISSION_DENIED') {
    const url = firstUrl(message);
    if (url) return [{ title: 'Open', run: () => vscode.env.openExternal(vscode.Uri.parse(url)) }];
  }
  if (code === 'INVALID_ARGUMENT' && /tpuWorkbench\.(project|zones)/.test(message)) {
    return [{ title: 'Open Settings', run: () => vscode.commands.executeCommand('workbench.action.openSettings', 'tpuWorkbench') }];
  }
  return [];
}
