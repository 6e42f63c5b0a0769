import * as path from 'node:path';
import * as vscode from 'vscode';
import { attachDebugpyToRun } from '../core/debug/attach-pid';
import { attachConfiguration, debugPort, debugRunEnv, forwardDebugpy, prepareDebugpy, TPU_DEBUG_TYPE, waitForDebugpy, type DebugPlan } from '../core/debug/debugpy';
import { describeError, TpwError } from '../core/errors';
import { isActive, listRuns, loadRun, remoteWorkspaceDir, workersOfRecord, type RunRecord } from '../core/run/engine';
import type { ConnectionManager } from '../core/ssh/connection';
import type { WorkerTarget } from '../core/ssh/types';
import { shortName, type TpuNode } from '../core/tpu/models';
import type { Ctx } from './ctx';
import type { RunManager } from './run';
import { RunItem } from './runs-tree';

/**
 * "Debug on TPU" and "Attach Debugger": a VS Code debug session on a worker's Python, through a forwarded
 * port on the run's SSH connection, with the synced workspace mapped to the local folder.
 *
 * The session's type is our own `tpu-debugpy`, not the Python Debugger extension's `debugpy`: debugpy's
 * listening socket (debugpy.listen() on the worker) is itself a Debug Adapter Protocol server, its adapter, so
 * VS Code talks to it directly as a DebugAdapterServer — which is all ms-python.debugpy does for an
 * attach-by-connect configuration. Using ours always means one path to test, no dependency on another
 * extension being installed (or allowed: code-server and some editors cannot install it), and the same
 * attach arguments (pathMappings, justMyCode) reaching the same adapter.
 */

/** Registers the adapter of the `tpu-debugpy` type: the local end of a tunnel to a worker's debugpy. */
export function registerTpuDebugAdapter(ctx: Ctx): void {
  ctx.own(
    vscode.debug.registerDebugAdapterDescriptorFactory(TPU_DEBUG_TYPE, {
      createDebugAdapterDescriptor(session) {
        const connect = (session.configuration as { connect?: { host?: unknown; port?: unknown } }).connect;
        const port = Number(connect?.port);
        if (!Number.isInteger(port) || port <= 0 || port > 65535) {
          throw new TpwError('INVALID_ARGUMENT', `Debug configuration "${session.name}" needs "connect": { "port": N } naming the local port of a debugpy tunnel (use "Debug on TPU" or "Attach Debugger" to make one).`);
        }
        const host = typeof connect?.host === 'string' ? connect.host : '127.0.0.1';
        return new vscode.DebugAdapterServer(port, host);
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
  opts: { w: WorkerTarget; port: number; name: string; folder: vscode.WorkspaceFolder | undefined; localRoot: string; home: string; stopped?: AbortSignal },
): Promise<void> {
  const forward = await forwardDebugpy(conns, opts.w, opts.port);
  const config = attachConfiguration({ name: opts.name, localPort: forward.localPort, workspaceRoot: opts.localRoot, remoteWorkspace: remoteWorkspaceDir(opts.localRoot), home: opts.home });
  const ended = ctx.own(
    vscode.debug.onDidTerminateDebugSession((s) => {
      if (s.type === TPU_DEBUG_TYPE && (s.configuration as { connect?: { port?: number } }).connect?.port === forward.localPort) {
        ended.dispose();
        void forward.close();
      }
    }),
  );
  opts.stopped?.addEventListener('abort', () => void forward.close(), { once: true });
  ctx.log.info(`debug: ${config.name} on localhost:${forward.localPort} (remote root ${config.pathMappings[0].remoteRoot})`);
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
  const attach = (stopped: AbortSignal): void => {
    chosen.forEach((w, i) => {
      void (async () => {
        const port = debugPort(plan, w.index);
        await waitForDebugpy(conns, w, port, { signal: stopped, ended: () => stopped.aborted });
        await startSession(ctx, conns, { w, port, name: `Debug on TPU: ${vm} w${w.index}`, folder, localRoot: folder.uri.fsPath, home: homes[i], stopped });
      })().catch((e: unknown) => ctx.showError('Debug on TPU failed', e instanceof Error ? e : new Error(describeError(e))));
    });
  };
  await runs.run(recipeArg, node, false, [], { ...debugRunEnv(plan), onStarted: (_runId, stopped) => attach(stopped) });
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
  ctx.log.info(`debug: debugpy attached to pid ${attached.pid} on ${label} (port ${attached.port}, ${attached.via === 'sudo' ? 'with sudo' : 'as the login user'})`);
  const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'file' && path.resolve(f.uri.fsPath) === path.resolve(rec.workspaceRoot));
  await startSession(ctx, conns, { w, port: attached.port, name: `Attach: ${label}`, folder, localRoot: rec.workspaceRoot, home: attached.home });
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
