import { runEmulatorCommand } from '../core/local-emulator';
import { positionalsUpTo, UsageError, type CommandContext } from './context';

/**
 * `tpw emulator start|stop|status`: the emulator is its own program (emulator/, dist/emulator.js); these run its
 * command line and pass on what it says and its exit code.
 */

/** `tpw emulator start [--foreground]`: a detached daemon, or this terminal until Ctrl-C. */
export async function emulatorStart(ctx: CommandContext): Promise<number> {
  positionalsUpTo(ctx, 0);
  const flags = recoveryFlags(ctx);
  if (ctx.values.foreground) return runEmulatorCommand(['run', ...flags], { inheritStdio: true });
  return forward(ctx, ['start', ...flags]);
}

/** `tpw emulator run-foreground`: the emulator in this process's terminal (kept for scripts; not in the help). */
export async function emulatorRunForeground(ctx: CommandContext): Promise<number> {
  positionalsUpTo(ctx, 0);
  return runEmulatorCommand(['run'], { inheritStdio: true });
}

/** `tpw emulator stop` */
export async function emulatorStop(ctx: CommandContext): Promise<number> {
  positionalsUpTo(ctx, 0);
  return forward(ctx, ['stop']);
}

/** `tpw emulator status`: exit 1 when it is not running. */
export async function emulatorStatusCommand(ctx: CommandContext): Promise<number> {
  positionalsUpTo(ctx, 0);
  return forward(ctx, ['status']);
}

/** Runs the emulator's command, its output line by line through the CLI's own streams. */
async function forward(ctx: CommandContext, args: string[]): Promise<number> {
  const lines = (sink: (line: string) => void) => {
    let rest = '';
    return {
      push: (t: string) => {
        const parts = (rest + t).split('\n');
        rest = parts.pop() ?? '';
        parts.forEach(sink);
      },
      flush: () => rest && sink(rest),
    };
  };
  const out = lines(ctx.out);
  const err = lines(ctx.err);
  const code = await runEmulatorCommand(args, { out: out.push, err: err.push });
  out.flush();
  err.flush();
  return code;
}

function recoveryFlags(ctx: CommandContext): string[] {
  const restore = Boolean(ctx.values['restore-previous']);
  const reset = Boolean(ctx.values['reset-state']);
  if (restore && reset) throw new UsageError('--restore-previous and --reset-state cannot be combined');
  return restore ? ['--restore-previous'] : reset ? ['--reset-state'] : [];
}
