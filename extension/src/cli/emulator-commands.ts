import { emulatorLogFile, emulatorStatus, runEmulatorForeground, startEmulatorDaemon, stopEmulatorDaemon } from '../core/emulator/daemon';
import { Emulator } from '../core/emulator/emulator';
import type { StateRecovery } from '../core/emulator/state-file';
import { emulatorDir } from '../core/paths';
import { positionalsUpTo, UsageError, type CommandContext } from './context';

/** `tpw emulator start [--foreground]`: a detached daemon, or this process until Ctrl-C. */
export async function emulatorStart(ctx: CommandContext): Promise<number> {
  positionalsUpTo(ctx, 0);
  const recovery = stateRecovery(ctx);
  if (ctx.values.foreground) {
    if (recovery) ctx.out(Emulator.recoverState(emulatorDir(), recovery));
    await runEmulatorForeground();
    return 0;
  }
  const ep = await startEmulatorDaemon({ recovery, notice: ctx.err });
  ctx.out(`Local TPU emulator running (pid ${ep.pid}): REST http://${ep.host}:${ep.restPort}, workers' SSH on port ${ep.sshPort}, project ${ep.project}, zones ${ep.zones.join(', ')}.`);
  ctx.out(`Log: ${emulatorLogFile()}`);
  return 0;
}

/** `tpw emulator run-foreground`: what `start` (and the extension) spawn detached; not in the help. */
export async function emulatorRunForeground(ctx: CommandContext): Promise<number> {
  positionalsUpTo(ctx, 0);
  await runEmulatorForeground();
  return 0;
}

/** `tpw emulator stop` */
export async function emulatorStop(ctx: CommandContext): Promise<number> {
  positionalsUpTo(ctx, 0);
  const stopped = await stopEmulatorDaemon({ notice: ctx.err });
  ctx.out(stopped ? 'Local TPU emulator stopped.' : 'The local TPU emulator was not running.');
  return 0;
}

/** `tpw emulator status`: exit 1 when it is not running. */
export async function emulatorStatusCommand(ctx: CommandContext): Promise<number> {
  positionalsUpTo(ctx, 0);
  const s = await emulatorStatus();
  if (!s.running) {
    ctx.out(s.message);
    return 1;
  }
  const ep = s.endpoint;
  ctx.out(`running (pid ${ep.pid}) since ${ep.startedAt}: REST http://${ep.host}:${ep.restPort}, SSH port ${ep.sshPort}, ${s.nodes} VM(s), project ${ep.project}, zones ${ep.zones.join(', ')}`);
  return 0;
}

function stateRecovery(ctx: CommandContext): StateRecovery | undefined {
  const restore = Boolean(ctx.values['restore-previous']);
  const reset = Boolean(ctx.values['reset-state']);
  if (restore && reset) throw new UsageError('--restore-previous and --reset-state cannot be combined');
  return restore ? 'restore-previous' : reset ? 'reset-state' : undefined;
}
