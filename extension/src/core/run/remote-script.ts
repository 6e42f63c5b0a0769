import { TpwError } from '../errors';
import { isEnvName, shJoin, shPath, shQuote } from '../ssh/quote';
import { RECORD_RUN_GROUP_SH, RUN_GROUP_SH, runDirWord } from '../ssh/run-dir';
import type { EnvValue } from './types';

/**
 * The shell programs a run sends to each worker. Everything user-supplied is quoted (ssh/quote.ts); secrets
 * travel only on stdin into a 0600 file. Layout on the worker, one folder per run (ssh/run-dir.ts):
 *
 *   <runsRoot>/<runId>/      (runsRoot defaults to ~/.tpw/runs)
 *     env        0600  `export K='v'` lines, read from stdin, sourced by the wrapper and removed at once
 *     pid        the wrapper's pid = the process group id of everything the run started, with its start time and
 *                a checksum of its command line (checked before any signal: ssh/run-dir.ts RUN_GROUP_SH)
 *     log        stdout and stderr of the program, interleaved as written (appended, never truncated later)
 *     exit_code  written by the wrapper when the program ends (absent while running, or if SIGKILLed)
 *     starter    pid of the start script itself (so a stop can tell a run that failed to start from a slow one)
 *     debugpy    `<pid> <start time> <socket>` of the process whose debugger listens on a unix socket only its
 *                owner can open ("Debug on TPU", "Attach Debugger"; core/debug/), so a second attach reuses it
 *
 * The start script returns as soon as the program runs in a process group of its own, with its output going
 * only to `log` (never back over the SSH channel): a run costs one short exec per worker to start and nothing
 * ties it to the client — the laptop may sleep, VS Code may close, the network may drop.
 *
 * Reading the output is a separate, restartable step: `tail -c +OFFSET` from a byte offset the client
 * counted, so a reconnect resumes exactly where the last byte arrived (no line lost, none repeated).
 */

/** Exit statuses of the start script's own failures (before the program runs); chosen above any signal code. */
export const START_EXIT = { setup: 201, alreadyStarted: 202, cwd: 203 } as const;

/** Marker the tail script prints on stderr once the log is complete: `tpw-exit:<code>` (empty if none was written). */
export const EXIT_MARKER = 'tpw-exit:';

/**
 * The env file's text: one `export NAME='value'` per variable. Values may contain anything but NUL
 * (newlines and quotes included): single-quoting makes `.` read them back literally.
 */
export function envFileContent(env: Record<string, EnvValue>): string {
  const lines: string[] = [];
  for (const [k, v] of Object.entries(env)) {
    if (!isEnvName(k)) throw new TpwError('INVALID_ARGUMENT', `Environment variable name ${JSON.stringify(k)} is not a valid shell name.`);
    if (typeof v === 'string') lines.push(`export ${k}=${shQuote(v)}`);
    // Recipe text such as "$HOME/x": the user's own shell word, expanded on the worker as running the recipe would.
    else if (v.shell.includes('\n')) throw new TpwError('INVALID_ARGUMENT', `Environment variable ${k}: a value to expand must be one line.`);
    else lines.push(`export ${k}=${v.shell}`);
  }
  return lines.length > 0 ? `${lines.join('\n')}\n` : '';
}

export interface StartScriptOptions {
  runId: string;
  workerIndex: number;
  argv: readonly string[];
  cwd: string;
  runsRoot?: string;
}

/**
 * The start script's opening: argument checks, the run folder made absolute (so TPW_RUN_DIR still points at it
 * after the program's `cd`), a refusal to start a run id twice, the starter pid, the 0600 env file read from
 * stdin (removed again as soon as the wrapper has sourced it, or when the start fails), and the log. Leaves `$d` set.
 */
function runFolderPrologue(o: StartScriptOptions): string[] {
  if (o.argv.length === 0) throw new TpwError('INVALID_ARGUMENT', 'Nothing to run: the command is empty.');
  if (!Number.isInteger(o.workerIndex) || o.workerIndex < 0) throw new TpwError('INVALID_ARGUMENT', `Bad worker index ${o.workerIndex}.`);
  const dir = runDirWord(o.runId, o.runsRoot);
  const { setup, alreadyStarted } = START_EXIT;
  return [
    'set -u',
    'umask 077',
    `d=${dir}`,
    `mkdir -p -- "$d" || { echo "tpw: cannot create the run folder $d" >&2; exit ${setup}; }`,
    'd=$(cd -- "$d" && pwd -P)',
    `if [ -e "$d/pid" ]; then echo "tpw: run ${o.runId} was already started on this worker ($d/pid exists)" >&2; exit ${alreadyStarted}; fi`,
    // Lets a concurrent stop tell "still starting" from "failed before it could start anything".
    'echo "$$" > "$d/starter"',
    // stdin carries nothing but the env file; EOF ends it.
    `cat > "$d/env" && chmod 600 "$d/env" || { rm -f -- "$d/env"; echo "tpw: cannot write $d/env" >&2; exit ${setup}; }`,
    `: >> "$d/log" || { echo "tpw: cannot write $d/log" >&2; exit ${setup}; }`,
  ];
}

/**
 * Starts the program in its own process group with stdin from /dev/null and stdout+stderr appended to
 * `log`; writes `pid`, then exits 0. Start failures exit with START_EXIT codes and a `tpw:` line on stderr,
 * before anything runs (the cwd is checked here, not in the wrapper, so that failure is reported at start).
 */
export function buildStartScript(o: StartScriptOptions): string {
  const cwd = o.cwd === '' ? '.' : o.cwd;
  const cwdFail = START_EXIT.cwd;
  return [
    ...runFolderPrologue(o),
    `cd -- ${shPath(cwd)} 2>/dev/null || { rm -f -- "$d/env"; printf 'tpw: cannot change to the folder %s on this worker\\n' ${shPath(cwd)} >&2; exit ${cwdFail}; }`,
    RUN_GROUP_SH,
    // `set -m`: the wrapper gets a process group of its own (Stop signals the group) and, unlike a plain `&`
    // job, does not start with SIGINT ignored. The wrapper traps INT/TERM/HUP so that it outlives the program
    // long enough to record exit_code; the program itself gets the default dispositions.
    'set -m',
    '(',
    "  trap ':' INT TERM HUP",
    `  export TPW_RUN_ID=${shQuote(o.runId)} TPW_WORKER_INDEX=${o.workerIndex} TPW_RUN_DIR="$d"`,
    // The secrets stay on the worker's disk only until the wrapper has them: a run that is killed, preempted or
    // never followed again leaves none behind.
    '  . "$d/env"',
    // `command -p`: the system's own rm and mv whatever the env file did to PATH (a recipe's `export PATH=/x`
    // or a task's `PATH: /x:$PATH`), so the secrets are removed and the exit code recorded all the same.
    '  command -p rm -f -- "$d/env"',
    `  ${shJoin(o.argv)}`,
    '  rc=$?',
    '  echo "$rc" > "$d/exit_code.tmp" && command -p mv -f -- "$d/exit_code.tmp" "$d/exit_code"',
    '  exit "$rc"',
    // No fd of the SSH session survives in the group: sshd (and the emulator) close the channel as soon as
    // this script exits, instead of waiting for the program's output to end.
    ') < /dev/null >> "$d/log" 2>&1 &',
    'set +m',
    RECORD_RUN_GROUP_SH,
    'exit 0',
  ].join('\n');
}

export interface TailScriptOptions {
  runId: string;
  runsRoot?: string;
  /** Bytes of `log` the client already has. */
  offset: number;
  /** Keep reading until the program has ended (false: print what is there now and stop). */
  follow: boolean;
}

/**
 * Prints `log` from byte `offset` on stdout; with `follow`, keeps going until the wrapper process is gone
 * (GNU tail's `--pid` reads what is left after the process died, so the end of the log is never cut off).
 * Then prints `tpw-exit:<code>` on stderr; `tpw-exit:running` when not following and the run still runs.
 * Exit 3 with a `tpw:` line when this worker has no such run.
 */
export function buildTailScript(o: TailScriptOptions): string {
  if (!Number.isSafeInteger(o.offset) || o.offset < 0) throw new TpwError('INVALID_ARGUMENT', `Bad log offset ${o.offset}.`);
  const dir = runDirWord(o.runId, o.runsRoot);
  return [
    `d=${dir}`,
    `[ -e "$d/log" ] || { echo "tpw: run ${o.runId} has no log on this worker ($d)" >&2; exit 3; }`,
    RUN_GROUP_SH,
    // A pid reused by another program is not the run: following it would never end.
    'live() { [ ! -e "$d/exit_code" ] && run_group && kill -0 "$g" 2>/dev/null; }',
    o.follow
      ? `if live; then tail -s 0.2 -c +${o.offset + 1} --pid="$g" -f -- "$d/log"; else tail -c +${o.offset + 1} -- "$d/log"; fi`
      : `tail -c +${o.offset + 1} -- "$d/log"`,
    'if [ -e "$d/exit_code" ]; then c=$(cat "$d/exit_code"); elif live; then c=running; else c=; fi',
    `printf '${EXIT_MARKER}%s\\n' "$c" >&2`,
    'exit 0',
  ].join('\n');
}

export interface StopScriptOptions {
  runId: string;
  runsRoot?: string;
  /** Time between SIGINT and SIGKILL; SIGTERM goes out halfway. */
  graceMs: number;
  /** How long to wait for the pid file of a run that is still starting (default 10 s). */
  pidWaitMs?: number;
}

/**
 * The stop program: SIGINT to the run's whole process group, SIGTERM halfway through the grace period,
 * SIGKILL at its end; returns as soon as the group is empty. Exit 0 when the group is gone (or never existed).
 */
export function buildStopScript(o: StopScriptOptions): string {
  const dir = runDirWord(o.runId, o.runsRoot);
  const half = Math.max(1, Math.ceil(o.graceMs / 200)); // in 0.1 s steps
  const pidWait = Math.max(1, Math.ceil((o.pidWaitMs ?? 10_000) / 100));
  return [
    `d=${dir}`,
    // Wait for the pid file of a run that is still starting, but not for one whose start script already died.
    'i=0',
    'while [ ! -s "$d/pid" ]; do',
    '  if [ -s "$d/starter" ] && ! kill -0 "$(cat "$d/starter")" 2>/dev/null && [ ! -s "$d/pid" ]; then exit 0; fi',
    `  i=$((i+1)); if [ "$i" -gt ${pidWait} ]; then echo "tpw: no pid file in $d" >&2; exit 3; fi`,
    '  sleep 0.1',
    'done',
    RUN_GROUP_SH,
    'run_group; case $? in',
    '  1) echo "tpw: process $g is no longer this run\'s (its number was reused): nothing of the run is left to stop" >&2; exit 0;;',
    '  2) echo "tpw: bad pid file $d/pid" >&2; exit 3;;',
    'esac',
    // kill -0 also succeeds for a group of zombies (orphans wait for init to reap them): ask ps for live members.
    'alive() { run_group || return 1; kill -0 -- "-$g" 2>/dev/null || return 1; command -v ps >/dev/null 2>&1 || return 0; ps -e -o pgid= -o stat= | awk -v g="$g" \'$1 == g && $2 !~ /^Z/ { f = 1 } END { exit !f }\'; }',
    'waitgone() { n=$1; while [ "$n" -gt 0 ] && alive; do sleep 0.1; n=$((n-1)); done; }',
    'alive || exit 0',
    'kill -INT -- "-$g" 2>/dev/null',
    `waitgone ${half}`,
    'alive && kill -TERM -- "-$g" 2>/dev/null',
    `waitgone ${half}`,
    'alive && kill -KILL -- "-$g" 2>/dev/null',
    'waitgone 20',
    'alive && { echo "tpw: process group $g survived SIGKILL" >&2; exit 4; }',
    'exit 0',
  ].join('\n');
}
