/**
 * `tpw`: the CLI over extension/src/core. Commands are a table; each returns an exit code. Every error
 * becomes one line on stderr naming what is at fault, never a stack trace (TPW_DEBUG=1 shows it).
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { describeError, isTpwError, TpwError } from '../core/errors';
import { CliConnections } from './connections';
import { emulatorCommand } from './emulator-commands';
import { flagsCommand } from './flags-commands';
import { runCommand } from './run-command';
import { qrCommand } from './qr-commands';
import { logsCommand, resumeCommand, runsCommand, stopCommand } from './runs-commands';
import { USAGE, VERSION } from './usage';
import { vmCommand } from './vm-commands';

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
  /** Arguments after a literal `--`, passed through untouched. */
  rest: string[];
  out: (line: string) => void;
  err: (line: string) => void;
  /** The invocation's one SSH connection owner (closed when the command returns). */
  connections: CliConnections;
}

export class UsageError extends Error {}

const OPTIONS = {
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
  project: { type: 'string' },
  zone: { type: 'string' },
  emulator: { type: 'boolean' },
  json: { type: 'boolean' },
  type: { type: 'string' },
  version_: { type: 'string' },
  spot: { type: 'boolean' },
  vm: { type: 'string' },
  'no-fail-fast': { type: 'boolean' },
  foreground: { type: 'boolean' },
  detach: { type: 'boolean' },
  'accept-new-host-keys': { type: 'boolean' },
  follow: { type: 'boolean', short: 'f' },
  // vm create (issue 3): scheduling, startup script, labels, disks, queued resources, dry run.
  reserved: { type: 'boolean' },
  'startup-script': { type: 'string' },
  label: { type: 'string', multiple: true },
  'data-disk': { type: 'string', multiple: true },
  description: { type: 'string' },
  queued: { type: 'boolean' },
  tier: { type: 'string' },
  'valid-until': { type: 'string' },
  'dry-run': { type: 'boolean' },
  force: { type: 'boolean' },
} satisfies ParseArgsConfig['options'];

const COMMANDS: Record<string, (ctx: CommandContext) => Promise<number>> = {
  vm: vmCommand,
  qr: qrCommand,
  run: runCommand,
  runs: runsCommand,
  logs: logsCommand,
  stop: stopCommand,
  resume: resumeCommand,
  emulator: emulatorCommand,
  flags: flagsCommand,
};

export async function main(
  argv: string[],
  out: (line: string) => void = (l) => process.stdout.write(l + '\n'),
  err: (line: string) => void = (l) => process.stderr.write(l + '\n'),
): Promise<number> {
  const dd = argv.indexOf('--');
  const own = dd >= 0 ? argv.slice(0, dd) : argv;
  const rest = dd >= 0 ? argv.slice(dd + 1) : [];
  // `--version` is both the CLI's version flag and `vm create`'s runtime version: the latter has a value.
  const normalized = own.map((a, i) => (a === '--version' && own[i + 1] !== undefined && !own[i + 1].startsWith('-') && own[0] === 'vm' ? '--version_' : a));
  let parsed;
  try {
    parsed = parseArgs({ args: normalized, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (e) {
    err(`tpw: ${describeError(e).replace('--version_', '--version')}`);
    err("Run 'tpw --help' for usage.");
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.version && positionals.length === 0) {
    out(VERSION);
    return 0;
  }
  if (values.help || positionals.length === 0) {
    out(USAGE);
    return positionals.length === 0 && !values.help ? 2 : 0;
  }
  const [name, ...args] = positionals;
  const command = COMMANDS[name];
  if (!command) {
    err(`tpw: unknown command "${name}". Run 'tpw --help' for usage.`);
    return 2;
  }
  const globals: GlobalOptions = {
    project: (values.project as string | undefined) ?? process.env.TPW_PROJECT,
    zone: values.zone as string | undefined,
    emulator: Boolean(values.emulator),
  };
  const connections = new CliConnections();
  try {
    return await command({ globals, values, positionals: args, rest, out, err, connections });
  } catch (e) {
    if (e instanceof UsageError) {
      err(`tpw ${name}: ${e.message}`);
      err("Run 'tpw --help' for usage.");
      return 2;
    }
    if (isTpwError(e, 'CANCELLED')) {
      err(`tpw: ${e.message}`);
      return 130;
    }
    err(`tpw: ${describeError(e)}`);
    if (process.env.TPW_DEBUG) err(String((e as Error).stack));
    return 1;
  } finally {
    connections.close();
  }
}

export function requireArg(value: string | undefined, what: string): string {
  if (!value) throw new UsageError(`missing ${what}`);
  return value;
}

export { TpwError };

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (e: unknown) => {
      process.stderr.write(`tpw: ${describeError(e)}\n`);
      process.exitCode = 1;
    },
  );
}
