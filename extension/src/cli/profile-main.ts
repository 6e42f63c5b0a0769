/**
 * `tpw profile` without the rest of the CLI: bin/tpw.js (node) loads this small bundle (dist/profile-cli.js) for it,
 * because loading the whole CLI (the Google and SSH clients) takes longer than reading most captures. It
 * accepts exactly what the command table declares for `profile`; anything else (--help, an unknown flag) makes
 * it answer undefined, and the full CLI handles the invocation, so help and errors stay the same.
 */
import { parseArgs } from 'node:util';
import { describeError } from '../core/errors';
import { exitQuietlyOnClosedPipe } from './closed-pipe';
import { UsageError } from './context';
import { profileCommand } from './profile-command';

const OPTIONS = { json: { type: 'boolean' }, top: { type: 'string' } } as const;

/** argv parsed as `tpw profile` takes it; undefined for anything else (--help, an unknown flag). */
function parseProfileArgs(argv: string[]): ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true; strict: true }>> | undefined {
  try {
    return parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch {
    return undefined;
  }
}

/** The FILE or DIR that `tpw profile` argv names, if it parses. */
export function profileTarget(argv: string[]): string | undefined {
  return parseProfileArgs(argv)?.positionals[0];
}

export async function profileMain(
  argv: string[],
  out: (line: string) => void = (l) => process.stdout.write(l + '\n'),
  err: (line: string) => void = (l) => process.stderr.write(l + '\n'),
): Promise<number | undefined> {
  const parsed = parseProfileArgs(argv);
  if (!parsed) return undefined;
  try {
    return await profileCommand({ values: parsed.values, positionals: parsed.positionals, out, err });
  } catch (e) {
    if (e instanceof UsageError) {
      err(`tpw profile: ${e.message}; see tpw profile --help`);
      return 2;
    }
    err(`tpw: ${describeError(e)}`);
    return 1;
  }
}

export { exitQuietlyOnClosedPipe };
