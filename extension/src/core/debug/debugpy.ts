import * as path from 'node:path';
import { TpwError } from '../errors';
import type { EnvValue } from '../run/engine';
import type { ConnectionManager } from '../ssh/connection';
import { execCollect } from '../ssh/exec';
import { PortForward } from '../ssh/port-forward';
import { bashCommand } from '../ssh/quote';
import type { WorkerTarget } from '../ssh/types';

/**
 * "Debug on TPU": the run's Python process on the chosen workers starts debugpy, listening on the worker's
 * loopback only, and waits for the debugger; the debugger reaches it through a PortForward over the run's
 * own SSH connection, so no port is opened on the VM.
 *
 * debugpy is started by a sitecustomize module in a folder of our own put first on the run's PYTHONPATH:
 * any recipe's `python3 -m ...` gets it without its command being rewritten, and the module removes its
 * variable from the environment so the processes the trainer starts do not try to listen on the same port.
 */

/** The folder on each worker holding our sitecustomize.py (a shell word: expands on the worker). */
export const DEBUGPY_DIR = '"$HOME/.tpw/debugpy"';

/** The first worker's port; worker N listens on BASE + N (an emulator's workers share one loopback). */
export const DEBUGPY_BASE_PORT = 5678;

// Written to the worker; reads TPW_DEBUGPY = "<base port>;<worker ids or all>".
const SITECUSTOMIZE = `# Written by TPU Workbench ("Debug on TPU"); only acts when TPW_DEBUGPY is set.
import os


def _tpw_debugpy() -> None:
    spec = os.environ.pop("TPW_DEBUGPY", None)
    if not spec:
        return
    base, workers = spec.split(";", 1)
    me = os.environ.get("TPU_WORKER_ID", "0")
    if workers != "all" and me not in workers.split(","):
        return
    # The recipe's own files are never frozen modules: pydevd's warning about the standard library's would
    # only add four lines to every debugged run's log.
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    import debugpy

    port = int(base) + int(me)
    debugpy.listen(("127.0.0.1", port))
    # "Attach Debugger" finds this process's port here (a process listens once), core/debug/attach-pid.ts.
    run_dir = os.environ.get("TPW_RUN_DIR")
    if run_dir:
        with open(os.path.join(run_dir, "debugpy"), "w") as f:
            f.write(f"{os.getpid()} {port}\\n")
    print(f"tpw: debugpy listening on 127.0.0.1:{port} (worker {me}); waiting for the debugger", flush=True)
    debugpy.wait_for_client()


_tpw_debugpy()
`;

export interface DebugPlan {
  /** Worker indexes that wait for a debugger, or 'all'. */
  workers: number[] | 'all';
  basePort?: number;
}

export function debugPort(plan: DebugPlan, worker: number): number {
  return (plan.basePort ?? DEBUGPY_BASE_PORT) + worker;
}

/** What a debugged run adds to its environment (RecipeRunRequest's extraEnv and envPrepend). */
export function debugRunEnv(plan: DebugPlan): { extraEnv: Record<string, EnvValue>; envPrepend: Record<string, string> } {
  const which = plan.workers === 'all' ? 'all' : plan.workers.join(',');
  return { extraEnv: { TPW_DEBUGPY: `${plan.basePort ?? DEBUGPY_BASE_PORT};${which}` }, envPrepend: { PYTHONPATH: DEBUGPY_DIR } };
}

/**
 * On each worker: writes the sitecustomize, and makes sure `python3` (the one on the login's PATH, which the
 * recipe runs) imports debugpy, installing it from the worker's package index if it does not. Returns the
 * workers' home folders (the absolute form of the synced workspace's path, for path mappings).
 */
export async function prepareDebugpy(conns: ConnectionManager, workers: readonly WorkerTarget[], signal?: AbortSignal): Promise<string[]> {
  const script = [
    `mkdir -p ${DEBUGPY_DIR} && cat > ${DEBUGPY_DIR}/sitecustomize.py`,
    'python3 -c "import debugpy" 2>/dev/null || python3 -m pip install --quiet --disable-pip-version-check debugpy >&2 || exit 41',
    'python3 -c "import debugpy" || exit 42',
    'printf "%s\\n" "$HOME"',
  ].join(' && ');
  return Promise.all(
    workers.map(async (w) => {
      const r = await execCollect(await conns.get(w), bashCommand(script), { stdin: SITECUSTOMIZE, signal });
      if (r.code === 41 || r.code === 42) {
        const why = r.stderr.trim().split('\n').slice(-3).join(' ');
        throw new TpwError(
          'FAILED_PRECONDITION',
          `Worker ${w.index} cannot import debugpy and \`python3 -m pip install debugpy\` did not install it${why ? ` (${why})` : ''}: install debugpy into the worker's Python (e.g. from a wheel copied to the VM) and debug again.`,
        );
      }
      if (r.code !== 0) throw new TpwError('INTERNAL', `Preparing debugpy on worker ${w.index} failed (exit ${r.code}): ${r.stderr.trim()}`);
      return r.stdout.trim();
    }),
  );
}

/**
 * Waits until debugpy listens on `port` of the worker, looking at the worker's table of listening sockets
 * (never connecting: a connection would be taken for the debugger's). Fails when the run ends first.
 */
export async function waitForDebugpy(
  conns: ConnectionManager,
  target: WorkerTarget,
  port: number,
  opts: { timeoutMs?: number; signal?: AbortSignal; ended?: () => boolean } = {},
): Promise<void> {
  const hex = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  const deadline = Date.now() + (opts.timeoutMs ?? 300_000);
  for (;;) {
    const r = await execCollect(await conns.get(target), bashCommand(`awk '$2 == "${hex}" && $4 == "0A" { found = 1 } END { exit !found }' /proc/net/tcp`), { signal: opts.signal });
    if (r.code === 0) return;
    if (opts.ended?.()) throw new TpwError('FAILED_PRECONDITION', `The run ended before debugpy listened on worker ${target.index}: see its log.`);
    if (Date.now() > deadline || opts.signal?.aborted) {
      throw new TpwError(
        'UNAVAILABLE',
        `debugpy did not listen on port ${port} of worker ${target.index}: does the recipe run Python with \`python3\`, and keep $PYTHONPATH (it must extend it, not replace it)?`,
      );
    }
    await new Promise((res) => setTimeout(res, 500));
  }
}

/** The local end of the debugger's tunnel to worker `target`'s debugpy. */
export function forwardDebugpy(conns: ConnectionManager, target: WorkerTarget, port: number): Promise<PortForward> {
  return PortForward.open(conns, { target, remotePort: port, remoteHost: '127.0.0.1' });
}

/**
 * The debug type TPU Workbench contributes (package.json `contributes.debuggers`). Its adapter is debugpy's own
 * listening socket, reached at `connect` (the local end of the tunnel): see vscode/debug.ts.
 */
export const TPU_DEBUG_TYPE = 'tpu-debugpy';

/** A VS Code attach configuration of that type, as plain data (core does not import vscode). */
export interface DebugpyAttachConfiguration {
  type: typeof TPU_DEBUG_TYPE;
  request: 'attach';
  name: string;
  connect: { host: string; port: number };
  pathMappings: { localRoot: string; remoteRoot: string }[];
  justMyCode: boolean;
}

/**
 * The synced workspace (`~/.tpw/workspaces/<name>`, made absolute with the worker's home) maps to the local
 * one, so breakpoints set in the editor bind on the worker and stops open the local file.
 */
export function attachConfiguration(opts: { name: string; localPort: number; workspaceRoot: string; remoteWorkspace: string; home: string }): DebugpyAttachConfiguration {
  const remoteRoot = opts.remoteWorkspace.replace(/^~(?=\/|$)/, opts.home);
  return {
    type: TPU_DEBUG_TYPE,
    request: 'attach',
    name: opts.name,
    connect: { host: '127.0.0.1', port: opts.localPort },
    pathMappings: [{ localRoot: path.resolve(opts.workspaceRoot), remoteRoot }],
    justMyCode: false,
  };
}
