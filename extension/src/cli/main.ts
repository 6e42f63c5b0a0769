/**
 * `tpw`: the CLI over extension/src/core. The commands, their options and their help are a table
 * (command-table.ts); each handler returns an exit code. Every error becomes one line on stderr naming what
 * is at fault, never a stack trace (TPW_DEBUG=1 shows it).
 */
import { exitQuietlyOnClosedPipe } from './closed-pipe';
import { describeError, isTpwError, TpwError } from '../core/errors';
import { CliConnections } from './connections';
import { UsageError, type GlobalOptions } from './context';
import { commandHelp, commandName, globalHelp, VERSION } from './help';
import { CommandLineError, parseCommandLine, type CommandLine } from './parse-command-line';

// bin/tpw.js (the launcher users run) sets the closed-pipe behaviour before it calls main().
export { exitQuietlyOnClosedPipe };

export async function main(
  argv: string[],
  out: (line: string) => void = (l) => process.stdout.write(l + '\n'),
  err: (line: string) => void = (l) => process.stderr.write(l + '\n'),
): Promise<number> {
  let line: CommandLine;
  try {
    line = parseCommandLine(argv);
  } catch (e) {
    if (!(e instanceof CommandLineError)) throw e;
    err(e.message);
    return 2;
  }
  switch (line.kind) {
    case 'version':
      out(VERSION);
      return 0;
    case 'no-command':
      out(globalHelp());
      return 2;
    case 'help':
      out(line.path.length ? commandHelp(line.path) : globalHelp());
      return 0;
  }
  const { path, values, positionals, rest } = line;
  const command = commandName(path);
  const globals: GlobalOptions = {
    project: (values.project as string | undefined) ?? (process.env.TPW_PROJECT || undefined),
    zone: values.zone as string | undefined,
    emulator: Boolean(values.emulator),
  };
  const handler = path[path.length - 1].run;
  if (!handler) throw new TpwError('INTERNAL', `${command} has no handler`);
  const connections = new CliConnections();
  try {
    return await handler({ globals, values, positionals, rest, out, err, connections });
  } catch (e) {
    if (e instanceof UsageError) {
      err(`${command}: ${e.message}; see ${command} --help`);
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

if (require.main === module) {
  exitQuietlyOnClosedPipe(process.stdout);
  exitQuietlyOnClosedPipe(process.stderr);
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
