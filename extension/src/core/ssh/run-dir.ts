import { TpwError } from '../errors';
import { shPath, shQuote } from './quote';

/**
 * Where a run's folder is on a worker, as a shell word. Shared by everything that reads or writes run
 * folders over SSH: the run engine (start, tail, stop), the run view's metrics and profile reads.
 */

export const DEFAULT_RUNS_ROOT = '~/.tpw/runs';

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
 * Shell functions for the run folder `$d`, shared by every program that signals or injects into a run's
 * processes. A pid alone names whatever process has that number now: after the run ended and the number was
 * reused, a stop would signal another program's group (another user's, under root) and "Attach Debugger" would
 * inject into an unrelated Python. So `pid` holds the wrapper's pid with its start time (/proc/PID/stat field
 * 22, clock ticks since boot) and a checksum of its command line, and they are compared before any signal.
 *
 * - `proc_start PID`, `proc_cmd PID`: those two facts of a live process (empty when it is gone).
 * - `run_group`: sets `g` to the run's process group id and succeeds when that group is still the run's:
 *   its leader (the wrapper) is the recorded process, owned by this user, or the leader is gone and what is
 *   left of the group is the run's own (Linux gives no new process a pid still used as a group id). Fails with
 *   1 when the number now belongs to something else, 2 when there is no usable pid file.
 */
export const RUN_GROUP_SH = [
  // The command name (field 2) may hold spaces and parentheses: the fields are counted after its last ')'.
  `proc_start() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }`,
  `proc_state() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1; }`,
  'proc_cmd() { [ -r "/proc/$1/cmdline" ] && cksum < "/proc/$1/cmdline" 2>/dev/null; }',
  'run_group() {',
  '  g= gst= gck=',
  '  read -r g gst gck < "$d/pid" 2>/dev/null || [ -n "$g" ] || return 2',
  '  case "$g" in ""|*[!0-9]*) return 2;; esac',
  '  [ -e "/proc/$g" ] || return 0',
  '  [ -O "/proc/$g" ] || return 1',
  // Written before start times were recorded (a run started by an older version): the pid is all there is.
  '  [ -n "$gst" ] || return 0',
  '  [ "$(proc_start "$g")" = "$gst" ] || return 1',
  // A zombie leader (killed, not yet reaped) has no command line left; its start time already matched.
  '  [ "$(proc_state "$g")" = Z ] && return 0',
  '  [ "$(proc_cmd "$g")" = "$gck" ]',
  '}',
].join('\n');

/**
 * Records the wrapper `$!` in `$d/pid` (with RUN_GROUP_SH's functions defined). A wrapper already gone gets
 * start time 0, which no later process has: its number is never taken for the run's again.
 */
export const RECORD_RUN_GROUP_SH = [
  'st=$(proc_start "$!"); ck=$(proc_cmd "$!")',
  'echo "$! ${st:-0} ${ck:-0}" > "$d/pid.tmp" && mv -f -- "$d/pid.tmp" "$d/pid"',
].join('\n');
