import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { freePort } from '../../emulator/src/free-port';

/**
 * A real OpenSSH sshd on a loopback address, for tests: real TPU VMs run OpenSSH, so the SSH stack is tested
 * against the real thing. Each instance has its own folder (host key, client key, authorized_keys, config,
 * log), listens on its own address/port, and is gone after stop().
 */

export interface SshdOptions {
  /** Loopback address to listen on (default 127.0.0.1); any 127.x.y.z works on Linux without setup. */
  host?: string;
  /** Port (default: a free one). */
  port?: number;
  /** Reuse this host key (private key file) instead of generating one. */
  hostKeyFile?: string;
  /** Reuse this client key pair instead of generating one: private key file; `.pub` next to it. */
  clientKeyFile?: string;
  /** Names for sshd's AcceptEnv (default none: our env travels in a 0600 file anyway). */
  acceptEnv?: string[];
  /** Extra sshd_config lines. */
  extraConfig?: string[];
  /** Keep the instance's folder (keys, config, log) after stop(), for debugging. */
  keepDir?: boolean;
}

export interface SshdInstance {
  host: string;
  port: number;
  username: string;
  /** Client private key (OpenSSH format) that the server accepts. */
  privateKey: string;
  privateKeyFile: string;
  /** Host public key line, `ssh-ed25519 AAAA... comment`. */
  hostPublicKey: string;
  hostKeyFile: string;
  dir: string;
  logFile: string;
  /** How many logins sshd accepted so far (counted from its log). */
  acceptedLogins(): number;
  stop(): Promise<void>;
}

const SSHD = '/usr/sbin/sshd';

export function sshdAvailable(): boolean {
  return fs.existsSync(SSHD);
}

/** A private key file made with ssh-keygen (ed25519, no passphrase). */
export function makeKeyPair(file: string, comment = 'tpw-test'): void {
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', file], { stdio: 'ignore' });
}

export { freePort };

/** Resolves once something accepts TCP connections and speaks SSH on host:port. */
export async function waitForSsh(host: string, port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const sock = net.connect({ host, port });
      const done = (v: boolean) => {
        sock.destroy();
        resolve(v);
      };
      sock.setTimeout(1000, () => done(false));
      sock.once('data', (b) => done(b.toString('latin1').startsWith('SSH-')));
      sock.once('error', () => done(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`sshd on ${host}:${port} did not come up within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function startSshd(opts: SshdOptions = {}): Promise<SshdInstance> {
  const host = opts.host ?? '127.0.0.1';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-sshd-'));
  const isRoot = process.getuid?.() === 0;
  const username = os.userInfo().username;
  if (isRoot) fs.mkdirSync('/run/sshd', { recursive: true, mode: 0o755 }); // privilege separation dir

  const hostKeyFile = path.join(dir, 'ssh_host_ed25519_key');
  if (opts.hostKeyFile) fs.copyFileSync(opts.hostKeyFile, hostKeyFile);
  else makeKeyPair(hostKeyFile, 'tpw-test-host');
  fs.chmodSync(hostKeyFile, 0o600);
  const hostPublicKey = opts.hostKeyFile && fs.existsSync(`${opts.hostKeyFile}.pub`)
    ? fs.readFileSync(`${opts.hostKeyFile}.pub`, 'utf8').trim()
    : execFileSync('ssh-keygen', ['-y', '-f', hostKeyFile], { encoding: 'utf8' }).trim();

  const privateKeyFile = opts.clientKeyFile ?? path.join(dir, 'client_key');
  if (!opts.clientKeyFile) makeKeyPair(privateKeyFile, 'tpw-test-client');
  const clientPub = fs.readFileSync(`${privateKeyFile}.pub`, 'utf8');
  const authorizedKeys = path.join(dir, 'authorized_keys');
  fs.writeFileSync(authorizedKeys, clientPub, { mode: 0o600 });

  const logFile = path.join(dir, 'sshd.log');
  const configFile = path.join(dir, 'sshd_config');
  let port = opts.port ?? (await freePort(host));
  let proc: ChildProcess | undefined;
  for (let attempt = 0; ; attempt++) {
    fs.writeFileSync(
      configFile,
      [
        `ListenAddress ${host}:${port}`,
        `HostKey ${hostKeyFile}`,
        `AuthorizedKeysFile ${authorizedKeys}`,
        `PidFile ${path.join(dir, 'sshd.pid')}`,
        'PubkeyAuthentication yes',
        'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        'PermitRootLogin prohibit-password',
        'UsePAM no',
        'StrictModes no',
        'LogLevel VERBOSE',
        // The runner opens a channel per command on one shared connection; keep OpenSSH's limits out of the way.
        'MaxSessions 32',
        'MaxStartups 64',
        'Subsystem sftp internal-sftp',
        ...(opts.acceptEnv && opts.acceptEnv.length > 0 ? [`AcceptEnv ${opts.acceptEnv.join(' ')}`] : []),
        ...(opts.extraConfig ?? []),
        '',
      ].join('\n'),
    );
    const logFd = fs.openSync(logFile, 'a');
    proc = spawn(SSHD, ['-D', '-e', '-f', configFile], { stdio: ['ignore', logFd, logFd] });
    fs.closeSync(logFd);
    const exited = new Promise<number | null>((resolve) => proc!.once('exit', (code) => resolve(code)));
    const up = waitForSsh(host, port).then(() => 'up' as const);
    const outcome = await Promise.race([up, exited.then(() => 'exited' as const)]).catch((e: Error) => e);
    if (outcome === 'up') break;
    proc.kill('SIGKILL');
    const log = fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8') : '';
    // A port picked as free can be taken by the time sshd binds it: try another.
    if (opts.port === undefined && attempt < 3 && /Address already in use/.test(log)) {
      port = await freePort(host);
      continue;
    }
    throw new Error(`sshd failed to start on ${host}:${port}: ${outcome instanceof Error ? outcome.message : 'exited'}\n${log}`);
  }
  const child = proc;

  return {
    host,
    port,
    username,
    privateKey: fs.readFileSync(privateKeyFile, 'utf8'),
    privateKeyFile,
    hostPublicKey,
    hostKeyFile,
    dir,
    logFile,
    acceptedLogins: () => (fs.readFileSync(logFile, 'utf8').match(/Accepted publickey for /g) ?? []).length,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      // Killing the listening sshd leaves its per-connection children running: end them too.
      for (const pid of descendants(child.pid!)) {
        try {
          process.kill(pid, 'SIGTERM');
        } catch {
          // already gone
        }
      }
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await gone;
      clearTimeout(timer);
      if (!opts.keepDir) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** All descendants of a pid, from /proc (Linux). */
export function descendants(root: number): number[] {
  const parent = new Map<number, number>();
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      // Field 4 of /proc/<pid>/stat is the ppid; the command name (field 2) may contain spaces, so split after ')'.
      const stat = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parent.set(Number(e), ppid);
    } catch {
      // exited meanwhile
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const [pid, pp] of parent) {
      if (pp === p) {
        out.push(pid);
        walk(pid);
      }
    }
  };
  walk(root);
  return out;
}
