import { TpwError } from '../errors';

/**
 * POSIX shell quoting. Everything we send to a worker goes through a shell (OpenSSH runs the command with the
 * login shell's `-c`), so every user-supplied string is quoted here and arrives at the remote program
 * byte for byte: quotes, `$()`, backticks, globs, newlines, unicode, empty strings and leading dashes included.
 */

/**
 * Characters that mean nothing to any POSIX shell in any position we use them. `=` and `~` are deliberately
 * absent: a bare first word `A=b` would become an assignment and a bare `~user` a tilde expansion.
 */
const SAFE_BARE = /^[A-Za-z0-9_@%+,./:-]+$/;

/** Quotes one word so that the shell passes it through literally. */
export function shQuote(s: string): string {
  if (s.includes('\0')) {
    // A NUL cannot be part of any argv element or environment value; the kernel would cut the string there.
    throw new TpwError('INVALID_ARGUMENT', `A shell argument contains a NUL byte, which no program can receive: ${JSON.stringify(s.slice(0, 40))}.`);
  }
  if (s === '') return "''";
  if (SAFE_BARE.test(s)) return s;
  // Inside single quotes nothing is special except the closing quote itself: end the quoted run,
  // emit an escaped quote, and open a new run.
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Quotes every element of an argv and joins them into one shell command line. */
export function shJoin(argv: readonly string[]): string {
  return argv.map(shQuote).join(' ');
}

/**
 * A remote path as a shell word: a leading `~/` (or a bare `~`) means the login's home and is expanded by
 * the remote shell through "$HOME"; everything else is quoted literally. Used for run directories and cwd.
 */
export function shPath(p: string): string {
  if (p === '~') return '"$HOME"';
  if (p.startsWith('~/')) {
    const rest = p.slice(2);
    return rest.length > 0 ? `"$HOME"/${shQuote(rest)}` : '"$HOME"/';
  }
  return shQuote(p);
}

/** True if `name` can be an environment variable name that a POSIX shell can `export`. */
export function isEnvName(name: string): boolean {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name);
}

/**
 * The exec command line for a bash program (the login shell may not be bash; `bash -c` makes it so).
 *
 * `--norc`: sshd runs this line with the user's login shell, which (Debian/Ubuntu bash, seeing SSH_CLIENT)
 * sources ~/.bashrc once — what it exports reaches the program. Without the flag the inner bash sourced it a
 * second time: bash execs a lone command in place with SHLVL put back to 1, so the inner shell also believed
 * it was sshd's top-level shell. A `conda init` rc costs ~0.1–0.5 s of CPU; every exec (start, tail, stop,
 * sync, the metrics poll every 3 s) paid it twice on every worker.
 */
export function bashCommand(script: string): string {
  return `bash --norc --noprofile -c ${shQuote(script)}`;
}
