import * as vscode from 'vscode';
import type { Ctx } from './ctx';
import { startEmulator } from './emulator';
import type { RunManager } from './run';
import { downloadLogs, resumeRun, runAgain, showRun, stopRun } from './runActions';
import type { RunsTreeProvider } from './runsView';
import { setSecret } from './secrets';
import { createVm, deleteVm, nodeFromArg, pickNode } from './vmCommands';
import { addMyKey } from './hostKeys';
import type { LanguageService } from './languageClient';
import { askOverrides } from './overridesPick';
import type { VmTreeProvider } from './vmTree';

/** What command handlers need besides the context. */
export interface Services {
  ctx: Ctx;
  tree: VmTreeProvider;
  runs: RunManager;
  runsTree: RunsTreeProvider;
  language: LanguageService;
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
  'tpuWorkbench.runOnTpuWithOverrides': {
    title: 'Run on TPU with Overrides',
    handler: async ({ runs, language }, arg) => {
      const overrides = await askOverrides(language);
      if (overrides) await runs.run(arg, undefined, false, overrides);
    },
  },
  'tpuWorkbench.createVm': { title: 'Create TPU VM', handler: ({ ctx, tree }) => createVm(ctx, tree) },
  'tpuWorkbench.deleteVm': { title: 'Delete TPU VM', handler: ({ ctx, tree }, arg) => deleteVm(ctx, tree, arg) },
  'tpuWorkbench.refresh': { title: 'Refresh', handler: ({ tree }) => tree.refresh() },
  'tpuWorkbench.startEmulator': { title: 'Start Local Emulator', handler: ({ ctx, tree }) => startEmulator(ctx, tree) },
  'tpuWorkbench.showLog': { title: 'Show Log', handler: ({ ctx }) => ctx.log.show() },
  'tpuWorkbench.showRunOutput': { title: 'Show Run Output', handler: ({ runs }) => runs.showOutput() },
  'tpuWorkbench.showRun': { title: 'Show Run Log', handler: ({ runs }, arg) => showRun(runs, arg) },
  'tpuWorkbench.stopRun': { title: 'Stop Run', handler: ({ ctx, runs }, arg) => stopRun(ctx, runs, arg) },
  'tpuWorkbench.runAgain': { title: 'Run Again', handler: ({ ctx, runs }, arg) => runAgain(ctx, runs, arg) },
  'tpuWorkbench.downloadLogs': { title: 'Download Logs', handler: ({ ctx }, arg) => downloadLogs(ctx, arg) },
  'tpuWorkbench.resumeRun': { title: 'Recreate and Resume', handler: ({ ctx, runs }, arg) => resumeRun(ctx, runs, arg) },
  'tpuWorkbench.addMyKey': {
    title: 'Add My Key to This VM',
    handler: async ({ ctx }, arg) => {
      const node = nodeFromArg(arg) ?? (await pickNode(await ctx.backend(), 'Add My Key to This VM', (n) => n.state === 'READY', 'There is no READY TPU VM.'));
      if (node) await addMyKey(ctx, node);
    },
  },
  'tpuWorkbench.setSecret': { title: 'Set Secret', handler: ({ ctx }) => setSecret(ctx) },
  'tpuWorkbench.refreshRuns': { title: 'Refresh Runs', handler: ({ runsTree }) => runsTree.refresh() },
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
