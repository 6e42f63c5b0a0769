import { TpwError } from '../errors';
import { shJoin, shPath, shQuote } from '../ssh/quote';
import { START_EXIT, runDirWord, runFolderPrologue } from './remote-script';

/**
 * Shell programs for a *detached* run (same run-folder layout as remote-script.ts). Unlike the attached
 * start script, the program's output goes only to `log` (never back over the SSH channel) and the start
 * script returns as soon as the program is running, so a run costs one short exec per worker to start and
 * nothing ties it to the client: the laptop may sleep, VS Code may close, the network may drop.
 *
 * Reading the output is a separate, restartable step: `tail -c +OFFSET` from a byte offset the client
 * counted, so a reconnect resumes exactly where the last byte arrived (no line lost, none repeated).
 */

/** Marker the tail script prints on stderr once the log is complete: `tpw-exit:<code>` (empty if none was written). */
export const EXIT_MARKER = 'tpw-exit:';

export interface DetachedStartOptions {
  runId: string;
  workerIndex: number;
  argv: readonly string[];
  cwd: string;
  runsRoot?: string;
}

/**
 * Starts the program in its own process group with stdin from /dev/null and stdout+stderr appended to
 * `log`; writes `pid`, then exits 0. Start failures exit with START_EXIT codes and a `tpw:` line on stderr,
 * before anything runs (the cwd is checked here, not in the wrapper, so that failure is reported at start).
 */
export function buildDetachedStartScript(o: DetachedStartOptions): string {
  const cwd = o.cwd === '' ? '.' : o.cwd;
  const cwdFail = START_EXIT.cwd;
  return [
    ...runFolderPrologue(o),
    `cd -- ${shPath(cwd)} 2>/dev/null || { printf 'tpw: cannot change to the folder %s on this worker\\n' ${shPath(cwd)} >&2; exit ${cwdFail}; }`,
    // `set -m`: the wrapper gets a process group of its own (Stop signals the group) and, unlike a plain `&`
    // job, does not start with SIGINT ignored. The wrapper traps INT/TERM/HUP so that it outlives the program
    // long enough to record exit_code; the program itself gets the default dispositions.
    'set -m',
    '(',
    "  trap ':' INT TERM HUP",
    `  export TPW_RUN_ID=${shQuote(o.runId)} TPW_WORKER_INDEX=${o.workerIndex} TPW_RUN_DIR="$d"`,
    '  . "$d/env"',
    `  ${shJoin(o.argv)}`,
    '  rc=$?',
    '  echo "$rc" > "$d/exit_code.tmp" && mv -f -- "$d/exit_code.tmp" "$d/exit_code"',
    '  exit "$rc"',
    // No fd of the SSH session survives in the group: sshd (and the emulator) close the channel as soon as
    // this script exits, instead of waiting for the program's output to end.
    ') < /dev/null >> "$d/log" 2>&1 &',
    'set +m',
    'echo "$!" > "$d/pid.tmp" && mv -f -- "$d/pid.tmp" "$d/pid"',
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
    'g=$(cat "$d/pid" 2>/dev/null)',
    'live() { [ ! -e "$d/exit_code" ] && [ -n "$g" ] && kill -0 "$g" 2>/dev/null; }',
    o.follow
      ? `if live; then tail -s 0.2 -c +${o.offset + 1} --pid="$g" -f -- "$d/log"; else tail -c +${o.offset + 1} -- "$d/log"; fi`
      : `tail -c +${o.offset + 1} -- "$d/log"`,
    'if [ -e "$d/exit_code" ]; then c=$(cat "$d/exit_code"); elif live; then c=running; else c=; fi',
    `printf '${EXIT_MARKER}%s\\n' "$c" >&2`,
    'exit 0',
  ].join('\n');
}
