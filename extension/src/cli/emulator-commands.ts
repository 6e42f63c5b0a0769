import { emulatorLogFile, emulatorStatus, runEmulatorForeground, startEmulatorDaemon, stopEmulatorDaemon } from '../core/emulator/daemon';
import { UsageError, type CommandContext } from './main';

/** `tpw emulator start|stop|status` (and `run-foreground`, which `start` spawns detached). */
export async function emulatorCommand(ctx: CommandContext): Promise<number> {
  const [sub, extra] = ctx.positionals;
  if (extra !== undefined) throw new UsageError(`unexpected argument "${extra}"`);
  switch (sub) {
    case 'start': {
      if (ctx.values.foreground) {
        await runEmulatorForeground();
        return 0;
      }
      const ep = await startEmulatorDaemon();
      ctx.out(`Local TPU emulator running (pid ${ep.pid}): REST http://${ep.host}:${ep.restPort}, workers' SSH on port ${ep.sshPort}, project ${ep.project}, zones ${ep.zones.join(', ')}.`);
      ctx.out(`Log: ${emulatorLogFile()}`);
      return 0;
    }
    case 'run-foreground':
      await runEmulatorForeground();
      return 0;
    case 'stop': {
      const stopped = await stopEmulatorDaemon();
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
