import * as fs from 'node:fs';
import * as vscode from 'vscode';
import type { RunStatus } from '../../../protocol/run-status';
import { formatDuration, isActive, listRuns, runsDir, type RunRecord } from '../core/run/engine';
import { tpwHome } from '../core/paths';
import type { Ctx } from './ctx';

/**
 * The "Runs" view under the TPU container: the run registry (<TPW_HOME>/runs, shared with `tpw`), newest
 * first. It watches the registry folder, so a run started or stopped from a terminal shows up here too.
 */

const ICONS: Record<RunStatus, [string, string | undefined]> = {
  starting: ['sync~spin', undefined],
  running: ['sync~spin', 'charts.blue'],
  succeeded: ['pass', 'testing.iconPassed'],
  failed: ['error', 'testing.iconFailed'],
  cancelled: ['circle-slash', undefined],
  preempted: ['warning', 'list.warningForeground'],
  unknown: ['question', undefined],
};

export class RunItem extends vscode.TreeItem {
  readonly kind = 'run';
  constructor(readonly record: RunRecord) {
    const recipe = record.recipe.split('/').pop() ?? record.recipe;
    super(`${recipe} on ${record.vm}`, vscode.TreeItemCollapsibleState.None);
    this.id = `run:${record.runId}`;
    const end = record.endedAt ? Date.parse(record.endedAt) : Date.now();
    this.description = `${record.status} · ${new Date(record.startedAt).toLocaleString()} · ${formatDuration(end - Date.parse(record.startedAt))}`;
    const [icon, color] = ICONS[record.status] ?? ICONS.unknown;
    this.iconPath = new vscode.ThemeIcon(icon, color ? new vscode.ThemeColor(color) : undefined);
    // Status in contextValue: "Stop" only on active runs, "Recreate and resume" only on preempted ones.
    this.contextValue = `tpuRun.${record.status}`;
    const codes = record.exitCodes ? record.exitCodes.map((c, i) => `w${i}=${c ?? '-'}`).join(' ') : '';
    this.tooltip = [`Run ${record.runId}`, `VM ${record.vm}, ${record.workers.length} workers`, `Recipe ${record.recipe}`, codes && `Exit codes: ${codes}`, record.reason && `Reason: ${record.reason}`].filter(Boolean).join('\n');
    this.command = { command: 'tpuWorkbench.showRun', title: 'Show Run Log', arguments: [this] };
  }
}

export class RunsTreeProvider implements vscode.TreeDataProvider<RunItem>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  private watcher: fs.FSWatcher | undefined;
  private debounce: NodeJS.Timeout | undefined;

  constructor(private readonly ctx: Ctx) {}

  refresh(): void {
    this.changed.fire();
  }

  getTreeItem(item: RunItem): vscode.TreeItem {
    return item;
  }

  getChildren(): RunItem[] {
    this.watch();
    return listRuns(tpwHome()).map((r) => new RunItem(r));
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
    this.watcher?.close();
    this.changed.dispose();
  }
}
