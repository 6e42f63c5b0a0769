import { spawn, type ChildProcess } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { Server, utils, type AuthContext, type Connection, type ParsedKey, type PseudoTtyInfo, type ServerChannel, type Session } from 'ssh2';
import { EmulatorError } from './errors';
import { chipSpecFor } from './catalog';
import { ChipActivity } from './chip-activity';
import { LibtpuMetricsServer, type LibtpuFault } from './libtpu-metrics';
import { serveForwarding } from './ssh-forwarding';
import { ptyArgv, resizePty } from './ssh-pty';
import { LIBTPU_METRICS_PORT } from '../../protocol/tpu-metric-service';

/**
 * The emulator's workers: one SSH server per TPU worker, each on its own loopback address (Linux routes all
 * of 127/8 to lo, so 127.0.1.x needs no setup), each running real commands with bash in its own sandbox
 * folder and the environment a TPU VM worker has. Clients cannot tell it from OpenSSH for what TPU
 * Workbench, OpenSSH's own clients and VS Code's Remote-SSH do: key auth, exec (with env requests, stdin,
 * exit-status / exit-signal), a resizable pty for shells and commands, the sftp subsystem (OpenSSH's own
 * sftp-server), and port forwarding both ways (ssh-forwarding.ts).
 */

export interface WorkerSpec {
  nodeId: string;
  index: number;
  address: string;
  hostnames: string[];
  sandboxDir: string;
  acceleratorType: string;
}

export interface SshWorkerPoolOptions {
  port: number;
  hostKey: string /* OpenSSH private key text */;
  authorizedKey: string /* "ssh-ed25519 AAAA..." line */;
  username: string;
  log?: (msg: string) => void;
  /**
   * Folders put first on the workers' PATH: the emulated VM's "installed software" (the trainer's venv), so
   * workers find the same python3 whether the emulator was started from a shell or from VS Code.
   */
  pathPrefix?: string[];
  /**
   * OS Login, asked at each login as a real VM's sshd asks its AuthorizedKeysCommand: undefined where it is off for
   * that node, else the one username and the keys (`ssh-ed25519 AAAA…`) it accepts; then neither the emulator's own
   * key nor metadata `ssh-keys` let anyone in.
   */
  osLogin?: (nodeId: string) => { username: string; keys: string[] } | undefined;
  /** What every worker's programs also get from the "VM": where its metadata server and Cloud Storage are (vm-services.ts). */
  vmEnv?: (spec: WorkerSpec) => Record<string, string>;
  /** Port of each worker's libtpu metrics service on its own address (default 8431, as on a TPU VM; 0: none). */
  libtpuMetricsPort?: number;
}

/** Time between SIGTERM and SIGKILL when a channel closes or a node goes away. */
const KILL_GRACE_MS = 1500;
/** Env var that marks every process a worker started, so removeNode finds those that left its process group. */
const MARKER_VAR = 'TPW_EMULATOR_WORKER';

interface Worker {
  spec: WorkerSpec;
  server: Server;
  marker: string;
  connections: Set<Connection>;
  children: Set<ChildProcess>;
  /** Set once shutdown began: no new programs may start (they would escape the kill sweep). */
  closing: boolean;
  /** libtpu's runtime metrics service of this worker, when it could listen. */
  libtpu?: LibtpuMetricsServer;
}

export class SshWorkerPool {
  private readonly workers = new Map<string, Worker>(); // key: `${nodeId}/${index}`
  private readonly allowedKey: ParsedKey;
  /** Extra keys per node, from its metadata `ssh-keys` (UpdateNode). */
  private readonly nodeKeys = new Map<string, ParsedKey[]>();

  constructor(private readonly opts: SshWorkerPoolOptions) {
    const parsed = utils.parseKey(opts.authorizedKey);
    if (parsed instanceof Error) throw new EmulatorError('INVALID_ARGUMENT', `The emulator's authorized key cannot be parsed: ${parsed.message}`);
    this.allowedKey = parsed;
  }

  /** Starts the SSH server for one worker; resolves once it listens. */
  async addWorker(spec: WorkerSpec): Promise<void> {
    const key = `${spec.nodeId}/${spec.index}`;
    if (this.workers.has(key)) throw new EmulatorError('ALREADY_EXISTS', `Emulated worker ${spec.index} of ${spec.nodeId} already has an SSH server.`);
    fs.mkdirSync(spec.sandboxDir, { recursive: true });
    const worker: Worker = {
      spec,
      server: new Server({ hostKeys: [this.opts.hostKey] }, (conn, info) => this.onConnection(worker, conn, info.ip, info.port)),
      // Derived from the sandbox, not from this process: an emulator restarted on the same state still finds
      // (and on delete, kills) what the worker started before, and two emulators never share a marker.
      marker: `${key}@${path.resolve(spec.sandboxDir)}`,
      connections: new Set(),
      children: new Set(),
      closing: false,
    };
    // In the map before listening, so a removeNode() that races with this call still finds it.
    this.workers.set(key, worker);
    await new Promise<void>((resolve, reject) => {
      const onError = (e: NodeJS.ErrnoException) => {
        if (this.workers.get(key) === worker) this.workers.delete(key);
        reject(new EmulatorError('UNAVAILABLE', `Emulated worker ${spec.index} of ${spec.nodeId} cannot listen on ${spec.address}:${this.opts.port}: ${e.code ?? e.message}`, { cause: e }));
      };
      worker.server.once('error', onError);
      worker.server.listen(this.opts.port, spec.address, () => {
        worker.server.off('error', onError);
        worker.server.on('error', (e: Error) => this.log(`worker ${key}: server error: ${e.message}`));
        resolve();
      });
    });
    const addr = worker.server.address() as AddressInfo | null;
    if (addr) this.log(`worker ${key}: ssh listening on ${addr.address}:${addr.port}`);
    await this.startLibtpu(worker);
  }

  /**
   * The worker's libtpu metrics service. A port already taken there (another emulator on the same addresses)
   * costs only the metrics: the worker itself works, and its chips read as not answering.
   */
  private async startLibtpu(w: Worker): Promise<void> {
    const port = this.opts.libtpuMetricsPort ?? LIBTPU_METRICS_PORT;
    if (port === 0) return;
    const key = `${w.spec.nodeId}/${w.spec.index}`;
    const activity = new ChipActivity(chipSpecFor(w.spec.acceleratorType), w.marker, MARKER_VAR);
    try {
      const server = await LibtpuMetricsServer.start(activity, w.spec.address, port, `${w.spec.nodeId}-w-${w.spec.index}`, (m) => this.log(`worker ${key}: ${m}`));
      if (w.closing) await server.close();
      else w.libtpu = server;
    } catch (e) {
      this.log(`worker ${key}: libtpu metrics service cannot listen on ${w.spec.address}:${port}: ${(e as Error).message}`);
    }
  }

  /** Whether `port` is one of the worker's own loopback services (on its address), and whether it listens now. */
  private ownLoopbackService(w: Worker, port: number): 'serving' | 'down' | undefined {
    if (port !== (this.opts.libtpuMetricsPort ?? LIBTPU_METRICS_PORT) || port === 0) return undefined;
    return w.libtpu?.listening ? 'serving' : 'down';
  }

  /** Tests: makes worker `index` of `nodeId`'s libtpu metrics service go down, slow, or answer garbage (undefined: well again). */
  async setLibtpuFault(nodeId: string, index: number, fault: LibtpuFault | undefined): Promise<void> {
    const w = this.workers.get(`${nodeId}/${index}`);
    if (!w?.libtpu) throw new EmulatorError('NOT_FOUND', `Emulated worker ${index} of ${nodeId} has no libtpu metrics service.`);
    await w.libtpu.setFault(fault);
  }

  /** Stops every worker of a node: closes its servers and connections and kills everything it started. */
  async removeNode(nodeId: string): Promise<void> {
    const mine = [...this.workers.entries()].filter(([, w]) => w.spec.nodeId === nodeId);
    for (const [k] of mine) this.workers.delete(k);
    await Promise.all(mine.map(([, w]) => this.shutdownWorker(w)));
  }

  /** Stops all workers. Leaves no listening socket and no child process behind. */
  async close(): Promise<void> {
    const all = [...this.workers.values()];
    this.workers.clear();
    await Promise.all(all.map((w) => this.shutdownWorker(w)));
  }

  private log(msg: string): void {
    this.opts.log?.(msg);
  }

  private async shutdownWorker(w: Worker): Promise<void> {
    w.closing = true;
    await w.libtpu?.close();
    const closed = new Promise<void>((resolve) => w.server.close(() => resolve()));
    for (const c of w.connections) c.end();
    const groups = [...w.children].map((c) => c.pid).filter((p): p is number => typeof p === 'number');
    await killGroups(groups, markedProcesses(w.marker));
    // end() is a polite disconnect; a client that does not hang up must not keep the server open. ssh2's
    // server Connection has no public destroy(), so reach for its socket (internal, hence the guard).
    const timer = setTimeout(() => {
      for (const c of w.connections) (c as unknown as { _sock?: { destroy(): void } })._sock?.destroy?.();
    }, 1000);
    await closed;
    clearTimeout(timer);
  }

  private onConnection(w: Worker, conn: Connection, ip: string, port: number): void {
    w.connections.add(conn);
    conn.on('close', () => w.connections.delete(conn));
    conn.on('error', (e: Error) => this.log(`worker ${w.spec.nodeId}/${w.spec.index}: connection from ${ip}:${port}: ${e.message}`));
    conn.on('authentication', (ctx) => this.authenticate(ctx, w.spec.nodeId));
    conn.on('ready', () => {
      conn.on('session', (accept) => this.onSession(w, accept(), { ip, port }));
      serveForwarding(conn, { workerAddress: w.spec.address, ownLoopbackService: (port) => this.ownLoopbackService(w, port), closing: () => w.closing, log: (m) => this.log(`worker ${w.spec.nodeId}/${w.spec.index}: ${m}`) });
    });
  }

  /** Public-key auth only: the right user, the authorized key, and a signature made with its private half. */
  /**
   * The node's metadata `ssh-keys` (lines `user:ssh-ed25519 AAAA… comment`), as the guest agent of a real TPU
   * VM installs them: keys for our user are accepted on every worker of that node from then on.
   */
  setNodeKeys(nodeId: string, sshKeys: string): void {
    const keys: ParsedKey[] = [];
    for (const line of sshKeys.split('\n')) {
      const m = /^([^:\s]+):(.+)$/.exec(line.trim());
      if (!m || m[1] !== this.opts.username) continue;
      const parsed = utils.parseKey(m[2].trim());
      if (!(parsed instanceof Error)) keys.push(parsed);
    }
    this.nodeKeys.set(nodeId, keys);
  }

  private authenticate(ctx: AuthContext, nodeId: string): void {
    const osLogin = this.opts.osLogin?.(nodeId);
    if (ctx.method !== 'publickey' || ctx.username !== (osLogin ? osLogin.username : this.opts.username)) {
      ctx.reject(['publickey']);
      return;
    }
    const offered = ctx.key.data;
    const candidates = osLogin
      ? osLogin.keys.map((k) => utils.parseKey(k)).flatMap((k) => (k instanceof Error ? [] : Array.isArray(k) ? k : [k]))
      : [this.allowedKey, ...(this.nodeKeys.get(nodeId) ?? [])];
    const match = candidates.find((k) => {
      const allowed = k.getPublicSSH();
      return offered.length === allowed.length && crypto.timingSafeEqual(offered, allowed);
    });
    if (!match) {
      ctx.reject(['publickey']);
      return;
    }
    // Without a signature the client only asks "would this key do?"; with one, it must verify.
    if (ctx.signature && ctx.blob && match.verify(ctx.blob, ctx.signature, ctx.hashAlgo) !== true) {
      ctx.reject(['publickey']);
      return;
    }
    ctx.accept();
  }

  private onSession(w: Worker, session: Session, peer: { ip: string; port: number }): void {
    const env: Record<string, string> = {};
    let pty: PseudoTtyInfo | undefined;
    let child: ChildProcess | undefined;
    session.on('env', (accept, _reject, info) => {
      // OpenSSH honours only AcceptEnv names; the emulator honours all, which only matters for tests.
      env[info.key] = info.val;
      accept?.();
    });
    session.on('pty', (accept, _reject, info) => {
      pty = info;
      accept?.();
    });
    session.on('window-change', (accept, _reject, info) => {
      accept?.();
      if (pty) pty = { ...pty, rows: info.rows, cols: info.cols };
      if (child && pty) resizePty(child, info.rows, info.cols);
    });
    session.on('signal', (accept, _reject, info) => {
      accept?.();
      signalGroup(child?.pid, `SIG${info.name.replace(/^SIG/, '')}`);
    });
    // With a pty the program runs on a real terminal of the client's size (ssh-pty.ts), as sshd does.
    const start = (accept: () => ServerChannel, command: string[]) => {
      const argv = pty ? ptyArgv(command, pty.rows, pty.cols) : command;
      child = this.spawnFor(w, accept(), argv, pty ? { TERM: pty.term || 'xterm-256color', ...env } : env, peer, pty !== undefined);
    };
    session.on('exec', (accept, reject, info) => {
      if (w.closing) return reject?.();
      start(accept, ['bash', '-c', info.command]);
    });
    session.on('shell', (accept, reject) => {
      if (w.closing) return reject?.();
      start(accept, ['bash', '-i']);
    });
    session.on('subsystem', (accept, reject, info) => {
      const server = info.name === 'sftp' ? sftpServerPath() : undefined;
      if (w.closing || !server) {
        if (info.name === 'sftp') this.log(`worker ${w.spec.nodeId}/${w.spec.index}: sftp refused: no sftp-server found (install openssh-sftp-server)`);
        return reject?.();
      }
      // OpenSSH's own server, started in the worker's home: scp (SFTP mode), sftp and editors' file access.
      child = this.spawnFor(w, accept(), [server], env, peer);
    });
  }

  /** `withPty`: argv is ptyArgv's, which takes resize requests on fd 3. */
  private spawnFor(w: Worker, channel: ServerChannel, argv: string[], sessionEnv: Record<string, string>, peer: { ip: string; port: number }, withPty = false): ChildProcess {
    const { spec } = w;
    const child = spawn(argv[0], argv.slice(1), {
      cwd: spec.sandboxDir,
      // Own process group: closing the channel or removing the node kills the program and all it started.
      detached: true,
      // Only the pty relay gets fd 3 (its resize requests): any other program would pass it on to what it
      // leaves running (a detached run), and the session would not end until that did.
      stdio: withPty ? ['pipe', 'pipe', 'pipe', 'pipe'] : 'pipe',
      // What a login on a fresh TPU VM has, not this process's environment: the emulator may have been
      // started from a shell holding HF_TOKEN or cloud credentials, and a run that works only because they
      // leaked in would fail on a real VM. PATH keeps this machine's (the VM's "installed software"), after the
      // trainer's venv.
      env: {
        PATH: [...(this.opts.pathPrefix ?? []), process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin'].join(':'),
        HOME: spec.sandboxDir,
        PWD: spec.sandboxDir,
        USER: this.opts.username,
        LOGNAME: this.opts.username,
        SHELL: '/bin/bash',
        LANG: 'C.UTF-8', // Ubuntu's /etc/default/locale on a TPU VM image; a client's SendEnv LANG replaces it
        TPU_WORKER_ID: String(spec.index),
        TPU_WORKER_HOSTNAMES: spec.hostnames.join(','),
        TPU_ACCELERATOR_TYPE: spec.acceleratorType,
        SSH_CONNECTION: `${peer.ip} ${peer.port} ${spec.address} ${this.opts.port}`,
        SSH_CLIENT: `${peer.ip} ${peer.port} ${this.opts.port}`,
        ...(this.opts.vmEnv?.(spec) ?? {}),
        ...sessionEnv,
        [MARKER_VAR]: w.marker,
      },
    });
    w.children.add(child);
    let exited = false;
    child.on('error', (e) => {
      channel.stderr.write(`emulator: cannot start ${JSON.stringify(argv[0])}: ${e.message}\n`);
      finish(127, null);
    });
    const [stdin, stdout, stderr, control] = [child.stdin, child.stdout, child.stderr, child.stdio[3]];
    if (!stdin || !stdout || !stderr) throw new Error('spawn without pipes');
    channel.pipe(stdin).on('error', () => undefined); // EPIPE when the program ignores its stdin
    control?.on('error', () => undefined); // the pty relay's control pipe, when the relay is gone
    stdout.pipe(channel, { end: false });
    stderr.pipe(channel.stderr, { end: false });
    // 'close' (not 'exit'): all of the program's output has been read by then.
    child.on('close', (code, signal) => finish(code, signal));
    channel.on('close', () => {
      // The client went away (or closed the channel) while the program runs: end it like sshd's hangup would.
      if (!exited && child.pid) void killGroups([child.pid], []);
    });

    function finish(code: number | null, signal: NodeJS.Signals | null): void {
      if (exited) return;
      exited = true;
      w.children.delete(child);
      // exit() needs the channel still writable, so it goes out before end(); and stderr must be flushed
      // before end() closes the channel, or its tail would be dropped.
      try {
        if (signal) channel.exit(signal.replace(/^SIG/, ''), false, '');
        else channel.exit(code ?? 0);
        channel.stderr.end(() => channel.end());
      } catch {
        // the client already closed the channel
      }
    }
    return child;
  }
}

function signalGroup(pgid: number | undefined, sig: string): void {
  if (!pgid) return;
  try {
    process.kill(-pgid, sig as NodeJS.Signals);
  } catch {
    // group already gone
  }
}

/** pid → [pgid, state] from /proc; empty off Linux. */
function processTable(): Map<number, [number, string]> {
  const table = new Map<number, [number, string]>();
  let entries: string[] = [];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return table;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
      // After the parenthesised command name: state, ppid, pgrp, ...
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      table.set(Number(e), [Number(pgrp), state]);
    } catch {
      // exited meanwhile
    }
  }
  return table;
}

/**
 * True while the group or pid has a member that is not a zombie. `kill(…, 0)` alone also counts zombies, and
 * orphans stay zombies until init reaps them (in some containers, never), which would stall every shutdown.
 */
function anyLive(pgids: number[], pids: number[]): boolean {
  const table = processTable();
  if (table.size === 0) {
    const probe = (target: number) => {
      try {
        process.kill(target, 0);
        return true;
      } catch {
        return false;
      }
    };
    return pgids.some((g) => probe(-g)) || pids.some(probe);
  }
  for (const [pid, [pgrp, state]] of table) {
    if (state === 'Z') continue;
    if (pgids.includes(pgrp) || pids.includes(pid)) return true;
  }
  return false;
}

/**
 * Pids whose environment carries this worker's marker: programs that left the process group (e.g. a run's
 * own `set -m` job, or anything that called setsid) are still the worker's and must go with it.
 */
function markedProcesses(marker: string): number[] {
  const needle = Buffer.from(`\0${MARKER_VAR}=${marker}\0`);
  const pids: number[] = [];
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return pids; // not Linux: process groups are all we have
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    const pid = Number(e);
    if (pid === process.pid) continue;
    try {
      const environ = fs.readFileSync(`/proc/${e}/environ`);
      if (Buffer.concat([Buffer.from([0]), environ]).includes(needle)) pids.push(pid);
    } catch {
      // exited meanwhile, or not ours to read
    }
  }
  return pids;
}

/** SIGTERM to the groups and pids, then SIGKILL to whatever is left after the grace period. */
async function killGroups(pgids: number[], pids: number[]): Promise<void> {
  for (const g of pgids) signalGroup(g, 'SIGTERM');
  for (const p of pids) {
    try {
      process.kill(p, 'SIGTERM');
    } catch {
      // gone
    }
  }
  const deadline = Date.now() + KILL_GRACE_MS;
  while (anyLive(pgids, pids) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  for (const g of pgids) signalGroup(g, 'SIGKILL');
  for (const p of pids) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

let sftpServer: string | null | undefined;

/**
 * OpenSSH's sftp-server binary: where this machine's sshd config says, else the places distributions put it
 * (Debian/Ubuntu /usr/lib/openssh, Fedora/RHEL /usr/libexec/openssh, macOS and BSDs /usr/libexec, Arch
 * /usr/lib/ssh), else on PATH. Looked up once.
 */
function sftpServerPath(): string | undefined {
  if (sftpServer !== undefined) return sftpServer ?? undefined;
  const candidates: string[] = [];
  try {
    const m = /^\s*Subsystem\s+sftp\s+(\/\S+)/im.exec(fs.readFileSync('/etc/ssh/sshd_config', 'utf8'));
    if (m) candidates.push(m[1]);
  } catch {
    // no sshd config here
  }
  candidates.push('/usr/lib/openssh/sftp-server', '/usr/libexec/openssh/sftp-server', '/usr/libexec/sftp-server', '/usr/lib/ssh/sftp-server', '/usr/local/libexec/sftp-server');
  for (const dir of (process.env.PATH ?? '').split(':').filter(Boolean)) candidates.push(path.join(dir, 'sftp-server'));
  sftpServer =
    candidates.find((c) => {
      try {
        fs.accessSync(c, fs.constants.X_OK);
        return fs.statSync(c).isFile();
      } catch {
        return false;
      }
    }) ?? null;
  return sftpServer ?? undefined;
}
