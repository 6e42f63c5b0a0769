import * as path from 'node:path';
import { TpwError } from '../errors';
import type { EnvValue } from '../run/engine';
import type { ConnectionManager } from '../ssh/connection';
import { execCollect } from '../ssh/exec';
import { SocketForward } from '../ssh/port-forward';
import { bashCommand } from '../ssh/quote';
import { RUN_GROUP_SH, runDirWord } from '../ssh/run-dir';
import type { WorkerTarget } from '../ssh/types';
import { INJECTOR, LISTENER, SITECUSTOMIZE } from './worker-python';

/**
 * "Debug on TPU": the run's Python process on the chosen workers listens for the debugger on a unix socket in a
 * 0700 folder, so only the run's user can reach it (worker-python.ts says how and why not `debugpy.listen()`),
 * and the debugger reaches it through a unix socket of this machine's user forwarded over the run's own SSH
 * connection (a `direct-streamlocal` channel): no port is opened on the VM or on the workstation.
 *
 * The listener is started by a sitecustomize module in a folder of our own put first on the run's PYTHONPATH:
 * any recipe's `python3 -m ...` gets it without its command being rewritten, and the module removes its
 * variable from the environment so the processes the trainer starts do not listen too.
 */

/** The folder on each worker holding our Python modules (a shell word: expands on the worker). */
export const DEBUGPY_DIR = '"$HOME/.tpw/debugpy"';

export interface DebugPlan {
  /** Worker indexes that wait for a debugger, or 'all'. */
  workers: number[] | 'all';
}

/** What a debugged run adds to its environment (RecipeRunRequest's extraEnv and envPrepend). */
export function debugRunEnv(plan: DebugPlan): { extraEnv: Record<string, EnvValue>; envPrepend: Record<string, string> } {
  const which = plan.workers === 'all' ? 'all' : plan.workers.join(',');
  return { extraEnv: { TPW_DEBUGPY: which }, envPrepend: { PYTHONPATH: DEBUGPY_DIR } };
}

/** Writes each module with a heredoc; the texts are ours and hold no line equal to the end marker. */
function writeModules(): string {
  const files: [string, string][] = [
    ['sitecustomize.py', SITECUSTOMIZE],
    ['tpw_debugpy_listener.py', LISTENER],
    ['tpw_debugpy_inject.py', INJECTOR],
  ];
  return files.map(([name, text]) => `cat > ${DEBUGPY_DIR}/${name} <<'TPW_PY_END'\n${text}TPW_PY_END`).join('\n');
}

/**
 * On each worker: writes our modules, and makes sure `python3` (the one on the login's PATH, which the recipe
 * runs) imports a debugpy whose pydevd can listen behind a token, installing or upgrading it from the worker's
 * package index if not. Returns the workers' home folders (the absolute form of the synced workspace's path,
 * for path mappings).
 */
export async function prepareDebugpy(conns: ConnectionManager, workers: readonly WorkerTarget[], signal?: AbortSignal): Promise<string[]> {
  const usable = 'python3 -c "import debugpy.server.api, pydevd; pydevd._enable_attach" 2>/dev/null';
  const script = [
    'set -e',
    'umask 077',
    `mkdir -p ${DEBUGPY_DIR}`,
    writeModules(),
    'set +e',
    `${usable} || python3 -m pip install --quiet --disable-pip-version-check --upgrade debugpy >&2 || exit 41`,
    `${usable} || exit 42`,
    'printf "%s\\n" "$HOME"',
  ].join('\n');
  return Promise.all(
    workers.map(async (w) => {
      const r = await execCollect(await conns.get(w), bashCommand(script), { signal });
      if (r.code === 41 || r.code === 42) {
        const why = r.stderr.trim().split('\n').slice(-3).join(' ');
        throw new TpwError(
          'FAILED_PRECONDITION',
          `Worker ${w.index} cannot import debugpy (1.8 or newer) and \`python3 -m pip install --upgrade debugpy\` did not install it${why ? ` (${why})` : ''}: install debugpy into the worker's Python (e.g. from a wheel copied to the VM) and debug again.`,
        );
      }
      if (r.code !== 0) throw new TpwError('INTERNAL', `Preparing debugpy on worker ${w.index} failed (exit ${r.code}): ${r.stderr.trim()}`);
      return r.stdout.trim();
    }),
  );
}

/** A process listening for the debugger, as its run folder's `debugpy` file records it. */
export interface DebugListener {
  pid: number;
  /** The unix socket on the worker. */
  socket: string;
}

/**
 * Waits until a process of run `runId` on the worker listens for the debugger (the listener writes the run
 * folder's `debugpy` file once its socket is there). Fails when the run ends first.
 */
export async function waitForDebugpy(
  conns: ConnectionManager,
  target: WorkerTarget,
  runId: string,
  opts: { timeoutMs?: number; signal?: AbortSignal; ended?: () => boolean } = {},
): Promise<DebugListener> {
  // The recorded process must still be the one that wrote the record (its start time), not a reused pid.
  const probe = [
    RUN_GROUP_SH,
    `d=${runDirWord(runId)}`,
    `read -r p s sock < "$d/debugpy" 2>/dev/null && [ -S "$sock" ] && [ "$(proc_start "$p")" = "$s" ] && printf '%s %s\\n' "$p" "$sock"`,
  ].join('\n');
  const deadline = Date.now() + (opts.timeoutMs ?? 300_000);
  for (;;) {
    const r = await execCollect(await conns.get(target), bashCommand(probe), { signal: opts.signal });
    const [pid, socket] = r.stdout.trim().split(' ');
    if (r.code === 0 && socket) return { pid: Number(pid), socket };
    if (opts.ended?.()) throw new TpwError('FAILED_PRECONDITION', `The run ended before debugpy listened on worker ${target.index}: see its log.`);
    if (Date.now() > deadline || opts.signal?.aborted) {
      throw new TpwError(
        'UNAVAILABLE',
        `debugpy did not start on worker ${target.index}: does the recipe run Python with \`python3\`, and keep $PYTHONPATH (it must extend it, not replace it)?`,
      );
    }
    await new Promise((res) => setTimeout(res, 500));
  }
}

/** The local end of the debugger's tunnel to a listener on worker `target`: a unix socket in a 0700 folder. */
export function forwardDebugpy(conns: ConnectionManager, target: WorkerTarget, remoteSocket: string): Promise<SocketForward> {
  return SocketForward.open(conns, { target, remoteSocket });
}

/**
 * The debug type TPU Workbench contributes (package.json `contributes.debuggers`). Its adapter is the worker's
 * listener, reached at `socket` (the local end of the tunnel): see vscode/debug.ts.
 */
export const TPU_DEBUG_TYPE = 'tpu-debugpy';

/** A VS Code attach configuration of that type, as plain data (core does not import vscode). */
export interface DebugpyAttachConfiguration {
  type: typeof TPU_DEBUG_TYPE;
  request: 'attach';
  name: string;
  /** The local unix socket of the tunnel (SocketForward), which the debug adapter descriptor connects to. */
  socket: string;
  pathMappings: { localRoot: string; remoteRoot: string }[];
  justMyCode: boolean;
}

/**
 * The synced workspace (`~/.tpw/workspaces/<name>`, made absolute with the worker's home) maps to the local
 * one, so breakpoints set in the editor bind on the worker and stops open the local file.
 */
export function attachConfiguration(opts: { name: string; localSocket: string; workspaceRoot: string; remoteWorkspace: string; home: string }): DebugpyAttachConfiguration {
  const remoteRoot = opts.remoteWorkspace.replace(/^~(?=\/|$)/, opts.home);
  return {
    type: TPU_DEBUG_TYPE,
    request: 'attach',
    name: opts.name,
    socket: opts.localSocket,
    pathMappings: [{ localRoot: path.resolve(opts.workspaceRoot), remoteRoot }],
    justMyCode: false,
  };
}
