import type * as vscode from 'vscode';
import { TpwError } from '../core/errors';

/**
 * Bridges VS Code's CancellationToken to the AbortSignal that core APIs take. The listener is
 * removed once the signal fires; the token's owner (withProgress) disposes the rest.
 */
export function signalFor(token: vscode.CancellationToken): AbortSignal {
  const controller = new AbortController();
  if (token.isCancellationRequested) controller.abort();
  else {
    const sub = token.onCancellationRequested(() => {
      sub.dispose();
      controller.abort();
    });
  }
  return controller.signal;
}

export function cancelledError(): TpwError {
  return new TpwError('CANCELLED', 'Cancelled.');
}
