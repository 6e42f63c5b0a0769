import { emulatorLogFile, emulatorStatus, runEmulatorForeground, startEmulatorDaemon, stopEmulatorDaemon } from '../core/emulator/daemon';
import { Emulator } from '../core/emulator/emulator';
import type { StateRecovery } from '../core/emulator/state-file';
import { emulatorDir } from '../core/paths';
import { UsageError, type CommandContext } from './main';

/** `tpw emulator start|stop|status` (and `run-foreground`, which `start` spawns detached). */
export async function emulatorCommand(ctx: CommandContext): Promise<number> {
  const [sub, extra] = ctx.positionals;
  if (extra !== undefined) throw new UsageError(`unexpected argument "${extra}"`);
  const recovery = stateRecovery(ctx);
  if (recovery && sub !== 'start') throw new UsageError(`--${recovery} goes with \`tpw emulator start\``);
  switch (sub) {
    case 'start': {
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
    case 'run-foreground':
      await runEmulatorForeground();
      return 0;
    case 'stop': {
      const stopped = await stopEmulatorDaemon({ notice: ctx.err });
      ctx.out(stopped ? 'Local TPU emulator stopped.' : 'The local TPU emulator was not running.');
      return 0;
    }
    case 'status': {
      const s = await emulatorStatus();
      if (!s.running) {
        ctx.out(s.message);
        return 1;
      }
      const ep = s.endpoint;
      ctx.out(`running (pid ${ep.pid}) since ${ep.startedAt}: REST http://${ep.host}:${ep.restPort}, SSH port ${ep.sshPort}, ${s.nodes} VM(s), project ${ep.project}, zones ${ep.zones.join(', ')}`);
      return 0;
    }
    default:
      throw new UsageError(`expected start, stop or status${sub ? ` (got "${sub}")` : ''}`);
  }
}

function stateRecovery(ctx: CommandContext): StateRecovery | undefined {
  const restore = Boolean(ctx.values['restore-previous']);
  const reset = Boolean(ctx.values['reset-state']);
  if (restore && reset) throw new UsageError('--restore-previous and --reset-state cannot be combined');
  return restore ? 'restore-previous' : reset ? 'reset-state' : undefined;
}
