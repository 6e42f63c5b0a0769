import * as vscode from 'vscode';
import { openBackend, type Backend } from '../core/backend';
import { readEmulatorEndpoint } from '../core/local-emulator';
import { describeError, isTpwError } from '../core/errors';
import { ConnectionManager } from '../core/ssh/connection';
import * as config from './config';
import { actionsFor } from './error-actions';
import { vscodeHostKeys } from './host-keys';

/** Context keys read by `when` clauses in package.json. */
export type BackendState = 'loading' | 'ready' | 'emulatorStopped' | 'error';

/**
 * The extension's one piece of state. Everything that must be disposed on deactivate is owned here
 * (rust-analyzer's `Ctx` pattern), so a command can never leak a listener or a backend connection.
 */
export class Ctx implements vscode.Disposable {
  readonly log: vscode.LogOutputChannel;
  private readonly disposables: vscode.Disposable[] = [];
  private backendSlot: { key: string; promise: Promise<Backend> } | undefined;
  private connectionSlot: { kind: Backend['kind']; manager: ConnectionManager } | undefined;
  /** What the TPU VMs view last found (its welcome content follows it). */
  backendState: BackendState = 'loading';
  /** Owners replaced after a backend change; their connections close as their last channel does. */
  private readonly retiredConnections: ConnectionManager[] = [];

  constructor(readonly extContext: vscode.ExtensionContext) {
    this.log = this.own(vscode.window.createOutputChannel('TPU Workbench', { log: true }));
  }

  get extensionPath(): string {
    return this.extContext.extensionPath;
  }

  /** Takes ownership of a disposable; returns it for chaining. */
  own<T extends vscode.Disposable>(d: T): T {
    this.disposables.push(d);
    return d;
  }

  /**
   * The backend for the current settings, opened once and reused. It is reopened when a setting
   * that affects it changes, or when the emulator was restarted (new pid or port): a cached client
   * pointing at a dead port would otherwise fail every call until reload.
   */
  backend(): Promise<Backend> {
    const key = this.backendKey();
    if (this.backendSlot?.key === key) return this.backendSlot.promise;
    this.dropBackend();
    // OS Login notices ("your key was added to your OS Login profile as …") go to the log and a notification.
    const opts = { ...config.backendOptions(), onNotice: (m: string) => (this.log.info(m), void vscode.window.showInformationMessage(m)) };
    this.log.info(`opening backend: ${opts.useEmulator ? 'local emulator' : `project ${opts.project ?? '(none)'}`}`);
    const promise = openBackend(opts);
    const slot = { key, promise };
    this.backendSlot = slot;
    // A failed open must not stick: the next call (e.g. after the emulator starts) tries again.
    promise.catch(() => {
      if (this.backendSlot === slot) this.backendSlot = undefined;
    });
    return promise;
  }

  /** Forgets the cached backend (closing it), e.g. after settings changed. */
  dropBackend(): void {
    const slot = this.backendSlot;
    this.backendSlot = undefined;
    slot?.promise.then(
      (b) => b.close(),
      () => undefined,
    ).catch((e: unknown) => this.log.warn(`closing backend: ${describeError(e)}`));
  }

  /**
   * The extension host's one SSH connection owner, shared by everything that talks to workers: runs, the run
   * view (log watch, live metrics, profiles), terminals, run actions, Prepare Workers. So a run, its view and
   * a terminal on the same worker use one connection. Made on first use; its host-key handling depends on
   * the backend kind (the emulator's keys are recorded silently, a real VM's first key is asked about), so a
   * different kind retires it — idle connections close now, busy ones when their last channel closes — and a
   * new one takes its place.
   */
  connections(backend: Pick<Backend, 'kind'>): ConnectionManager {
    const slot = this.connectionSlot;
    if (slot?.kind === backend.kind) return slot.manager;
    if (slot) {
      this.log.info(`backend kind is now ${backend.kind}: retiring the ${slot.kind} SSH connections`);
      slot.manager.retire();
      this.retiredConnections.push(slot.manager);
    }
    const manager = new ConnectionManager({ ...vscodeHostKeys(backend.kind), log: (m) => this.log.debug(m) });
    this.connectionSlot = { kind: backend.kind, manager };
    return manager;
  }

  /** Changes with the settings that pick the backend and, for the emulator, when it stops, starts or restarts. */
  backendKey(): string {
    const base = config.backendKey();
    if (!config.useEmulator()) return base;
    const ep = readEmulatorEndpoint();
    return `${base}|${ep ? `${ep.pid}:${ep.host}:${ep.restPort}` : 'none'}`;
  }

  setContext(key: 'backendState', value: BackendState): void;
  setContext(key: 'backendKind', value: 'emulator' | 'cloud'): void;
  setContext(key: 'running', value: boolean): void;
  /** Walkthrough steps complete on these (package.json `completionEvents`), set by the real event only. */
  setContext(key: 'hasReadyVm' | 'runFinished' | 'runViewOpened' | 'secretStored', value: boolean): void;
  setContext(key: 'forwarding', value: boolean): void;
  setContext(key: string, value: unknown): void {
    if (key === 'backendState') this.backendState = value as BackendState;
    void vscode.commands.executeCommand('setContext', `tpuWorkbench.${key}`, value);
  }

  /**
   * Shows an error without blocking the caller (an awaited notification would keep the command
   * pending until the user dismisses it). The full error, stack included, goes to the log.
   */
  showError(what: string, e: unknown): void {
    if (isTpwError(e, 'CANCELLED')) {
      this.log.info(`${what}: cancelled`);
      return;
    }
    const message = `${what}: ${describeError(e)}`;
    this.log.error(message);
    if (e instanceof Error && e.stack) this.log.debug(e.stack);
    // Missing credentials, a disabled API or a stopped emulator have a one-click fix besides the log.
    const fixes = actionsFor(e);
    void vscode.window.showErrorMessage(message, ...fixes.map((f) => f.title), 'Show log').then((choice) => {
      if (choice === 'Show log') this.log.show(true);
      else void fixes.find((f) => f.title === choice)?.run();
    });
  }

  dispose(): void {
    this.dropBackend();
    while (this.disposables.length > 0) {
      try {
        this.disposables.pop()?.dispose();
      } catch (e) {
        console.error('TPU Workbench: dispose failed', e);
      }
    }
    // Last: what was disposed above (run watchers detaching, terminals) may still have used them.
    this.connectionSlot?.manager.dispose();
    this.connectionSlot = undefined;
    for (const m of this.retiredConnections.splice(0)) m.dispose();
  }
}
