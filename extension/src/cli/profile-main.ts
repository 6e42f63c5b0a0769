/**
 * `tpw profile` without the rest of the CLI: bin/tpw.js (node) loads this small bundle (dist/profile-cli.js) for it,
 * where there is no native dist/tpw-profile (a .vsix), because loading the whole CLI (the Google and SSH clients)
 * takes longer than reading most captures. It answers undefined for what the analysis's own command does not take
 * (--help, an unknown flag), and the full CLI handles the invocation, so help and errors stay the same.
 */
import { exitQuietlyOnClosedPipe } from './closed-pipe';
import { runProfile } from './profile-command';

export async function profileMain(
  argv: string[],
  out: (line: string) => void = (l) => process.stdout.write(l + '\n'),
  err: (line: string) => void = (l) => process.stderr.write(l + '\n'),
): Promise<number | undefined> {
  // A run's captures are fetched first, with the backend: the full CLI's (profile-run.ts).
  if (argv.some((a) => a === '--run' || a.startsWith('--run='))) return undefined;
  return runProfile(argv, out, err);
}

export { exitQuietlyOnClosedPipe };
