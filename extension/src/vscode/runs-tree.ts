import * as fs from 'node:fs';
import * as vscode from 'vscode';
import type { RunStatus } from '../../../protocol/run-status';
import { nextTickMs } from '../core/explorer/tick';
import { formatDuration, isActive, listRuns, runsDir, runStatusText, type RunRecord } from '../core/run/engine';
import { tpwHome } from '../core/paths';
import type { Ctx } from './ctx';

/**
 * The "Runs" view under the TPU container: the run registry (<TPW_HOME>/runs, shared with `tpw`), newest
 * first. It watches the registry folder, so a run started or stopped from a terminal shows up here too, and
 * while a run is active and the view visible it redraws as its duration's text changes (core/explorer/tick.ts).
 */

const ICONS: Record<RunStatus, [string, string | undefined]> = {
  starting: ['sync~spin', undefined],
  running: ['sync~spin', 'charts.blue'],
  stopping: ['loading~spin', 'list.warningForeground'],
  succeeded: ['pass', 'testing.iconPassed'],
  failed: ['error', 'testing.iconFailed'],
  cancelled: ['circle-slash', undefined],
  preempted: ['warning', 'list.warningForeground'],
  unknown: ['question', undefined],
};

export class RunItem extends vscode.TreeItem {
  readonly kind = 'run';
  constructor(
    public record: RunRecord,
    now = Date.now(),
  ) {
    const recipe = record.recipe.split('/').pop() ?? record.recipe;
    super(`${recipe} on ${record.vm}`, vscode.TreeItemCollapsibleState.None);
    this.id = `run:${record.runId}`;
    this.command = { command: 'tpuWorkbench.showRun', title: 'Show Run Log', arguments: [this] };
    this.update(record, now);
  }

  /**
   * The row as `record` says now. Rows are updated in place, never replaced while their run is listed: a menu
   * opened on a row acts on it even if the view was redrawn in between (a running run's duration moves every second).
   */
  update(record: RunRecord, now = Date.now()): void {
    this.record = record;
    const end = record.endedAt ? Date.parse(record.endedAt) : now;
    this.description = `${runStatusText(record)} · ${new Date(record.startedAt).toLocaleString()} · ${formatDuration(end - Date.parse(record.startedAt))}`;
    const [icon, color] = ICONS[record.status] ?? ICONS.unknown;
    this.iconPath = new vscode.ThemeIcon(icon, color ? new vscode.ThemeColor(color) : undefined);
    // Status in contextValue: "Stop" only on active runs, "Recreate and resume" only on preempted ones.
    this.contextValue = `tpuRun.${record.status}`;
    const codes = record.exitCodes ? record.exitCodes.map((c, i) => `w${i}=${c ?? '-'}`).join(' ') : '';
    this.tooltip = [`Run ${record.runId}`, `VM ${record.vm}, ${record.workers.length} workers`, `Recipe ${record.recipe}`, codes && `Exit codes: ${codes}`, record.reason && `Reason: ${record.reason}`].filter(Boolean).join('\n');
  }
}

export class RunsTreeProvider implements vscode.TreeDataProvider<RunItem>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<RunItem[] | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private watcher: fs.FSWatcher | undefined;
  private debounce: NodeJS.Timeout | undefined;
  private tick: NodeJS.Timeout | undefined;
  private view: vscode.TreeView<RunItem> | undefined;
  /** The rows listed, by run id (kept and updated in place: see RunItem.update). */
  private items = new Map<string, RunItem>();

  constructor(private readonly ctx: Ctx) {}

  attach(view: vscode.TreeView<RunItem>): void {
    this.view = view;
    this.ctx.own(view.onDidChangeVisibility((e) => e.visible && this.refresh()));
  }

  refresh(): void {
    this.changed.fire(undefined);
  }

  getTreeItem(item: RunItem): vscode.TreeItem {
    return item;
  }

  getChildren(): RunItem[] {
    this.watch();
    const now = Date.now();
    const items = new Map<string, RunItem>();
    for (const r of listRuns(tpwHome())) {
      const item = this.items.get(r.runId);
      if (item) item.update(r, now);
      items.set(r.runId, item ?? new RunItem(r, now));
    }
    this.items = items;
    this.scheduleTick();
    return [...items.values()];
  }

  /** Redraws the active runs' rows when their duration's text next changes (only theirs: the list stays). */
  private scheduleTick(): void {
    clearTimeout(this.tick);
    if (this.view?.visible === false) return; // redrawn when shown again
    const now = Date.now();
    const active = [...this.items.values()].filter((i) => isActive(i.record.status));
    const delay = nextTickMs({ durations: active.map((i) => now - Date.parse(i.record.startedAt)) });
    if (delay === undefined) return;
    this.tick = setTimeout(() => {
      const at = Date.now();
      for (const i of active) i.update(i.record, at);
      this.changed.fire(active);
      this.scheduleTick();
    }, delay);
  }

  /** Active runs in the registry: reattached after a restart. */
  activeRuns(): RunRecord[] {
    return listRuns(tpwHome()).filter((r) => isActive(r.status));
  }

  private watch(): void {
    if (this.watcher) return;
    const dir = runsDir(tpwHome());
    try {
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
      this.watcher = fs.watch(dir, () => {
        // Records are written as temp file + rename: several events per update, one refresh.
        clearTimeout(this.debounce);
        this.debounce = setTimeout(() => this.refresh(), 200);
      });
    } catch (e) {
      this.ctx.log.warn(`cannot watch ${dir}: ${String(e)}`);
    }
  }

  dispose(): void {
    clearTimeout(this.debounce);
    clearTimeout(this.tick);
    this.watcher?.close();
    this.changed.dispose();
  }
}
