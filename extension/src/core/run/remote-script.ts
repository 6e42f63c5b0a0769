import { TpwError } from '../errors';
import { isEnvName, shJoin, shPath, shQuote } from '../ssh/quote';
import type { EnvValue } from './types';

/**
 * The shell programs a run sends to each worker. Everything user-supplied is quoted (ssh/quote.ts); secrets
 * travel only on stdin into a 0600 file. Layout on the worker, one folder per run:
 *
 *   <runsRoot>/<runId>/      (runsRoot defaults to ~/.tpw/runs)
 *     env        0600  `export K='v'` lines, read from stdin, sourced by the wrapper
 *     pid        the wrapper's pid = the process group id of everything the run started
 *     log        stdout and stderr of the program, interleaved as written (appended, never truncated later)
 *     exit_code  written by the wrapper when the program ends (absent while running, or if SIGKILLed)
 *     starter    pid of the start script itself (so a stop can tell a run that failed to start from a slow one)
 *
 * Process tree: the exec's bash (`start`) forks the *wrapper* as a job of its own (`set -m`: a new process
 * group, and unlike a plain `&` job it does not start with SIGINT ignored, so Stop's SIGINT reaches Python as
 * KeyboardInterrupt). The wrapper tees output into `log` and back over the channel, runs the program in the
 * foreground, and writes `exit_code` itself, so the record survives a dropped SSH connection. The tees ignore
 * INT/TERM/HUP and use `tee -p`, so a trainer that logs while shutting down (or after the laptop went away)
 * never dies of SIGPIPE; a later "reattach" only has to tail `log` from an offset and read `exit_code`.
 */

export const DEFAULT_RUNS_ROOT = '~/.tpw/runs';

/** Exit statuses of the start script's own failures (before the program runs); chosen above any signal code. */
export const START_EXIT = { setup: 201, alreadyStarted: 202, cwd: 203 } as const;

export function validateRunId(runId: string): void {
  // The id becomes a directory name on every worker: no slashes, no dot-dot, nothing the shell could glob.
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(runId)) {
    throw new TpwError('INVALID_ARGUMENT', `Run id ${JSON.stringify(runId)} is not valid: use letters, digits, '.', '_' and '-'.`);
  }
}

/** The run's folder as a shell word (a leading `~/` expands to the remote $HOME). */
export function runDirWord(runId: string, runsRoot = DEFAULT_RUNS_ROOT): string {
  validateRunId(runId);
  const root = runsRoot.replace(/\/+$/, '');
  return `${shPath(root)}/${shQuote(runId)}`;
}

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
 * The start program for one worker (bash). Reads the env file from stdin, then starts the program and waits
 * for it; its exit status is the program's (or a START_EXIT code with a `tpw:` line on stderr).
 */
/**
 * The opening that both start scripts (attached here, detached in detached-script.ts) share: argument checks,
 * the run folder made absolute (so TPW_RUN_DIR still points at it after the program's `cd`), a refusal to start
 * a run id twice, the starter pid, the 0600 env file read from stdin, and the log. Leaves `$d` set.
 */
export function runFolderPrologue(o: StartScriptOptions): string[] {
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
    `cat > "$d/env" && chmod 600 "$d/env" || { echo "tpw: cannot write $d/env" >&2; exit ${setup}; }`,
    `: >> "$d/log" || { echo "tpw: cannot write $d/log" >&2; exit ${setup}; }`,
  ];
}

export function buildStartScript(o: StartScriptOptions): string {
  const cwd = o.cwd === '' ? '.' : o.cwd;
  const cwdFail = START_EXIT.cwd;
  return [
    ...runFolderPrologue(o),
    'set -m',
    '(',
    "  trap ':' INT TERM HUP",
    `  exec > >(trap '' INT TERM HUP; exec tee -p -a "$d/log") 2> >(trap '' INT TERM HUP; exec tee -p -a "$d/log" >&2)`,
    `  export TPW_RUN_ID=${shQuote(o.runId)} TPW_WORKER_INDEX=${o.workerIndex} TPW_RUN_DIR="$d"`,
    '  . "$d/env"',
    `  cd -- ${shPath(cwd)} || { printf 'tpw: cannot change to the folder %s on this worker\\n' ${shPath(cwd)} >&2; echo ${cwdFail} > "$d/exit_code"; exit ${cwdFail}; }`,
    `  ${shJoin(o.argv)} < /dev/null`,
    '  rc=$?',
    '  echo "$rc" > "$d/exit_code.tmp" && mv -f -- "$d/exit_code.tmp" "$d/exit_code"',
    '  exit "$rc"',
    ') &',
    // Job control only for creating the group: with it on, bash would print "[1]+ Done ..." into the output.
    'set +m',
    'echo "$!" > "$d/pid"',
    'wait "$!"',
    'exit "$?"',
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
    'g=$(cat "$d/pid")',
    'case "$g" in ""|*[!0-9]*) echo "tpw: bad pid file $d/pid" >&2; exit 3;; esac',
    // kill -0 also succeeds for a group of zombies (orphans wait for init to reap them): ask ps for live members.
    'alive() { kill -0 -- "-$g" 2>/dev/null || return 1; command -v ps >/dev/null 2>&1 || return 0; ps -e -o pgid= -o stat= | awk -v g="$g" \'$1 == g && $2 !~ /^Z/ { f = 1 } END { exit !f }\'; }',
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

/**
 * The exec command line for a bash program (the login shell may not be bash; `bash -c` makes it so).
 *
 * `--norc`: sshd runs this line with the user's login shell, which (Debian/Ubuntu bash, seeing SSH_CLIENT)
 * sources ~/.bashrc once — what it exports reaches the program. Without the flag the inner bash sourced it a
 * second time: bash execs a lone command in place with SHLVL put back to 1, so the inner shell also believed
 * it was sshd's top-level shell. A `conda init` rc costs ~0.1–0.5 s of CPU; every exec (start, tail, stop,
 * sync, the metrics poll every 3 s) paid it twice on every worker.
 */
export function bashCommand(script: string): string {
  return `bash --norc --noprofile -c ${shQuote(script)}`;
}
