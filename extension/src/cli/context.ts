/**
 * What every `tpw` command handler receives, and the usage error it throws for bad input that the option
 * parser cannot see (a missing NAME, a bad combination). Kept apart from main.ts so the handlers and the
 * command table do not import the entry point.
 */
import type { RunResult, RunTails } from '../core/run/engine';
import type { CliConnections } from './connections';

export interface GlobalOptions {
  project?: string;
  zone?: string;
  emulator: boolean;
}

export type Values = Record<string, string | boolean | (string | boolean)[] | undefined>;

export interface CommandContext {
  globals: GlobalOptions;
  values: Values;
  positionals: string[];
  /** Arguments after a literal `--`, passed through untouched (only commands that take them get any). */
  rest: string[];
  out: (line: string) => void;
  err: (line: string) => void;
  /** The invocation's one SSH connection owner (closed when the command returns). */
  connections: CliConnections;
}

export class UsageError extends Error {}

/** `tpw run`'s end, on VMs and on GKE alike: a detached run's id, or the run's report; the exit code. */
export function finishRun(ctx: CommandContext, result: RunResult, tails: RunTails): number {
  if (result.detached) {
    ctx.out(result.runId);
    return 0;
  }
  for (const line of tails.report(result)) ctx.out(line);
  if (result.cancelled) return 130;
  return result.ok ? 0 : 1;
}

export function requireArg(value: string | undefined, what: string): string {
  if (!value) throw new UsageError(`missing ${what}`);
  return value;
}

/** The first `n` positionals; a further one is refused by name. */
export function positionalsUpTo(ctx: CommandContext, n: number): (string | undefined)[] {
  if (ctx.positionals.length > n) throw new UsageError(`unexpected argument "${ctx.positionals[n]}"`);
  return Array.from({ length: n }, (_, i) => ctx.positionals[i]);
}
