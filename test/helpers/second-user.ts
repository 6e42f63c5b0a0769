import { execFile } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/**
 * Another local user of this machine, for the tests of what the product and the emulator let other users do
 * (attach to a debugger, read a bucket, ask the metadata server for a token). Made with `useradd` and driven
 * with `runuser`, so it needs root; `SECOND_USER_SKIP` says why a test is skipped otherwise.
 */

export const SECOND_USER_SKIP: string | false = process.getuid?.() !== 0 ? 'needs root to make a second local user (useradd) and act as it (runuser)' : false;

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function runCommand(cmd: string, args: string[], opts: { timeoutMs?: number; input?: string } = {}): Promise<CommandResult> {
  return new Promise((resolve) => {
    const child = execFile(cmd, args, { encoding: 'utf8', timeout: opts.timeoutMs ?? 60_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
    if (opts.input !== undefined) child.stdin?.end(opts.input);
  });
}

export interface SecondUser {
  readonly name: string;
  /** A folder this user can read (scripts for it to run go there); removed with the user. */
  readonly dir: string;
  /** Runs a command as this user. */
  as(cmd: string, args: string[], opts?: { timeoutMs?: number; input?: string }): Promise<CommandResult>;
  /** Writes a file into `dir` that this user can read; returns its path. */
  file(name: string, text: string): string;
}

/** Makes the user in `before` and removes it (and its folder) in `after`. */
export function secondUserFixture(hooks: { before: (fn: () => Promise<void>) => void; after: (fn: () => Promise<void>) => void }): SecondUser {
  const name = `tpwsec-${crypto.randomBytes(3).toString('hex')}`;
  let dir = '';
  let made = false;
  const user: SecondUser = {
    name,
    get dir() {
      return dir;
    },
    as: (cmd, args, opts) => runCommand('runuser', ['-u', name, '--', cmd, ...args], opts),
    file(file, text) {
      const p = path.join(dir, file);
      fs.writeFileSync(p, text, { mode: 0o644 });
      return p;
    },
  };
  hooks.before(async () => {
    const r = await runCommand('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', name]);
    if (r.code !== 0) throw new Error(`useradd ${name} failed: ${r.stderr}`);
    made = true;
    dir = fs.mkdtempSync(path.join(os.tmpdir(), `${name}-`));
    fs.chmodSync(dir, 0o755);
  });
  hooks.after(async () => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    if (made) await runCommand('userdel', [name]);
  });
  return user;
}
