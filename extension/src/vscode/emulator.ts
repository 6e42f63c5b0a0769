import * as path from 'node:path';
import * as vscode from 'vscode';
import { TpwError } from '../core/errors';
import { readEmulatorEndpoint, runEmulatorCommand } from '../core/local-emulator';
import type { Ctx } from './ctx';
import type { VmTreeProvider } from './vm-tree';

/**
 * "Start Local Emulator": runs the emulator's own `start` (dist/emulator.js, shipped inside the extension), which
 * leaves it running as a detached daemon, so it outlives the window and the CLI and the extension share one
 * emulator.
 */
export async function startEmulator(ctx: Ctx, tree: VmTreeProvider): Promise<void> {
  const main = path.join(ctx.extensionPath, 'dist', 'emulator.js');
  await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: 'Starting the local TPU emulator…' }, async () => {
    let stderr = '';
    // process.execPath is node in code-server and Electron (with ELECTRON_RUN_AS_NODE=1, inherited from the
    // extension host) in desktop VS Code: either way it runs the bundle as a script.
    const code = await runEmulatorCommand(['start'], { main, out: (t) => ctx.log.info(t.trimEnd()), err: (t) => (stderr += t) });
    if (code !== 0) throw new TpwError('UNAVAILABLE', stderr.trim() || `The local emulator did not start (exit code ${code}).`);
    const endpoint = readEmulatorEndpoint();
    if (endpoint) ctx.log.info(`emulator running: pid ${endpoint.pid}, REST http://${endpoint.host}:${endpoint.restPort}, project ${endpoint.project}, zones ${endpoint.zones.join(', ')}`);
  });
  ctx.dropBackend();
  tree.refresh();
}
