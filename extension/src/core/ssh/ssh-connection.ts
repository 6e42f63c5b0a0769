/**
 * One live SSH connection (SshConnection) and how its channels end. ConnectionManager (connection.ts) makes and
 * shares them; everything else execs, opens shells and forwards through one, so its channels are counted.
 */
import type { Client, ClientChannel, ExecOptions as Ssh2ExecOptions, PseudoTtyOptions } from 'ssh2';
import { TpwError, describeError } from '../errors';
import type { ExecExit } from './exec';
import type { SshTarget } from './types';

/** `user@host:port`: the cache key. */
export function targetKey(t: SshTarget): string {
  return `${t.username}@${t.host}:${t.port}`;
}

/** `worker 3 (127.0.1.4:2222)` for worker targets, `127.0.1.4:2222` otherwise: the prefix of every error. */
export function targetLabel(t: SshTarget): string {
  const index = (t as { index?: unknown }).index;
  const hp = `${t.host}:${t.port}`;
  return typeof index === 'number' ? `worker ${index} (${hp})` : hp;
}

/** A live connection; exec through it so channels are counted (idle close) and capped (MaxSessions). */
export class SshConnection {
  private inUse = 0;
  /** Open forwarded channels: they keep the connection from idle-closing but take no MaxSessions slot. */
  private forwards = 0;
  private waiters: Array<() => void> = [];
  private idleTimer: NodeJS.Timeout | undefined;
  private isClosed = false;
  /** close() was called: the socket is ending, so nothing new may start on it. */
  private ending = false;
  /** Set by ConnectionManager.retire: close as soon as no channel is open. */
  private closeWhenIdle = false;
  private readonly closeListeners = new Set<(err?: Error) => void>();

  constructor(
    readonly client: Client,
    readonly target: SshTarget,
    private readonly opts: { maxChannels: number; idleCloseMs: number },
  ) {
    client.once('close', () => this.markClosed());
    this.armIdleTimer();
  }

  get key(): string {
    return targetKey(this.target);
  }
  get label(): string {
    return targetLabel(this.target);
  }
  get closed(): boolean {
    return this.isClosed;
  }
  /**
   * Whether a new channel can start here. Not once closed or closing, nor once the socket can no longer be
   * written: ssh2 emits 'close' only when the socket has closed, and an ended socket whose peer is slow to close
   * would otherwise be handed out and refuse every exec with "Not connected".
   */
  get usable(): boolean {
    if (this.isClosed || this.ending) return false;
    const sock = (this.client as unknown as { _sock?: { writable?: boolean } })._sock;
    return sock?.writable !== false;
  }
  /** Channels open or waiting for a slot. */
  get channelsInUse(): number {
    return this.inUse + this.waiters.length + this.forwards;
  }

  /** Called once when the connection ends for any reason. Returns an unsubscribe function. */
  onClose(fn: (err?: Error) => void): () => void {
    if (this.isClosed) {
      fn();
      return () => undefined;
    }
    this.closeListeners.add(fn);
    return () => this.closeListeners.delete(fn);
  }

  /** Opens an exec channel (the remote login shell runs `command`). The slot is freed when the channel closes. */
  async exec(command: string, options: Ssh2ExecOptions = {}): Promise<ClientChannel> {
    await this.acquire();
    try {
      const channel = await new Promise<ClientChannel>((resolve, reject) => {
        if (this.isClosed) {
          reject(new TpwError('SSH_CONNECT', `${this.label}: connection closed`));
          return;
        }
        try {
          this.client.exec(command, options, (err, ch) => {
            if (err) return reject(err);
            // Listen before yielding: when the open confirmation, the output and the exit status arrive in one
            // TCP read, ssh2 emits 'exit' and 'close' synchronously right after this callback, before any
            // awaiting caller could attach a listener (seen as lost exit codes under load).
            watchChannelEnd(ch);
            ch.once('close', () => this.release());
            resolve(ch);
          });
        } catch (e) {
          // ssh2 throws synchronously when the socket is already gone: the connection is dead, so let the
          // manager forget it and the next caller connect again.
          this.markClosed();
          reject(e);
        }
      });
      return channel;
    } catch (e) {
      this.release();
      throw e instanceof TpwError ? e : new TpwError('SSH_CONNECT', `${this.label}: cannot start a command: ${describeError(e)}`, { cause: e });
    }
  }

  /**
   * Opens an interactive login shell on a pty (a terminal). Counted like an exec channel, so the connection
   * is not idle-closed while a terminal is open, and the slot is freed when the shell ends.
   */
  async shell(window: PseudoTtyOptions): Promise<ClientChannel> {
    await this.acquire();
    try {
      return await new Promise<ClientChannel>((resolve, reject) => {
        if (this.isClosed) {
          reject(new TpwError('SSH_CONNECT', `${this.label}: connection closed`));
          return;
        }
        try {
          this.client.shell(window, (err, ch) => {
            if (err) return reject(err);
            ch.once('close', () => this.release());
            resolve(ch);
          });
        } catch (e) {
          reject(e);
        }
      });
    } catch (e) {
      this.release();
      throw e instanceof TpwError ? e : new TpwError('SSH_CONNECT', `${this.label}: cannot open a shell: ${describeError(e)}`, { cause: e });
    }
  }

  /**
   * A `direct-tcpip` channel to `host:port` as the worker sees them (`ssh -L`). Not capped by maxChannels
   * (sshd's MaxSessions counts sessions only, and a browser opens several at once), but held against idle
   * close while open, as a shell is.
   */
  forwardOut(host: string, port: number): Promise<ClientChannel> {
    return this.forwardChannel(`${host}:${port}`, (cb) => this.client.forwardOut('127.0.0.1', 0, host, port, cb));
  }

  /**
   * A `direct-streamlocal@openssh.com` channel to the unix socket `socketPath` on the worker (`ssh -L
   * local:/remote.sock`): sshd connects to it as the login user, so a socket in a 0700 folder is reachable by
   * its owner only, where a loopback port would be open to every user of the VM.
   */
  forwardOutStreamLocal(socketPath: string): Promise<ClientChannel> {
    return this.forwardChannel(socketPath, (cb) => this.client.openssh_forwardOutStreamLocal(socketPath, cb));
  }

  private forwardChannel(what: string, open: (cb: (err: Error | undefined, ch: ClientChannel) => void) => void): Promise<ClientChannel> {
    return new Promise<ClientChannel>((resolve, reject) => {
      if (this.isClosed) return reject(new TpwError('SSH_CONNECT', `${this.label}: connection closed`));
      this.forwards++;
      this.clearIdleTimer();
      const done = () => {
        this.forwards--;
        this.armIdleTimer();
      };
      try {
        open((err, ch) => {
          if (err) {
            done();
            return reject(new TpwError('SSH_CONNECT', `${this.label}: nothing accepted a connection to ${what} on the worker (${describeError(err)}).`, { cause: err }));
          }
          ch.once('close', done);
          resolve(ch);
        });
      } catch (e) {
        done();
        reject(new TpwError('SSH_CONNECT', `${this.label}: cannot forward to ${what}: ${describeError(e)}`, { cause: e }));
      }
    });
  }

  /** Closes now if no channel is open, else as soon as the last one closes. */
  retire(): void {
    this.closeWhenIdle = true;
    if (this.channelsInUse === 0) this.close();
  }

  close(): void {
    if (this.isClosed) return;
    this.ending = true;
    this.client.end();
    // end() is polite (disconnect message, FIN); make sure the socket really goes even if the peer is stuck.
    setTimeout(() => this.client.destroy(), 2000).unref();
  }

  private acquire(): Promise<void> {
    this.clearIdleTimer();
    if (this.inUse < this.opts.maxChannels) {
      this.inUse++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private release(): void {
    const next = this.waiters.shift();
    if (next) {
      next(); // the slot passes straight to the next waiter
      return;
    }
    this.inUse = Math.max(0, this.inUse - 1);
    this.armIdleTimer();
  }

  private armIdleTimer(): void {
    if (this.closeWhenIdle && this.channelsInUse === 0) {
      this.close();
      return;
    }
    if (this.opts.idleCloseMs <= 0 || this.channelsInUse > 0 || this.isClosed) return;
    this.clearIdleTimer();
    this.idleTimer = setTimeout(() => {
      if (this.channelsInUse === 0) this.close();
    }, this.opts.idleCloseMs);
    this.idleTimer.unref(); // an idle connection must not keep the CLI alive
  }

  private clearIdleTimer(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }

  private markClosed(err?: Error): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.clearIdleTimer();
    for (const fn of this.closeListeners) fn(err);
    this.closeListeners.clear();
  }
}

const channelEnds = new WeakMap<ClientChannel, Promise<ExecExit>>();

/** Starts recording how a channel ends (exit status or signal, then close of stdout and stderr). Idempotent. */
function watchChannelEnd(channel: ClientChannel): Promise<ExecExit> {
  const known = channelEnds.get(channel);
  if (known) return known;
  let code: number | null = null;
  let signal: string | undefined;
  let gotExit = false;
  channel.on('exit', (c: number | null, sig?: string) => {
    gotExit = true;
    code = typeof c === 'number' ? c : null;
    if (typeof sig === 'string' && sig.length > 0) signal = sig;
  });
  // ssh2 emits 'close' once stdout has ended, but not necessarily stderr: wait for both so the last
  // stderr lines are never dropped.
  const stderrDone = new Promise<void>((r) => {
    if (channel.stderr.readableEnded) r();
    else {
      channel.stderr.once('end', r);
      channel.stderr.once('close', r);
    }
  });
  const closed = new Promise<void>((r) => channel.once('close', () => r()));
  const end = Promise.all([closed, stderrDone]).then(() => ({ code, signal, lost: !gotExit }));
  channelEnds.set(channel, end);
  return end;
}

/** How a channel opened by SshConnection.exec ended: resolves after it closed. */
export function channelEnd(channel: ClientChannel): Promise<ExecExit> {
  return watchChannelEnd(channel);
}
