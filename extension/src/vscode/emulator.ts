import * as path from 'node:path';
import * as vscode from 'vscode';
import { startEmulatorDaemon } from '../core/emulator/daemon';
import type { Ctx } from './ctx';
import type { VmTreeProvider } from './vm-tree';

/**
 * "Start Local Emulator": starts the emulator as a detached daemon (the same `tpw emulator start`
 * the CLI runs, from the CLI bundle shipped inside the extension), so it outlives the window and
 * the CLI and the extension share one emulator.
 */
export async function startEmulator(ctx: Ctx, tree: VmTreeProvider): Promise<void> {
  const cliPath = path.join(ctx.extensionPath, 'dist', 'cli.js');
  await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: 'Starting the local TPU emulator…' }, async () => {
    // process.execPath is node in code-server and Electron (with ELECTRON_RUN_AS_NODE=1, inherited
    // from the extension host) in desktop VS Code: either way it runs the CLI bundle as a script.
    const endpoint = await startEmulatorDaemon({ command: [process.execPath, cliPath, 'emulator', 'run-foreground'] });
    ctx.log.info(`emulator running: pid ${endpoint.pid}, REST http://${endpoint.host}:${endpoint.restPort}, project ${endpoint.project}, zones ${endpoint.zones.join(', ')}`);
  });
  ctx.dropBackend();
  tree.refresh();
}
