import * as vscode from 'vscode';
import { watchChanges, type ChangeWatch } from '../../core/change-journal';
import { describeError } from '../../core/errors';
import { tpwHome } from '../../core/paths';
import * as config from '../config';
import type { Ctx } from '../ctx';
import type { VmTreeProvider } from '../vm-tree';

/** How often the emulator's endpoint file and process are looked at (a local file and /proc: no network). */
const EMULATOR_CHECK_MS = 2000;
/** Coming back to the window lists again when the last listing is older than this (changes made elsewhere). */
const STALE_ON_FOCUS_MS = 30_000;

/**
 * What tells the TPU VMs view that its VMs changed, besides its own operations and its polling of transitional
 * states: a create, delete, start or stop by another process on this machine (`tpw` in a terminal, another
 * window: core/explorer/change-journal.ts), the emulator stopping, starting or restarting (its endpoint file and
 * process, looked at every 2 s while the view is visible), and the window getting the focus back after a while
 * (the Cloud console, another machine). Like the Docker and Kubernetes views, the view never polls VMs that
 * are settled.
 */
export class ExplorerWatch implements vscode.Disposable {
  private journal: ChangeWatch | undefined;
  private readonly timer: NodeJS.Timeout;
  private lastKey: string | undefined;
  private readonly focus: vscode.Disposable;

  constructor(
    private readonly ctx: Ctx,
    private readonly tree: VmTreeProvider,
  ) {
    try {
      this.journal = watchChanges(tpwHome(), (note) => {
        ctx.log.info(`TPU VMs changed by another process (${note.what}, pid ${note.pid}): listing again`);
        tree.refresh();
      });
    } catch (e) {
      ctx.log.warn(`cannot watch for changes made by tpw: ${describeError(e)}`);
    }
    this.timer = setInterval(() => this.checkBackend(), EMULATOR_CHECK_MS);
    this.focus = vscode.window.onDidChangeWindowState((s) => {
      if (s.focused && tree.visible && Date.now() - tree.lastListedAt > STALE_ON_FOCUS_MS) tree.refresh();
    });
  }

  /**
   * The emulator stopped, started or was replaced since the last look: list now (not when VS Code next draws the
   * tree: while the view shows its welcome content it draws nothing, and the welcome content follows the listing).
   */
  private checkBackend(): void {
    if (!config.useEmulator()) return;
    let key: string;
    try {
      key = this.ctx.backendKey();
    } catch (e) {
      key = `unusable: ${describeError(e)}`;
    }
    if (this.lastKey !== undefined && key !== this.lastKey) {
      this.ctx.log.info('the local emulator stopped, started or restarted: listing again');
      this.tree.listNow().catch((e: unknown) => this.ctx.log.warn(`listing TPU VMs: ${describeError(e)}`));
    }
    this.lastKey = key;
  }

  dispose(): void {
    this.journal?.close();
    clearInterval(this.timer);
    this.focus.dispose();
  }
}
