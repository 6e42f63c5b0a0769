import * as vscode from 'vscode';
import { attachConfiguration, debugPort, debugRunEnv, forwardDebugpy, prepareDebugpy, waitForDebugpy, type DebugPlan } from '../core/debug/debugpy';
import { describeError, TpwError } from '../core/errors';
import { remoteWorkspaceDir } from '../core/run/engine';
import { shortName, type TpuNode } from '../core/tpu/models';
import type { Ctx } from './ctx';
import type { RunManager } from './run';

/**
 * "Debug on TPU": runs the recipe with debugpy waiting on the chosen workers (worker 0 by default), then
 * starts one `debugpy` attach session per worker, through a forwarded port on the run's SSH connection,
 * with the synced workspace mapped to the local folder. The debug type is the Python Debugger extension's
 * (ms-python.debugpy); without it VS Code cannot start the session and the message gives the local port
 * any DAP client can attach to.
 */
export async function debugOnTpu(ctx: Ctx, runs: RunManager, recipeArg: unknown, node: TpuNode): Promise<void> {
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (!folder || folder.uri.scheme !== 'file') throw new TpwError('FAILED_PRECONDITION', 'Open a local workspace folder to debug on TPU: its contents are synced to every worker.');
  const plan = await pickWorkers(node);
  if (!plan) return;
  const backend = await ctx.backend();
  const workers = await backend.workersOf(node);
  const chosen = plan.workers === 'all' ? workers : workers.filter((w) => (plan.workers as number[]).includes(w.index));
  const conns = ctx.connections(backend);
  const homes = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: 'Debug on TPU: preparing debugpy on the workers…' }, () => prepareDebugpy(conns, chosen));
  const vm = shortName(node.name);
  const attach = (stopped: AbortSignal): void => {
    chosen.forEach((w, i) => {
      void (async () => {
        const port = debugPort(plan, w.index);
        await waitForDebugpy(conns, w, port, { signal: stopped, ended: () => stopped.aborted });
        const forward = await forwardDebugpy(conns, w, port);
        const config = attachConfiguration({ name: `Debug on TPU: ${vm} w${w.index}`, localPort: forward.localPort, workspaceRoot: folder.uri.fsPath, remoteWorkspace: remoteWorkspaceDir(folder.uri.fsPath), home: homes[i] });
        const ended = vscode.debug.onDidTerminateDebugSession((s) => {
          if (s.configuration.name === config.name) {
            ended.dispose();
            void forward.close();
          }
        });
        stopped.addEventListener('abort', () => void forward.close(), { once: true });
        ctx.log.info(`debug: ${config.name} on localhost:${forward.localPort} (remote root ${config.pathMappings[0].remoteRoot})`);
        const started = await vscode.debug.startDebugging(folder, { ...config });
        if (!started) {
          void vscode.window.showWarningMessage(
            `Debug on TPU: VS Code could not start a "debugpy" session (is the Python Debugger extension installed?). debugpy on ${vm} worker ${w.index} waits at localhost:${forward.localPort}.`,
          );
        }
      })().catch((e: unknown) => ctx.showError('Debug on TPU failed', e instanceof Error ? e : new Error(describeError(e))));
    });
  };
  await runs.run(recipeArg, node, false, [], { ...debugRunEnv(plan), onStarted: (_runId, stopped) => attach(stopped) });
}

/** Worker 0 by default; on a pod, any one worker or all of them. */
async function pickWorkers(node: TpuNode): Promise<DebugPlan | undefined> {
  const n = node.networkEndpoints.length;
  if (n <= 1) return { workers: [0] };
  const items: (vscode.QuickPickItem & { plan: DebugPlan })[] = [
    ...Array.from({ length: n }, (_, i) => ({ label: `Worker ${i}`, description: i === 0 ? 'default' : undefined, plan: { workers: [i] } as DebugPlan })),
    { label: 'All workers', description: `${n} debug sessions`, plan: { workers: 'all' } },
  ];
  const picked = await vscode.window.showQuickPick(items, { title: `Debug on TPU: which worker of ${shortName(node.name)} waits for the debugger` });
  return picked?.plan;
}
