import * as vscode from 'vscode';
import type { Ctx } from './ctx';
import { startEmulator } from './emulator';
import type { RunManager } from './run';
import { createVm, deleteVm } from './vmCommands';
import type { VmTreeProvider } from './vmTree';

/** What command handlers need besides the context. */
export interface Services {
  ctx: Ctx;
  tree: VmTreeProvider;
  runs: RunManager;
}

type Handler = (s: Services, arg: unknown) => Promise<void> | void;

interface CommandSpec {
  /** Used in error messages: "<title> failed: …". */
  title: string;
  handler: Handler;
}

/** Every command of the extension; ids match `contributes.commands` in package.json. */
const COMMANDS: Record<string, CommandSpec> = {
  'tpuWorkbench.runOnTpu': { title: 'Run on TPU', handler: ({ runs }, arg) => runs.run(arg) },
  'tpuWorkbench.createVm': { title: 'Create TPU VM', handler: ({ ctx, tree }) => createVm(ctx, tree) },
  'tpuWorkbench.deleteVm': { title: 'Delete TPU VM', handler: ({ ctx, tree }, arg) => deleteVm(ctx, tree, arg) },
  'tpuWorkbench.refresh': { title: 'Refresh', handler: ({ tree }) => tree.refresh() },
  'tpuWorkbench.startEmulator': { title: 'Start Local Emulator', handler: ({ ctx, tree }) => startEmulator(ctx, tree) },
  'tpuWorkbench.showLog': { title: 'Show Log', handler: ({ ctx }) => ctx.log.show() },
  'tpuWorkbench.showRunOutput': { title: 'Show Run Output', handler: ({ runs }) => runs.showOutput() },
};

/**
 * Registers the table. Each handler is wrapped so that a thrown error becomes one notification
 * with "Show log" instead of VS Code's generic "command resulted in an error".
 */
export function registerCommands(s: Services): void {
  for (const [id, spec] of Object.entries(COMMANDS)) {
    s.ctx.own(
      vscode.commands.registerCommand(id, async (arg: unknown) => {
        try {
          await spec.handler(s, arg);
        } catch (e) {
          s.ctx.showError(`${spec.title} failed`, e);
        }
      }),
    );
  }
}
