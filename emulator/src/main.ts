import { emulatorDir } from '../../protocol/node/emulator-endpoint';
import { emulatorLogFile, emulatorStatus, runEmulatorForeground, startEmulatorDaemon, stopEmulatorDaemon } from './daemon';
import { Emulator } from './emulator';
import type { StateRecovery } from './state-file';

/**
 * The emulator's own command line (dist/emulator.js), as fake-gcs-server or localstack have theirs: the product's
 * `tpw emulator …` and VS Code's "Start Local Emulator" run it; tests may too.
 *
 *   node dist/emulator.js start [--restore-previous | --reset-state]   a background daemon; prints where it is
 *   node dist/emulator.js run   [--restore-previous | --reset-state]   in this process until SIGTERM / Ctrl-C
 *   node dist/emulator.js stop                                          exit 0 whether or not one was running
 *   node dist/emulator.js status                                        exit 1 when it is not running
 *
 * The folder is `<TPW_HOME>/emulator`; options for a daemon travel in TPW_EMULATOR_OPTIONS (daemon.ts).
 * Errors are one line on stderr and exit 1; usage errors exit 2.
 */

const USAGE = 'usage: emulator.js start|run|stop|status [--restore-previous | --reset-state]';

class UsageError extends Error {}

function recoveryOf(flags: string[]): StateRecovery | undefined {
  const unknown = flags.filter((f) => f !== '--restore-previous' && f !== '--reset-state');
  if (unknown.length > 0) throw new UsageError(`unknown option ${unknown[0]}`);
  const restore = flags.includes('--restore-previous');
  const reset = flags.includes('--reset-state');
  if (restore && reset) throw new UsageError('--restore-previous and --reset-state cannot be combined');
  return restore ? 'restore-previous' : reset ? 'reset-state' : undefined;
}

function out(line: string): void {
  process.stdout.write(`${line}\n`);
}

async function main(argv: string[]): Promise<number> {
  const [command, ...flags] = argv;
  switch (command) {
    case 'start': {
      const ep = await startEmulatorDaemon({ recovery: recoveryOf(flags), notice: (m) => process.stderr.write(`${m}\n`) });
      out(`Local TPU emulator running (pid ${ep.pid}): REST http://${ep.host}:${ep.restPort}, workers' SSH on port ${ep.sshPort}, project ${ep.project}, zones ${ep.zones.join(', ')}.`);
      out(`Log: ${emulatorLogFile()}`);
      return 0;
    }
    case 'run': {
      const recovery = recoveryOf(flags);
      if (recovery) out(Emulator.recoverState(emulatorDir(), recovery));
      await runEmulatorForeground();
      return 0;
    }
    case 'stop': {
      if (flags.length > 0) throw new UsageError(`unknown option ${flags[0]}`);
      const stopped = await stopEmulatorDaemon({ notice: (m) => process.stderr.write(`${m}\n`) });
      out(stopped ? 'Local TPU emulator stopped.' : 'The local TPU emulator was not running.');
      return 0;
    }
    case 'status': {
      if (flags.length > 0) throw new UsageError(`unknown option ${flags[0]}`);
      const s = await emulatorStatus();
      if (!s.running) {
        out(s.message);
        return 1;
      }
      const ep = s.endpoint;
      out(`running (pid ${ep.pid}) since ${ep.startedAt}: REST http://${ep.host}:${ep.restPort}, SSH port ${ep.sshPort}, ${s.nodes} VM(s), project ${ep.project}, zones ${ep.zones.join(', ')}`);
      return 0;
    }
    default:
      throw new UsageError(command ? `unknown command ${command}` : 'no command');
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    if (e instanceof UsageError) {
      process.stderr.write(`emulator: ${e.message}\n${USAGE}\n`);
      process.exitCode = 2;
      return;
    }
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  },
);
