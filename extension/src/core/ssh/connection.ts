import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { Duplex } from 'node:stream';
import { Client, type ClientChannel, type ConnectConfig, type PseudoTtyOptions } from 'ssh2';
import { TpwError, describeError } from '../errors';
import { knownHostsFile } from '../paths';
import { askingHostVerifier, hostKeyAlgorithmsFor, type HostKeyQuestion } from './host-key-trust';
import { checkHostKey, knownKeyTypes, makeHostVerifier, UnknownHostKeyError, type HostKeyCheck } from './known-hosts';
import type { HostKeyPolicy, SshTarget } from './types';
import { SshConnection, targetKey, targetLabel } from './ssh-connection';

export { hostKeyAlgorithmsFor, hostKeyOptionsFor, type HostKeyQuestion } from './host-key-trust';
export { channelEnd, SshConnection, targetKey, targetLabel } from './ssh-connection';

/**
 * One SSH connection per target (user@host:port), shared by everyone who needs that host: sync, the run,
 * log tails, live metrics, terminals. Each process has one ConnectionManager (VS Code: the Ctx owns it; the
 * CLI: cli/connections.ts), so the sharing holds across features, not just within one call. Callers that ask
 * while a connect is in flight share its promise, so N concurrent requests make one TCP connection (the
 * vscode-sshfs pattern). Channels (exec and shell) are counted so an idle connection can be closed, and a
 * connection that drops is forgotten so the next request reconnects.
 */

export interface ConnectionManagerOptions {
  hostKeyPolicy?: HostKeyPolicy;
  /** known_hosts file; defaults to `<TPW_HOME>/known_hosts`. */
  knownHostsPath?: string;
  /** SSH-level keepalive, so NATs and dead peers are noticed (default 15 s, 0 disables). */
  keepaliveIntervalMs?: number;
  keepaliveCountMax?: number;
  /** Close a connection after this long with no open channel (default 120 s, 0 = never). */
  idleCloseMs?: number;
  /** Handshake + auth deadline (default 20 s). */
  readyTimeoutMs?: number;
  /**
   * Channels open at once per connection; more wait in line. OpenSSH's MaxSessions defaults to 10 and refuses
   * the 11th channel outright, so the default stays below it.
   */
  maxChannels?: number;
  /** Diagnostics (never receives secrets). */
  log?: (msg: string) => void;
  /**
   * First contact with a host under the strict policy: ask (VS Code: a modal with the fingerprint). true
   * records the key; false refuses with the fingerprint in the error. A changed key is refused without asking.
   */
  confirmHostKey?: (q: HostKeyQuestion) => Promise<boolean>;
}

const SOCKET_REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused (is the VM up and sshd listening?)',
  ECONNRESET: 'connection reset by the server',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ENOTFOUND: 'host name not found',
  EAI_AGAIN: 'host name lookup failed (temporary DNS failure)',
  EADDRNOTAVAIL: 'address not available',
};

/** A host key refusal names the address; on a pod the worker's index is what the user knows it by. */
function namingTarget(t: SshTarget, e: TpwError): TpwError {
  const label = targetLabel(t);
  return e.message.startsWith(label) ? e : new TpwError(e.code, `${label}: ${e.message}`, { cause: e });
}

/** Turns whatever ssh2 or the socket threw into a sentence that names the worker. */
export function connectError(t: SshTarget, err: unknown): TpwError {
  if (err instanceof TpwError) return err;
  const label = targetLabel(t);
  const e = err as Error & { code?: string; level?: string };
  let reason: string;
  if (e.level === 'client-authentication') {
    reason = `authentication failed for user "${t.username}" (the server did not accept the SSH key)`;
  } else if (e.level === 'client-timeout') {
    reason = 'timed out during SSH handshake';
  } else if (e.code && SOCKET_REASONS[e.code]) {
    reason = SOCKET_REASONS[e.code];
  } else {
    reason = describeError(err);
  }
  return new TpwError('SSH_CONNECT', `${label}: ${reason}`, { cause: err });
}

/** Idle close of connections a retired manager still makes. */
const RETIRED_IDLE_CLOSE_MS = 2000;

/** The host key a connection was verified with, and the known_hosts file as it was when last checked. */
interface VerifiedKey {
  check: HostKeyCheck;
  key: Buffer;
  fileMtimeMs: number;
  /** known_hosts now says something else for this host: new callers get a new connection. */
  stale: boolean;
}

function mtimeOf(file: string): number {
  try {
    return fs.statSync(file).mtimeMs;
  } catch {
    return 0;
  }
}

export class ConnectionManager {
  private readonly pending = new Map<string, Promise<SshConnection>>();
  private readonly verifiedKeys = new WeakMap<SshConnection, VerifiedKey>();
  private readonly live = new Set<SshConnection>();
  private disposed = false;
  private retired = false;
  /** TCP connects attempted (tests assert connection sharing with it). */
  connectAttempts = 0;

  constructor(private readonly options: ConnectionManagerOptions = {}) {}

  /** The shared connection to `target`, connecting if there is none. */
  get(target: SshTarget): Promise<SshConnection> {
    if (this.disposed) return Promise.reject(new TpwError('CANCELLED', `${targetLabel(target)}: the SSH connection manager was disposed`));
    const key = targetKey(target);
    const existing = this.pending.get(key);
    if (existing) {
      return existing.then((conn) => {
        if (!conn.usable) return this.reconnect(target, existing);
        return this.stillTrusted(conn) ? conn : this.replace(target, existing, conn);
      });
    }
    const forget = () => {
      if (this.pending.get(key) === p) this.pending.delete(key);
    };
    const p: Promise<SshConnection> = this.connect(target).then((conn) => {
      // Forget a dropped or idle-closed connection so the next get() reconnects.
      conn.onClose(forget);
      return conn;
    });
    this.pending.set(key, p);
    // A failed connect must not be cached either: the next caller tries again.
    p.catch(forget);
    return p;
  }

  /**
   * An interactive login shell on a pty on `target`'s shared connection: what a terminal on a worker opens.
   * The shell counts as a channel of that connection, so it is not idle-closed while the shell is open.
   */
  async openShell(target: SshTarget, window: PseudoTtyOptions): Promise<ClientChannel> {
    return (await this.get(target)).shell(window);
  }

  /**
   * For a manager being replaced (the backend changed): closes the connections nothing uses now, and the
   * others when their last channel closes, so a run still being watched is not cut off. Callers holding this
   * manager can still reconnect (a watch resuming after a drop); such connections close soon after they idle.
   */
  retire(): void {
    this.retired = true;
    for (const c of this.live) c.retire();
  }

  /**
   * A kept connection was verified when it was made; if known_hosts changed since (the user, `ssh-keygen -R`,
   * another tpw recording a new key after a VM was recreated) and now names a different key for the host,
   * the connection is not handed out again: the next connect is checked against the file as it is now, so a
   * changed key is refused exactly as it would be without a kept connection. A removed entry is no reason.
   */
  private stillTrusted(conn: SshConnection): boolean {
    const v = this.verifiedKeys.get(conn);
    if (!v || conn.closed) return true;
    if (!v.stale) {
      const mtime = mtimeOf(v.check.file ?? knownHostsFile());
      if (mtime === v.fileMtimeMs) return true;
      v.fileMtimeMs = mtime;
      try {
        checkHostKey({ ...v.check, policy: 'strict' }, v.key);
      } catch (e) {
        if (!(e instanceof UnknownHostKeyError)) v.stale = true;
      }
    }
    return !v.stale;
  }

  /** The cached connection is gone (or going): forget it and connect again, sharing one new connect. */
  private reconnect(target: SshTarget, cached: Promise<SshConnection>): Promise<SshConnection> {
    if (this.pending.get(targetKey(target)) === cached) this.pending.delete(targetKey(target));
    return this.get(target);
  }

  private replace(target: SshTarget, cached: Promise<SshConnection>, conn: SshConnection): Promise<SshConnection> {
    (this.options.log ?? (() => undefined))(`ssh: ${conn.label}: known_hosts changed for it; connecting again`);
    if (this.pending.get(targetKey(target)) === cached) this.pending.delete(targetKey(target));
    conn.retire(); // channels in flight finish on it
    return this.get(target);
  }

  /** Closes every connection; later get() calls fail. */
  dispose(): void {
    this.disposed = true;
    for (const c of this.live) c.close();
    this.live.clear();
    this.pending.clear();
  }

  /** The socket to speak SSH over when the target is behind a jump host or a proxy command. */
  private async tunnel(target: SshTarget): Promise<Duplex | undefined> {
    if (target.proxyJump) {
      const jump = await this.get(target.proxyJump);
      return new Promise<Duplex>((resolve, reject) => {
        jump.client.forwardOut('127.0.0.1', 0, target.host, target.port, (err, stream) => {
          if (err) reject(new TpwError('SSH_CONNECT', `${targetLabel(target)}: the jump host ${targetLabel(target.proxyJump!)} cannot reach it: ${describeError(err)}`));
          else resolve(stream);
        });
      });
    }
    if (target.proxyCommand && target.proxyCommand.length > 0) {
      const argv = target.proxyCommand.map((a) => a.replace(/%h/g, target.host).replace(/%p/g, String(target.port)));
      const child = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'ignore'] });
      const sock = Duplex.from({ readable: child.stdout, writable: child.stdin });
      // The proxy lives as long as the connection; closing the socket ends it.
      sock.once('close', () => child.kill());
      child.once('error', (e) => sock.destroy(new TpwError('SSH_CONNECT', `${targetLabel(target)}: proxy command ${argv[0]} failed: ${describeError(e)}`)));
      return sock;
    }
    return undefined;
  }

  private async connect(target: SshTarget): Promise<SshConnection> {
    const sock = await this.tunnel(target);
    return this.handshake(target, sock);
  }

  private handshake(target: SshTarget, sock: Duplex | undefined): Promise<SshConnection> {
    const o = this.options;
    const file = o.knownHostsPath ?? knownHostsFile();
    const log = o.log ?? (() => undefined);
    this.connectAttempts++;
    return new Promise<SshConnection>((resolve, reject) => {
      const client = new Client();
      let hostKeyError: TpwError | undefined;
      let seenKey: Buffer | undefined;
      let settled = false;
      const check = { host: target.host, port: target.port, alias: target.hostKeyAlias, policy: o.hostKeyPolicy ?? 'accept-new', file };
      const asking = o.confirmHostKey && askingHostVerifier(check, target, o.confirmHostKey, (e) => (hostKeyError = e), log);
      const plain = makeHostVerifier(check, (e) => (hostKeyError = e), log);
      const askingVerifier = (key: Buffer, verify: (ok: boolean) => void): void => {
        seenKey = key;
        if (asking) asking(key, verify);
      };
      const plainVerifier = (key: Buffer): boolean => {
        seenKey = key;
        return plain(key);
      };
      const config: ConnectConfig = {
        host: target.host,
        port: target.port,
        ...(sock ? { sock } : {}),
        username: target.username,
        privateKey: target.privateKey,
        keepaliveInterval: o.keepaliveIntervalMs ?? 15_000,
        keepaliveCountMax: o.keepaliveCountMax ?? 4,
        readyTimeout: o.readyTimeoutMs ?? 20_000,
        // Only the key: never fall back to "none"/password prompts that cannot be answered here.
        authHandler: ['publickey'],
        hostVerifier: o.confirmHostKey ? askingVerifier : plainVerifier,
        algorithms: { serverHostKey: hostKeyAlgorithmsFor(knownKeyTypes(check)) },
      };
      const fail = (err: unknown) => {
        if (settled) return;
        settled = true;
        client.destroy();
        reject(hostKeyError ? namingTarget(target, hostKeyError) : connectError(target, err));
      };
      client.once('ready', () => {
        if (settled) return;
        settled = true;
        // A retired manager's new connections (a watch reconnecting) serve their caller, then go soon after.
        const idleCloseMs = this.retired ? RETIRED_IDLE_CLOSE_MS : (o.idleCloseMs ?? 120_000);
        const conn = new SshConnection(client, target, { maxChannels: o.maxChannels ?? 8, idleCloseMs });
        this.live.add(conn);
        if (seenKey) this.verifiedKeys.set(conn, { check, key: seenKey, fileMtimeMs: mtimeOf(file), stale: false });
        conn.onClose(() => {
          this.live.delete(conn);
          log(`ssh: ${conn.label} closed`);
        });
        if (this.disposed) conn.close();
        log(`ssh: ${conn.label} connected`);
        resolve(conn);
      });
      client.on('error', (err) => {
        if (!settled) fail(err);
        else log(`ssh: ${targetLabel(target)}: ${describeError(err)}`);
      });
      client.once('close', () => fail(new Error('connection closed during the SSH handshake')));
      try {
        client.connect(config);
      } catch (e) {
        fail(e);
      }
    });
  }
}
