import * as vscode from 'vscode';
import type { Backend } from '../core/backend';
import { describeError, isTpwError } from '../core/errors';
import { parseNodeName, shortName, type NodeState, type TpuNode } from '../core/tpu/models';
import type { Ctx } from './ctx';

/** States a VM passes through on its own; while any VM is in one, the tree polls. */
const TRANSITIONING: ReadonlySet<NodeState> = new Set<NodeState>([
  'CREATING',
  'STARTING',
  'STOPPING',
  'RESTARTING',
  'REIMAGING',
  'REPAIRING',
  'DELETING',
  'HIDING',
  'UNHIDING',
]);
const POLL_MS = 2000;

export function isTransitioning(state: NodeState): boolean {
  return TRANSITIONING.has(state);
}

export function zoneOf(node: TpuNode): string {
  return parseNodeName(node.name).zone;
}

export interface ZoneListing {
  nodes: TpuNode[];
  /** Zones whose listing failed, with the reason; the others are still shown. */
  failures: { zone: string; error: unknown }[];
}

/** Lists every VM in every zone of the backend, in parallel; one bad zone does not hide the rest. */
export async function listAllNodes(backend: Backend): Promise<ZoneListing> {
  const settled = await Promise.allSettled(backend.zones.map((z) => backend.api.listNodes(backend.project, z)));
  const nodes: TpuNode[] = [];
  const failures: ZoneListing['failures'] = [];
  settled.forEach((r, i) => {
    if (r.status === 'fulfilled') nodes.push(...r.value);
    else failures.push({ zone: backend.zones[i], error: r.reason });
  });
  nodes.sort((a, b) => zoneOf(a).localeCompare(zoneOf(b)) || shortName(a.name).localeCompare(shortName(b.name)));
  return { nodes, failures };
}

export class VmItem extends vscode.TreeItem {
  readonly kind = 'vm';
  constructor(readonly node: TpuNode) {
    super(shortName(node.name), node.networkEndpoints.length > 0 ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None);
    this.id = `vm:${node.name}`;
    const zone = zoneOf(node);
    this.description = `${node.acceleratorType} · ${zone} · ${node.state}`;
    this.iconPath = stateIcon(node.state);
    // The state is part of contextValue so that menus can offer "Run" only on READY VMs.
    this.contextValue = `tpuVm.${node.state}`;
    this.tooltip = vmTooltip(node);
    this.accessibilityInformation = { label: `TPU VM ${shortName(node.name)}, ${node.state}, ${node.acceleratorType} in ${zone}` };
  }
}

export class WorkerItem extends vscode.TreeItem {
  readonly kind = 'worker';
  constructor(
    readonly node: TpuNode,
    readonly index: number,
  ) {
    super(`w${index}`, vscode.TreeItemCollapsibleState.None);
    const ep = node.networkEndpoints[index];
    this.id = `worker:${node.name}:${index}`;
    this.description = ep.port ? `${ep.ipAddress}:${ep.port}` : ep.ipAddress;
    this.iconPath = new vscode.ThemeIcon('vm');
    this.contextValue = 'tpuWorker';
    this.tooltip = `Worker ${index} of ${shortName(node.name)} (TPU_WORKER_ID=${index})\n${this.description}`;
  }
}

class ZoneErrorItem extends vscode.TreeItem {
  readonly kind = 'zoneError';
  constructor(zone: string, error: unknown) {
    super(zone, vscode.TreeItemCollapsibleState.None);
    this.description = `could not list VMs: ${describeError(error)}`;
    this.iconPath = new vscode.ThemeIcon('warning', new vscode.ThemeColor('problemsWarningIcon.foreground'));
    this.tooltip = describeError(error);
    this.command = { command: 'tpuWorkbench.showLog', title: 'Show Log' };
  }
}

export type TreeNode = VmItem | WorkerItem | ZoneErrorItem;

function stateIcon(state: NodeState): vscode.ThemeIcon {
  switch (state) {
    case 'READY':
      return new vscode.ThemeIcon('pass', new vscode.ThemeColor('testing.iconPassed'));
    case 'STOPPED':
      return new vscode.ThemeIcon('debug-stop');
    case 'PREEMPTED':
      return new vscode.ThemeIcon('warning', new vscode.ThemeColor('problemsWarningIcon.foreground'));
    case 'TERMINATED':
      return new vscode.ThemeIcon('error', new vscode.ThemeColor('problemsErrorIcon.foreground'));
    default:
      return isTransitioning(state) ? new vscode.ThemeIcon('loading~spin') : new vscode.ThemeIcon('circle-outline');
  }
}

function vmTooltip(node: TpuNode): vscode.MarkdownString {
  const id = parseNodeName(node.name);
  const md = new vscode.MarkdownString(undefined, true);
  md.appendMarkdown(`**${id.node}** — ${node.state}\n\n`);
  const rows: [string, string | undefined][] = [
    ['Accelerator', node.acceleratorType],
    ['Runtime', node.runtimeVersion],
    ['Zone', id.zone],
    ['Project', id.project],
    ['Workers', String(node.networkEndpoints.length)],
    ['Health', node.health && node.health !== 'HEALTH_UNSPECIFIED' ? `${node.health}${node.healthDescription ? ` (${node.healthDescription})` : ''}` : undefined],
    ['Spot', node.schedulingConfig?.spot || node.schedulingConfig?.preemptible ? 'yes' : undefined],
    ['Created', node.createTime],
  ];
  md.appendMarkdown('| | |\n|---|---|\n');
  for (const [k, v] of rows) if (v) md.appendMarkdown(`| ${k} | ${escapeCell(v)} |\n`);
  return md;
}

function escapeCell(s: string): string {
  return s.replace(/[|\\`*_<>]/g, (c) => `\\${c}`);
}

/**
 * The "TPU VMs" view: one item per VM (zone in the description, since most users work in one or
 * two zones and a zone level would add a click), workers as children.
 */
export class VmTreeProvider implements vscode.TreeDataProvider<TreeNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<TreeNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private pollTimer: NodeJS.Timeout | undefined;
  private view: vscode.TreeView<TreeNode> | undefined;
  /** The last successful listing, for commands that want VMs without another round trip. */
  lastNodes: TpuNode[] = [];

  constructor(private readonly ctx: Ctx) {}

  attach(view: vscode.TreeView<TreeNode>): void {
    this.view = view;
  }

  refresh(): void {
    this.changed.fire(undefined);
  }

  getTreeItem(element: TreeNode): vscode.TreeItem {
    return element;
  }

  async getChildren(element?: TreeNode): Promise<TreeNode[]> {
    if (element instanceof VmItem) {
      return element.node.networkEndpoints.map((_, i) => new WorkerItem(element.node, i));
    }
    if (element) return [];
    return this.listRoot();
  }

  private async listRoot(): Promise<TreeNode[]> {
    this.clearPoll();
    let backend: Backend;
    try {
      backend = await this.ctx.backend();
    } catch (e) {
      this.lastNodes = [];
      if (isTpwError(e, 'EMULATOR_NOT_RUNNING')) {
        this.ctx.setContext('backendKind', 'emulator');
        this.ctx.setContext('backendState', 'emulatorStopped');
        this.setMessage(undefined);
      } else {
        this.ctx.log.error(`opening backend: ${describeError(e)}`);
        this.ctx.setContext('backendState', 'error');
        this.setMessage(describeError(e));
      }
      return [];
    }
    this.ctx.setContext('backendKind', backend.kind);
    const { nodes, failures } = await listAllNodes(backend);
    for (const f of failures) this.ctx.log.warn(`listing VMs in ${f.zone}: ${describeError(f.error)}`);
    if (nodes.length === 0 && failures.length > 0 && failures.length === backend.zones.length) {
      // Every zone failed: most likely the emulator just died or credentials are wrong. Treat a
      // vanished emulator like a stopped one, so the welcome view offers to start it again.
      this.ctx.dropBackend();
      this.lastNodes = [];
      const stopped = failures.some((f) => isTpwError(f.error, 'EMULATOR_NOT_RUNNING') || isTpwError(f.error, 'UNAVAILABLE'));
      this.ctx.setContext('backendState', stopped && backend.kind === 'emulator' ? 'emulatorStopped' : 'error');
      this.setMessage(stopped && backend.kind === 'emulator' ? undefined : describeError(failures[0].error));
      return [];
    }
    this.lastNodes = nodes;
    this.ctx.setContext('backendState', 'ready');
    this.setMessage(undefined);
    if (nodes.some((n) => isTransitioning(n.state))) {
      this.pollTimer = setTimeout(() => this.refresh(), POLL_MS);
    }
    return [...nodes.map((n) => new VmItem(n)), ...failures.map((f) => new ZoneErrorItem(f.zone, f.error))];
  }

  private setMessage(message: string | undefined): void {
    if (this.view) this.view.message = message;
  }

  private clearPoll(): void {
    if (this.pollTimer) clearTimeout(this.pollTimer);
    this.pollTimer = undefined;
  }

  dispose(): void {
    this.clearPoll();
    this.changed.dispose();
  }
}
