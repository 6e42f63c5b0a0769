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
