import * as path from 'node:path';
import * as vscode from 'vscode';
import { attachDebugpyToRun } from '../core/debug/attach-pid';
import { attachConfiguration, debugRunEnv, forwardDebugpy, prepareDebugpy, TPU_DEBUG_TYPE, waitForDebugpy, type DebugPlan } from '../core/debug/debugpy';
import { describeError, TpwError } from '../core/errors';
import { isActive, listRuns, loadRun, remoteWorkspaceDir, workersOfRecord, type RunRecord } from '../core/run/engine';
import type { ConnectionManager } from '../core/ssh/connection';
import type { WorkerTarget } from '../core/ssh/types';
import { shortName, type TpuNode } from '../core/tpu/models';
import type { Ctx } from './ctx';
import type { RunManager } from './run';
import { RunItem } from './runs-tree';

/**
 * "Debug on TPU" and "Attach Debugger": a VS Code debug session on a worker's Python, through a unix socket
 * forwarded over the run's SSH connection (core/debug/debugpy.ts), with the synced workspace mapped to the
 * local folder. Neither end is a TCP port: only this user reaches the debugger, on the workstation and on the VM.
 *
 * The session's type is our own `tpu-debugpy`, not the Python Debugger extension's `debugpy`: the worker's
 * listener (pydevd, debugpy's debugger, core/debug/worker-python.ts) is itself a Debug Adapter Protocol
 * server, so VS Code talks to it directly as a DebugAdapterNamedPipeServer (a unix socket). Using ours always
 * means one path to test, no dependency on another extension being installed (or allowed: code-server and some
 * editors cannot install it), and the same attach arguments (pathMappings, justMyCode) reaching the same adapter.
 */

/** Registers the adapter of the `tpu-debugpy` type: the local end of a tunnel to a worker's debugpy. */
export function registerTpuDebugAdapter(ctx: Ctx): void {
  ctx.own(
    vscode.debug.registerDebugAdapterDescriptorFactory(TPU_DEBUG_TYPE, {
      createDebugAdapterDescriptor(session) {
        const socket = (session.configuration as { socket?: unknown }).socket;
        if (typeof socket !== 'string' || !path.isAbsolute(socket)) {
          throw new TpwError('INVALID_ARGUMENT', `Debug configuration "${session.name}" needs "socket": the local end of a tunnel to a worker's debugger (use "Debug on TPU" or "Attach Debugger" to make one).`);
        }
        return new vscode.DebugAdapterNamedPipeServer(socket);
      },
    }),
  );
}

/**
 * Forwards worker `w`'s debugpy port and starts a session on it; the tunnel closes when the session ends or
 * `stopped` aborts (the run ended).
 */
async function startSession(
  ctx: Ctx,
  conns: ConnectionManager,
  opts: { w: WorkerTarget; socket: string; name: string; folder: vscode.WorkspaceFolder | undefined; localRoot: string; home: string; stopped?: AbortSignal },
): Promise<void> {
  const forward = await forwardDebugpy(conns, opts.w, opts.socket);
  const config = attachConfiguration({ name: opts.name, localSocket: forward.localSocket, workspaceRoot: opts.localRoot, remoteWorkspace: remoteWorkspaceDir(opts.localRoot), home: opts.home });
  const ended = ctx.own(
    vscode.debug.onDidTerminateDebugSession((s) => {
      if (s.type === TPU_DEBUG_TYPE && (s.configuration as { socket?: string }).socket === forward.localSocket) {
        ended.dispose();
        void forward.close();
      }
    }),
  );
  opts.stopped?.addEventListener('abort', () => void forward.close(), { once: true });
  ctx.log.info(`debug: ${config.name} through ${forward.localSocket} (remote root ${config.pathMappings[0].remoteRoot})`);
  const started = await vscode.debug.startDebugging(opts.folder, { ...config });
  if (!started) {
    ended.dispose();
    await forward.close();
    throw new TpwError('INTERNAL', `VS Code did not start the debug session "${config.name}": see the Debug Console.`);
  }
}

/** Runs the recipe with debugpy waiting on the chosen workers (worker 0 by default), one session each. */
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
  const attach = (runId: string, stopped: AbortSignal): void => {
    chosen.forEach((w, i) => {
      void (async () => {
        const listener = await waitForDebugpy(conns, w, runId, { signal: stopped, ended: () => stopped.aborted });
        await startSession(ctx, conns, { w, socket: listener.socket, name: `Debug on TPU: ${vm} w${w.index}`, folder, localRoot: folder.uri.fsPath, home: homes[i], stopped });
      })().catch((e: unknown) => ctx.showError('Debug on TPU failed', e instanceof Error ? e : new Error(describeError(e))));
    });
  };
  await runs.run(recipeArg, node, false, [], { ...debugRunEnv(plan), onStarted: (runId, stopped) => attach(runId, stopped) });
}

/**
 * "Attach Debugger": a run that is already going (from the Runs view, or picked among the active runs), one of
 * its workers, and debugpy injected into that worker's trainer process (core/debug/attach-pid.ts); the run
 * is not restarted.
 */
export async function attachDebugger(ctx: Ctx, arg: unknown): Promise<void> {
  const rec = arg instanceof RunItem ? loadRun(arg.record.runId) : await pickActiveRun();
  if (!rec) return;
  if (!isActive(rec.status)) throw new TpwError('FAILED_PRECONDITION', `Run ${rec.runId} (${path.basename(rec.recipe)} on ${rec.vm}) is ${rec.status}: the debugger attaches to a running run.`);
  const index = await pickWorker(rec);
  if (index === undefined) return;
  const backend = await ctx.backend();
  const w = (await workersOfRecord(backend, rec)).find((x) => x.index === index);
  if (!w) throw new TpwError('NOT_FOUND', `Run ${rec.runId} has no worker ${index}.`);
  const conns = ctx.connections(backend);
  const label = `${path.basename(rec.recipe)} on ${rec.vm} w${index}`;
  const attached = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Attach Debugger: attaching to ${label}…` }, async () => {
    await prepareDebugpy(conns, [w]);
    return attachDebugpyToRun(conns, w, rec.runId);
  });
  ctx.log.info(`debug: debugger in pid ${attached.pid} on ${label} (${attached.socket}, ${attached.via === 'sudo' ? 'with sudo' : attached.via === 'already' ? 'already there' : 'as the login user'})`);
  const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'file' && path.resolve(f.uri.fsPath) === path.resolve(rec.workspaceRoot));
  await startSession(ctx, conns, { w, socket: attached.socket, name: `Attach: ${label}`, folder, localRoot: rec.workspaceRoot, home: attached.home });
}

async function pickActiveRun(): Promise<RunRecord | undefined> {
  const active = listRuns().filter((r) => isActive(r.status));
  if (active.length === 0) throw new TpwError('FAILED_PRECONDITION', 'No run is going: start one with "Run on TPU", then attach the debugger to it.');
  const picked = await vscode.window.showQuickPick(
    active.map((r) => ({ label: `${path.basename(r.recipe)} on ${r.vm}`, description: `${r.status} · started ${new Date(r.startedAt).toLocaleString()}`, r })),
    { title: 'Attach Debugger: which run', ignoreFocusOut: true },
  );
  return picked?.r;
}

async function pickWorker(rec: RunRecord): Promise<number | undefined> {
  if (rec.workers.length <= 1) return rec.workers[0]?.index ?? 0;
  const picked = await vscode.window.showQuickPick(
    rec.workers.map((w) => ({ label: `Worker ${w.index}`, description: w.index === 0 ? 'default' : undefined, index: w.index })),
    { title: `Attach Debugger: which worker of ${rec.vm}`, ignoreFocusOut: true },
  );
  return picked?.index;
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
