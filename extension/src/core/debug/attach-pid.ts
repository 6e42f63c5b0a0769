import { TpwError } from '../errors';
import type { ConnectionManager } from '../ssh/connection';
import { execCollect } from '../ssh/exec';
import { bashCommand } from '../ssh/quote';
import { RUN_GROUP_SH, runDirWord } from '../ssh/run-dir';
import type { WorkerTarget } from '../ssh/types';
import { DEBUGPY_DIR } from './debugpy';

/**
 * "Attach Debugger" to a run that is already going: pydevd's own attach-to-process (gdb, as `python -m debugpy
 * --pid` uses it) injects our listener (worker-python.ts) into the trainer's running Python, which then listens
 * for its owner's debugger like a run started with "Debug on TPU"; the run is not restarted and keeps going
 * while no debugger is attached.
 *
 * The run folder's `pid` is the wrapper's process group (core/run/remote-script.ts), checked to be still the
 * run's (start time and command line, ssh/run-dir.ts) before anything is injected; the trainer is the first
 * Python process of that group whose parent is not itself Python (bash wrappers are skipped, and so are a
 * trainer's own Python children: data-loader workers, compile workers).
 *
 * gdb needs ptrace permission: plain first (root, or Yama's ptrace_scope 0), then `sudo -n` (Ubuntu's default
 * ptrace_scope=1 on TPU VMs lets a user trace only its own children). gdb is installed with
 * `sudo -n apt-get` when missing; every failure is a sentence saying what to do on the worker.
 */

/** Exit statuses of the attach script, each a failure the user can act on. */
const ATTACH_EXIT = { notRunning: 44, ended: 45, noPython: 46, noGdb: 43, noDebugpy: 42, ptrace: 47, otherDebugpy: 49, reused: 50 } as const;

export interface PidAttach {
  /** The trainer's pid on the worker. */
  pid: number;
  /** The unix socket on the worker the listener accepts the debugger on. */
  socket: string;
  /** The worker's home folder (for path mappings). */
  home: string;
  /** How gdb got ptrace permission ('plain' or 'sudo'), or 'already': the listener was there in that process. */
  via: 'plain' | 'sudo' | 'already';
}

/** The worker's shell program; prints `pid socket home via` on its last line. */
function attachScript(runId: string, worker: number, waitSeconds: number): string {
  const x = ATTACH_EXIT;
  return `
set -u
${RUN_GROUP_SH}
d=${runDirWord(runId)}
[ -r "$d/pid" ] || { echo "no run folder $d" >&2; exit ${x.notRunning}; }
[ -e "$d/exit_code" ] && { echo "exit code $(cat "$d/exit_code")" >&2; exit ${x.ended}; }
run_group; case $? in 1) echo "process $g is no longer the run's: its number was reused" >&2; exit ${x.reused};; 2) exit ${x.notRunning};; esac
kill -0 -- "-$g" 2>/dev/null || { echo "process group $g is gone" >&2; exit ${x.ended}; }
# pid ppid pgid comm of every process; the trainer: a python in the run's group whose parent is not python.
pid=$(ps -e -o pid=,ppid=,pgid=,comm= | awk -v pg="$g" '
  { comm[$1] = $4; parent[$1] = $2; group[$1] = $3 }
  END { best = ""; for (p in comm) if (group[p] == pg && comm[p] ~ /^python/ && comm[parent[p]] !~ /^python/ && (best == "" || p + 0 < best + 0)) best = p; print best }')
[ -n "$pid" ] || { ps -e -o pgid=,pid=,args= | awk -v pg="$g" '$1 == pg { $1 = ""; print }' >&2; exit ${x.noPython}; }
started=$(proc_start "$pid")
# The listener starts once per process: a second attach (after a disconnect, or to a run started with "Debug
# on TPU") finds the socket recorded in the run folder instead of injecting again.
if read -r lp lst lsock < "$d/debugpy" 2>/dev/null && [ "$lp" = "$pid" ] && [ "$lst" = "$started" ] && [ -S "$lsock" ]; then
  printf '%s %s %s %s\n' "$pid" "$lsock" "$HOME" already
  exit 0
fi
py=$(command -v python3) || exit ${x.noDebugpy}
dp=$("$py" -c 'import debugpy, os; print(os.path.dirname(os.path.dirname(debugpy.__file__)))' 2>/dev/null) || exit ${x.noDebugpy}
if ! command -v gdb >/dev/null; then
  echo "tpw: installing gdb (the debugger is injected into a running process through it)" >&2
  { sudo -n apt-get install -y -qq gdb || { sudo -n apt-get update -qq && sudo -n apt-get install -y -qq gdb; }; } >/dev/null 2>&1
  command -v gdb >/dev/null || exit ${x.noGdb}
fi
lib=${DEBUGPY_DIR}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# What the injected code prints goes to the target's stderr, the run's log: read from where the log ended before.
refused() { tail -c +$((logsize + 1)) "$d/log" | grep -q 'tpw: a debugger already runs'; }
listening() { read -r lp lst lsock < "$d/debugpy" 2>/dev/null && [ "$lp" = "$pid" ] && [ "$lst" = "$started" ] && [ -S "$lsock" ]; }
attach() {
  logsize=$(wc -c < "$d/log")
  # Checked again at the last moment: the process injected into is the one chosen, not a pid reused since.
  [ "$(proc_start "$pid")" = "$started" ] || { echo "process $pid ended" >&2; exit ${x.ended}; }
  timeout 120 "$@" "$lib/tpw_debugpy_inject.py" "$pid" "$lib" "$d" ${worker} >>"$out" 2>&1
  for _ in $(seq 1 $((${waitSeconds} * 4))); do
    listening && return 0
    refused && exit ${x.otherDebugpy}
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.25
  done
  return 1
}
if attach "$py"; then via=plain
elif [ "$(id -u)" != 0 ] && sudo -n true 2>/dev/null && attach sudo -n env PYTHONPATH="$dp" "$py"; then via=sudo
else
  echo "ptrace_scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo none) uid=$(id -u) sudo=$(sudo -n true 2>/dev/null && echo yes || echo no)" >&2
  grep -iE 'ptrace|not permitted|error|denied' "$out" | tail -4 >&2
  exit ${x.ptrace}
fi
printf '%s %s %s %s\n' "$pid" "$lsock" "$HOME" "$via"
`;
}

/**
 * Makes the running trainer of run `runId` on `worker` listen for a debugger, without restarting it.
 * The caller forwards the returned port (debugpy.ts's forwardDebugpy) and attaches as for "Debug on TPU".
 */
export async function attachDebugpyToRun(
  conns: ConnectionManager,
  worker: WorkerTarget,
  runId: string,
  opts: { waitSeconds?: number; signal?: AbortSignal } = {},
): Promise<PidAttach> {
  const script = attachScript(runId, worker.index, opts.waitSeconds ?? 30);
  const r = await execCollect(await conns.get(worker), bashCommand(script), { signal: opts.signal });
  const where = `worker ${worker.index} of run ${runId}`;
  const said = r.stderr.trim().split('\n').slice(-4).join(' ');
  const x = ATTACH_EXIT;
  switch (r.code) {
    case 0: {
      const [pid, socket, home, via] = r.stdout.trim().split('\n').pop()?.split(' ') ?? [];
      return { pid: Number(pid), socket, home, via: via === 'sudo' || via === 'already' ? via : 'plain' };
    }
    case x.notRunning:
      throw new TpwError('NOT_FOUND', `Run ${runId} did not run on worker ${worker.index}: it has no folder ~/.tpw/runs/${runId} there.`);
    case x.ended:
      throw new TpwError('FAILED_PRECONDITION', `Run ${runId} is no longer running on worker ${worker.index} (${said}): there is nothing to attach to.`);
    case x.noPython:
      throw new TpwError('NOT_FOUND', `No Python process of run ${runId} runs on worker ${worker.index} (yet?): the debugger attaches to the recipe's python; its processes: ${said || 'none'}.`);
    case x.noDebugpy:
      throw new TpwError('FAILED_PRECONDITION', `Worker ${worker.index}'s python3 cannot import debugpy: install it there (\`python3 -m pip install debugpy\`) and attach again.`);
    case x.noGdb:
      throw new TpwError('FAILED_PRECONDITION', `Worker ${worker.index} has no gdb, which debugpy needs to attach to a running process, and \`sudo -n apt-get install gdb\` did not install it: run \`sudo apt-get install -y gdb\` on the worker and attach again.`);
    case x.reused:
      throw new TpwError('FAILED_PRECONDITION', `Run ${runId} is no longer running on worker ${worker.index}: its process number now belongs to another program, which is left alone.`);
    case x.ptrace:
      throw new TpwError(
        'PERMISSION_DENIED',
        `gdb could not attach to the trainer on ${where}, neither as you nor with \`sudo -n\` (${said}): allow it on the worker with passwordless sudo, or \`echo 0 | sudo tee /proc/sys/kernel/yama/ptrace_scope\`, or start the run with "Debug on TPU" instead.`,
      );
    case x.otherDebugpy:
      throw new TpwError('FAILED_PRECONDITION', `A debugger already runs in the trainer on ${where}, started by something other than TPU Workbench: attach to it the way it was started.`);
    default:
      throw new TpwError('INTERNAL', `Attaching the debugger on ${where} failed (exit ${r.code}): ${said}`);
  }
}
