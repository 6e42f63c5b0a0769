import * as path from 'node:path';
import * as vscode from 'vscode';
import { TpwError } from '../core/errors';
import { readEmulatorEndpoint, runEmulatorCommand } from '../core/local-emulator';
import type { Ctx } from './ctx';
import type { VmTreeProvider } from './vm-tree';

/** How long the progress waits for the TPU VMs view's first listing after the emulator started. */
const LIST_TIMEOUT_MS = 90_000;

/**
 * "Start Local Emulator": runs the emulator's own `start` (dist/emulator.js, shipped inside the extension), which
 * leaves it running as a detached daemon, so it outlives the window and the CLI and the extension share one
 * emulator. The progress lasts until the TPU VMs view has listed it (the walkthrough's first step ticks then), so
 * there is no silent gap between "starting" and a usable view.
 */
export async function startEmulator(ctx: Ctx, tree: VmTreeProvider): Promise<void> {
  const main = path.join(ctx.extensionPath, 'dist', 'emulator.js');
  const endpoint = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: 'Local TPU emulator' }, async (progress) => {
    progress.report({ message: 'starting…' });
    let stderr = '';
    // process.execPath is node in code-server and Electron (with ELECTRON_RUN_AS_NODE=1, inherited from the
    // extension host) in desktop VS Code: either way it runs the bundle as a script.
    const code = await runEmulatorCommand(['start'], { main, out: (t) => ctx.log.info(t.trimEnd()), err: (t) => (stderr += t) });
    if (code !== 0) throw new TpwError('UNAVAILABLE', stderr.trim() || `The local emulator did not start (exit code ${code}).`);
    const ep = readEmulatorEndpoint();
    if (!ep) throw new TpwError('UNAVAILABLE', 'The local emulator said it started, but it left no endpoint file: see "TPU: Show Log".');
    ctx.log.info(`emulator running: pid ${ep.pid}, REST http://${ep.host}:${ep.restPort}, project ${ep.project}, zones ${ep.zones.join(', ')}`);
    progress.report({ message: `running (project ${ep.project}); listing its TPU VMs…` });
    ctx.dropBackend();
    await vscode.commands.executeCommand('tpuWorkbench.vms.focus');
    const listed = tree.listNow();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new TpwError('UNAVAILABLE', `The emulator started (pid ${ep.pid}) but the TPU VMs view did not list it within ${LIST_TIMEOUT_MS / 1000} s: see "TPU: Show Log".`)), LIST_TIMEOUT_MS);
    });
    try {
      const state = await Promise.race([listed, timeout]);
      if (state !== 'ready') throw new TpwError('UNAVAILABLE', `The emulator started (pid ${ep.pid}) but listing its TPU VMs failed: see "TPU: Show Log".`);
    } finally {
      clearTimeout(timer);
    }
    return ep;
  });
  vscode.window.setStatusBarMessage(`$(pass) TPU: local emulator running (project ${endpoint.project}, ${endpoint.zones.length} zones)`, 10_000);
}
