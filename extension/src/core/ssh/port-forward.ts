import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Duplex } from 'node:stream';
import { TpwError, describeError } from '../errors';
import { targetLabel, type ConnectionManager } from './connection';
import type { SshConnection } from './ssh-connection';
import type { SshTarget } from './types';

/**
 * `ssh -L` over the process's shared connection: a TCP server on this machine's loopback whose every accepted
 * socket becomes a `direct-tcpip` channel to a port on the worker's loopback. Nothing is opened on the VM.
 *
 * The channel is asked of the ConnectionManager per accepted socket, so a dropped connection (a sleeping
 * laptop, a restarted sshd) costs only the sockets that were open on it: the next one connects again, and the
 * local port, the URL the user opened and any launch configuration pointing at it stay valid.
 */

export interface PortForwardSpec {
  target: SshTarget;
  /** The port on the worker. */
  remotePort: number;
  /** The host as the worker resolves it (default `localhost`: what TensorBoard, Jupyter and debugpy bind). */
  remoteHost?: string;
  /** The local port: a number to insist on (refused if taken), or undefined for a free one. */
  localPort?: number;
  /**
   * Without localPort: try the remote port's number first (TensorBoard on localhost:6006, as VS Code's own
   * port forwarding does). Not for emulated workers: their loopback is this machine's, so a forward listening
   * on the number it forwards to would connect to itself until the worker's server is up.
   */
  samePortFirst?: boolean;
}

export interface PortForwardEvents {
  /** A connection through the forward failed (the worker did not accept, SSH could not connect). */
  onError?: (err: TpwError) => void;
  log?: (msg: string) => void;
}

/** What a forward is, for a list of them (a tree item, `tpw forward`'s output). */
export interface PortForwardInfo {
  label: string;
  remoteHost: string;
  remotePort: number;
  localPort: number;
  url: string;
}

/** What a forward does with each accepted local socket: a channel over the worker's connection, spliced to it. */
abstract class ChannelForward {
  private readonly sockets = new Set<net.Socket>();
  private closed = false;
  /** Sockets accepted and carried to the worker since the forward opened. */
  accepted = 0;

  protected constructor(
    private readonly server: net.Server,
    protected readonly conns: ConnectionManager,
    readonly target: SshTarget,
    private readonly events: PortForwardEvents,
  ) {
    server.on('connection', (sock) => this.carry(sock));
  }

  /** The channel to the worker's end, for one accepted socket. */
  protected abstract channel(conn: SshConnection): Promise<Duplex>;
  /** The worker's end, for messages. */
  protected abstract get where(): string;
  /** The local end, for messages. */
  protected abstract get here(): string;

  get isClosed(): boolean {
    return this.closed;
  }

  /** Sockets open through the forward now. */
  get openSockets(): number {
    return this.sockets.size;
  }

  /** Stops listening and ends every socket carried through it. */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    for (const s of this.sockets) s.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private carry(sock: net.Socket): void {
    this.sockets.add(sock);
    sock.once('close', () => this.sockets.delete(sock));
    sock.on('error', () => undefined); // a browser hanging up mid-request
    // Hold what the client sends until the channel is there: it goes first on the channel.
    sock.pause();
    const where = `${this.where} on ${targetLabel(this.target)}`;
    void this.conns
      .get(this.target)
      .then((conn) => this.channel(conn))
      .then(
        (channel) => {
          if (this.closed || sock.destroyed) {
            channel.destroy();
            return;
          }
          this.accepted++;
          splice(sock, channel);
        },
        (e: unknown) => {
          sock.destroy();
          const err = e instanceof TpwError ? e : new TpwError('SSH_CONNECT', `Forwarding to ${where} failed: ${describeError(e)}`, { cause: e });
          this.events.log?.(`forward ${this.here} → ${where}: ${err.message}`);
          this.events.onError?.(err);
        },
      );
  }
}

export class PortForward extends ChannelForward {
  private constructor(
    server: net.Server,
    conns: ConnectionManager,
    target: SshTarget,
    readonly remoteHost: string,
    readonly remotePort: number,
    readonly localPort: number,
    events: PortForwardEvents,
  ) {
    super(server, conns, target, events);
  }

  /** Listens on 127.0.0.1 (never a public address: the worker's port would be open to the network). */
  static async open(conns: ConnectionManager, spec: PortForwardSpec, events: PortForwardEvents = {}): Promise<PortForward> {
    checkPort(spec.remotePort, 'remote');
    if (spec.localPort !== undefined) checkPort(spec.localPort, 'local');
    const remoteHost = spec.remoteHost ?? 'localhost';
    let server: net.Server;
    if (spec.localPort !== undefined) {
      server = await listen(spec.localPort).catch((e: unknown) => {
        throw new TpwError('INVALID_ARGUMENT', `Local port ${spec.localPort} cannot be used to forward port ${spec.remotePort} of ${targetLabel(spec.target)}: ${describeError(e)}. Pick another local port, or leave it out to take a free one.`);
      });
    } else {
      // Privileged or taken: the same number is a convenience, not a promise.
      const first = spec.samePortFirst && spec.remotePort >= 1024 ? spec.remotePort : 0;
      server = await listen(first).catch(() => listen(0));
    }
    const localPort = (server.address() as net.AddressInfo).port;
    return new PortForward(server, conns, spec.target, remoteHost, spec.remotePort, localPort, events);
  }

  protected channel(conn: SshConnection): Promise<Duplex> {
    return conn.forwardOut(this.remoteHost, this.remotePort);
  }

  protected get where(): string {
    return `port ${this.remotePort}`;
  }

  protected get here(): string {
    return String(this.localPort);
  }

  get info(): PortForwardInfo {
    return { label: targetLabel(this.target), remoteHost: this.remoteHost, remotePort: this.remotePort, localPort: this.localPort, url: this.url };
  }

  get url(): string {
    return `http://localhost:${this.localPort}/`;
  }
}

/**
 * A unix socket on this machine, in a folder of its own that only this user can enter (0700), whose every
 * connection becomes a `direct-streamlocal` channel to a unix socket on the worker. Neither end is a port:
 * another user of the workstation or of the VM cannot open it. The debugger's tunnel (core/debug/).
 */
export class SocketForward extends ChannelForward {
  private constructor(
    server: net.Server,
    conns: ConnectionManager,
    target: SshTarget,
    readonly remoteSocket: string,
    readonly localSocket: string,
    events: PortForwardEvents,
  ) {
    super(server, conns, target, events);
  }

  static async open(conns: ConnectionManager, spec: { target: SshTarget; remoteSocket: string }, events: PortForwardEvents = {}): Promise<SocketForward> {
    // mkdtemp makes the folder 0700; the socket's own mode is not honoured everywhere, the folder's is.
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-fwd-'));
    const localSocket = path.join(folder, 'sock');
    const server = net.createServer({ pauseOnConnect: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(localSocket, () => {
        server.off('error', reject);
        resolve();
      });
    }).catch((e: unknown) => {
      fs.rmSync(folder, { recursive: true, force: true });
      throw new TpwError('INTERNAL', `Cannot listen on ${localSocket} to forward ${spec.remoteSocket} of ${targetLabel(spec.target)}: ${describeError(e)}`);
    });
    server.once('close', () => fs.rmSync(folder, { recursive: true, force: true }));
    return new SocketForward(server, conns, spec.target, spec.remoteSocket, localSocket, events);
  }

  protected channel(conn: SshConnection): Promise<Duplex> {
    return conn.forwardOutStreamLocal(this.remoteSocket);
  }

  protected get where(): string {
    return this.remoteSocket;
  }

  protected get here(): string {
    return this.localSocket;
  }
}

function checkPort(port: number, which: string): void {
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new TpwError('INVALID_ARGUMENT', `The ${which} port "${port}" is not a port number (1–65535).`);
}

function listen(port: number): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const server = net.createServer({ pauseOnConnect: true });
    server.once('error', reject);
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

/** Both directions; either side ending or failing ends the other, so neither is left half-open forever. */
function splice(sock: net.Socket, channel: Duplex): void {
  sock.pipe(channel);
  channel.pipe(sock);
  sock.resume();
  const teardown = () => {
    sock.destroy();
    channel.destroy();
  };
  sock.on('error', teardown);
  channel.on('error', teardown);
  sock.once('close', () => channel.end());
  channel.once('close', () => sock.destroy());
}

/** `6006`, `6006:16006` → the remote port and the optional local one (`tpw forward`, the quick pick). */
export function parsePortPair(text: string): { remotePort: number; localPort?: number } {
  const m = /^(\d{1,5})(?::(\d{1,5}))?$/.exec(text.trim());
  if (!m) throw new TpwError('INVALID_ARGUMENT', `"${text}" is not REMOTE or REMOTE:LOCAL (two port numbers, e.g. 6006 or 6006:16006).`);
  const remotePort = Number(m[1]);
  checkPort(remotePort, 'remote');
  if (m[2] === undefined) return { remotePort };
  const localPort = Number(m[2]);
  checkPort(localPort, 'local');
  return { remotePort, localPort };
}
