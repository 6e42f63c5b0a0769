import * as vscode from 'vscode';
import type { ClientChannel } from 'ssh2';
import { describeError, TpwError } from '../core/errors';
import type { ConnectionManager } from '../core/ssh/connection';
import type { WorkerTarget } from '../core/ssh/types';
import { shortName, type TpuNode } from '../core/tpu/models';
import type { Ctx } from './ctx';

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
 * Terminals on workers, over the extension's one connection owner (Ctx.connections): two terminals on w0,
 * and a run or run view on w0, share one SSH connection. A terminal's shell channel is counted like any
 * other channel, so the connection stays open while a terminal is, and idles out after the last one closes.
 */
export class WorkerTerminals implements vscode.Disposable {
  constructor(private readonly ctx: Ctx) {}

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
      const pty = new WorkerPty(this.ctx.connections(backend), target, name, (m) => this.ctx.log.info(m));
      const terminal = vscode.window.createTerminal({ name, pty, iconPath: new vscode.ThemeIcon('vm') });
      terminals.push(terminal);
    }
    // Show the first; the others are in the terminal list (64 split panes would be unreadable).
    terminals[0]?.show();
    return terminals;
  }

  dispose(): void {
    // The connections belong to the Ctx, which closes them on deactivate.
  }
}

class WorkerPty implements vscode.Pseudoterminal {
  private readonly writeEmitter = new vscode.EventEmitter<string>();
  private readonly closeEmitter = new vscode.EventEmitter<number | void>();
  readonly onDidWrite = this.writeEmitter.event;
  readonly onDidClose = this.closeEmitter.event;
  private channel: ClientChannel | undefined;
  private size: vscode.TerminalDimensions = { columns: 80, rows: 24 };
  /** After a failure the terminal stays to show why; any key closes it. */
  private failed = false;
  private closed = false;
  private readonly decoder = new TextDecoder('utf-8');

  constructor(
    private readonly conns: ConnectionManager,
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
      const channel = await this.conns.openShell(this.target, { term: TERM, rows: this.size.rows, cols: this.size.columns, width: 0, height: 0 });
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
        if (!this.closed) {
          this.closed = true;
          this.closeEmitter.fire(exitCode);
        }
      });
      // The size may have changed while connecting.
      channel.setWindow(this.size.rows, this.size.columns, 0, 0);
    } catch (e) {
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
    // The user closed the terminal: end the shell; the shared connection idles out once nothing uses it.
    this.closed = true;
    this.channel?.close();
  }
}
