import * as vscode from 'vscode';
import type { ClientChannel } from 'ssh2';
import type { Backend } from '../core/backend';
import { describeError, TpwError } from '../core/errors';
import { ConnectionManager, type SshConnection } from '../core/ssh/connection';
import type { WorkerTarget } from '../core/ssh/types';
import { shortName, type TpuNode } from '../core/tpu/models';
import type { Ctx } from './ctx';
import { vscodeHostKeys } from './host-keys';

/**
 * "Open Terminal on Worker N": an interactive login shell on a TPU worker in a VS Code terminal, over ssh2
 * (no `ssh` binary, no gcloud). A Pseudoterminal forwards keystrokes and output, passes size changes on as
 * window-change requests, and asks for an xterm-256color pty so the remote shell's colours come through.
 */

const TERM = 'xterm-256color';
const RED = '\x1b[31m';
const DIM = '\x1b[2m';
const RESET = '\x1b[0m';

/**
 * SSH connections for terminals, shared per worker: two terminals on w0 use one connection. A terminal's
 * shell channel is not counted by SshConnection's idle timer, so idle close is off here and the last terminal
 * on a connection closes it instead.
 */
export class WorkerTerminals implements vscode.Disposable {
  private readonly managers = new Map<Backend['kind'], ConnectionManager>();
  private readonly users = new Map<SshConnection, number>();

  constructor(private readonly ctx: Ctx) {}

  private manager(kind: Backend['kind']): ConnectionManager {
    let m = this.managers.get(kind);
    if (!m) {
      m = new ConnectionManager({ ...vscodeHostKeys(kind), idleCloseMs: 0, log: (msg) => this.ctx.log.debug(msg) });
      this.managers.set(kind, m);
    }
    return m;
  }

  async acquire(kind: Backend['kind'], target: WorkerTarget): Promise<SshConnection> {
    const conn = await this.manager(kind).get(target);
    this.users.set(conn, (this.users.get(conn) ?? 0) + 1);
    return conn;
  }

  release(conn: SshConnection): void {
    const n = (this.users.get(conn) ?? 1) - 1;
    if (n > 0) {
      this.users.set(conn, n);
      return;
    }
    this.users.delete(conn);
    conn.close();
  }

  /** Opens terminals on the given workers of a READY VM (all of them when `indexes` is undefined). */
  async open(node: TpuNode, indexes?: number[]): Promise<vscode.Terminal[]> {
    const backend = await this.ctx.backend();
    const workers = await backend.workersOf(node); // throws a clear error unless READY
    const chosen = indexes ?? workers.map((w) => w.index);
    const terminals: vscode.Terminal[] = [];
    for (const index of chosen) {
      const target = workers[index];
      if (!target) throw new TpwError('INVALID_ARGUMENT', `TPU VM ${shortName(node.name)} has no worker ${index} (it has ${workers.length}).`);
      const name = `${shortName(node.name)} w${index}`;
      const pty = new WorkerPty(this, backend.kind, target, name, (m) => this.ctx.log.info(m));
      const terminal = vscode.window.createTerminal({ name, pty, iconPath: new vscode.ThemeIcon('vm') });
      terminals.push(terminal);
    }
    // Show the first; the others are in the terminal list (64 split panes would be unreadable).
    terminals[0]?.show();
    return terminals;
  }

  dispose(): void {
    for (const m of this.managers.values()) m.dispose();
    this.managers.clear();
    this.users.clear();
  }
}

class WorkerPty implements vscode.Pseudoterminal {
  private readonly writeEmitter = new vscode.EventEmitter<string>();
  private readonly closeEmitter = new vscode.EventEmitter<number | void>();
  readonly onDidWrite = this.writeEmitter.event;
  readonly onDidClose = this.closeEmitter.event;
  private channel: ClientChannel | undefined;
  private conn: SshConnection | undefined;
  private size: vscode.TerminalDimensions = { columns: 80, rows: 24 };
  /** After a failure the terminal stays to show why; any key closes it. */
  private failed = false;
  private closed = false;
  private readonly decoder = new TextDecoder('utf-8');

  constructor(
    private readonly owner: WorkerTerminals,
    private readonly kind: Backend['kind'],
    private readonly target: WorkerTarget,
    private readonly name: string,
    private readonly log: (msg: string) => void,
  ) {}

  open(initial: vscode.TerminalDimensions | undefined): void {
    if (initial) this.size = initial;
    this.writeEmitter.fire(`${DIM}Connecting to ${this.name} (${this.target.username}@${this.target.host}${this.target.port === 22 ? '' : `:${this.target.port}`})…${RESET}\r\n`);
    void this.connect();
  }

  private async connect(): Promise<void> {
    try {
      const conn = await this.owner.acquire(this.kind, this.target);
      this.conn = conn;
      if (this.closed) return this.releaseConn();
      const channel = await new Promise<ClientChannel>((resolve, reject) => {
        conn.client.shell({ term: TERM, rows: this.size.rows, cols: this.size.columns, width: 0, height: 0 }, (err, ch) => (err ? reject(err) : resolve(ch)));
      });
      this.channel = channel;
      if (this.closed) {
        channel.close();
        return;
      }
      this.log(`terminal ${this.name}: shell open`);
      let exitCode: number | undefined;
      channel.on('data', (d: Buffer) => this.writeEmitter.fire(this.decoder.decode(d, { stream: true })));
      channel.stderr.on('data', (d: Buffer) => this.writeEmitter.fire(d.toString('utf8')));
      channel.on('exit', (code: number | null) => (exitCode = typeof code === 'number' ? code : undefined));
      channel.on('close', () => {
        this.log(`terminal ${this.name}: shell closed (exit ${exitCode ?? '?'})`);
        this.releaseConn();
        if (!this.closed) {
          this.closed = true;
          this.closeEmitter.fire(exitCode);
        }
      });
      // The size may have changed while connecting.
      channel.setWindow(this.size.rows, this.size.columns, 0, 0);
    } catch (e) {
      this.releaseConn();
      this.failed = true;
      this.log(`terminal ${this.name}: ${describeError(e)}`);
      this.writeEmitter.fire(`${RED}${describeError(e).replace(/\n/g, '\r\n')}${RESET}\r\n${DIM}Press any key to close.${RESET}`);
    }
  }

  handleInput(data: string): void {
    if (this.failed) {
      this.closed = true;
      this.closeEmitter.fire();
      return;
    }
    this.channel?.write(data);
  }

  setDimensions(d: vscode.TerminalDimensions): void {
    this.size = d;
    // A window-change request: the remote pty resizes and the shell gets SIGWINCH (vim, htop redraw).
    this.channel?.setWindow(d.rows, d.columns, 0, 0);
  }

  close(): void {
    // The user closed the terminal: end the shell; the connection goes when its last terminal does.
    this.closed = true;
    this.channel?.close();
    this.releaseConn();
  }

  private releaseConn(): void {
    const conn = this.conn;
    this.conn = undefined;
    if (conn) this.owner.release(conn);
  }
}
