import * as vscode from 'vscode';
import { describeError, isTpwError } from '../../core/errors';
import { computeStatusNote, formatAge, healthNote, isMultiHost, nodeStateTone, queuedStateTone, schedulingLabel, type StateTone } from '../../core/explorer/node-status';
import { sliceGroupsOf } from '../../core/explorer/run-targets';
import type { ZoneScan } from '../../core/explorer/zone-scan';
import { parseNodeName, shortName, type QueuedResource, type TpuNode } from '../../core/tpu/models';
import { vmCost } from './cost';
import { queuedTooltip, vmTooltip, workerTooltip } from './tooltips';

/**
 * The explorer's rows: project → zone → VM → workers, and a "Queued resources" group per zone. When Compute
 * Engine has TPU VMs in the project, the project row holds one row per control plane ("Compute Engine", "Cloud
 * TPU API", each only when it has something) with the zones below them: the two side by side, while a project
 * with Cloud TPU API nodes only reads as it always did. Each item carries
 * the data it shows, so getChildren never goes back to the network below the root. `contextValue`s drive the
 * menus in package.json: `tpuVm.<STATE>.<single|pod>` (Stop only for single-host), `tpuWorker`,
 * `tpuSliceGroup.<READY|NOT_READY>[.compute]` (a multislice group's slices, either control plane), `tpuQueued.<STATE>`,
 * `tpuZone`, `tpuControlPlane.<compute|tpu-api>`, `tpuProject`.
 */

const TONE_ICONS: Record<StateTone, { icon: string; color?: string }> = {
  ok: { icon: 'vm-running', color: 'charts.green' },
  transitional: { icon: 'loading~spin', color: 'charts.yellow' },
  bad: { icon: 'error', color: 'charts.red' },
  stopped: { icon: 'vm-outline', color: 'disabledForeground' },
  unknown: { icon: 'question' },
};

function toneIcon(tone: StateTone, okIcon?: string): vscode.ThemeIcon {
  const t = TONE_ICONS[tone];
  const id = tone === 'ok' && okIcon ? okIcon : t.icon;
  return t.color ? new vscode.ThemeIcon(id, new vscode.ThemeColor(t.color)) : new vscode.ThemeIcon(id);
}

export class ProjectItem extends vscode.TreeItem {
  readonly kind = 'project';
  constructor(
    readonly project: string,
    readonly backendKind: 'emulator' | 'cloud',
    readonly scans: ZoneScan[],
    zoneCount: number,
  ) {
    super(project, vscode.TreeItemCollapsibleState.Expanded);
    this.id = `project:${backendKind}:${project}`;
    const where = backendKind === 'emulator' ? 'local emulator' : 'Google Cloud';
    this.description = `${where} · ${zoneCount} zone${zoneCount === 1 ? '' : 's'}`;
    this.iconPath = new vscode.ThemeIcon(backendKind === 'emulator' ? 'server-environment' : 'cloud');
    this.contextValue = 'tpuProject';
    this.tooltip = `${where}: project ${project}, listing ${zoneCount} zone${zoneCount === 1 ? '' : 's'} (setting tpuWorkbench.zones; "TPU: Choose Zones…" changes it).`;
  }
}

export type ControlPlane = 'compute' | 'tpu-api';

const PLANE_LABELS: Record<ControlPlane, string> = { compute: 'Compute Engine', 'tpu-api': 'Cloud TPU API' };

function planeOf(node: TpuNode): ControlPlane {
  return node.controlPlane === 'compute' ? 'compute' : 'tpu-api';
}

/** The part of each zone's scan that one control plane made (queued resources are the Cloud TPU API's). */
function scansOf(scans: readonly ZoneScan[], plane: ControlPlane): ZoneScan[] {
  return scans
    .map((s) => ({ ...s, nodes: s.nodes.filter((n) => planeOf(n) === plane), queued: plane === 'tpu-api' ? s.queued : [], queuedError: plane === 'tpu-api' ? s.queuedError : undefined }))
    .filter((s) => s.nodes.length > 0 || s.queued.length > 0 || (s.queuedError !== undefined && !isTpwError(s.queuedError, 'NOT_FOUND')));
}

/** One control plane's VMs in a project: "Compute Engine" (instances and MIG slices) or "Cloud TPU API" (nodes). */
export class ControlPlaneItem extends vscode.TreeItem {
  readonly kind = 'plane';
  constructor(
    readonly project: string,
    readonly plane: ControlPlane,
    readonly scans: ZoneScan[],
  ) {
    super(PLANE_LABELS[plane], vscode.TreeItemCollapsibleState.Expanded);
    this.id = `plane:${project}/${plane}`;
    const vms = scans.reduce((n, s) => n + s.nodes.length, 0);
    const queued = scans.reduce((n, s) => n + s.queued.length, 0);
    this.description = [`${vms} VM${vms === 1 ? '' : 's'}`, queued > 0 ? `${queued} queued` : undefined].filter((x): x is string => !!x).join(' · ');
    this.iconPath = new vscode.ThemeIcon(plane === 'compute' ? 'server' : 'chip');
    this.contextValue = `tpuControlPlane.${plane}`;
    this.tooltip =
      plane === 'compute'
        ? 'TPU VMs made through Compute Engine (compute.googleapis.com): single-host instances and multi-host slices (managed instance groups with a workload policy). Google manages TPU7x and later only this way.'
        : 'TPU VMs made through the Cloud TPU API (tpu.googleapis.com): nodes and queued resources, v4 to v6e. No TPU7x or later.';
  }
}

export class ZoneItem extends vscode.TreeItem {
  readonly kind = 'zone';
  constructor(
    readonly project: string,
    readonly scan: ZoneScan,
    /** The control plane group this zone row is under, if any: "Create TPU VM" here preselects it. */
    readonly plane?: ControlPlane,
  ) {
    super(scan.zone, vscode.TreeItemCollapsibleState.Expanded);
    this.id = `zone:${project}/${plane ? `${plane}/` : ''}${scan.zone}`;
    const parts = [`${scan.nodes.length} VM${scan.nodes.length === 1 ? '' : 's'}`];
    if (scan.queued.length > 0) parts.push(`${scan.queued.length} queued`);
    this.description = parts.join(' · ');
    this.iconPath = new vscode.ThemeIcon('globe');
    this.contextValue = 'tpuZone';
  }
}

export class ZoneErrorItem extends vscode.TreeItem {
  readonly kind = 'zoneError';
  constructor(
    readonly zone: string,
    readonly error: unknown,
  ) {
    super(zone, vscode.TreeItemCollapsibleState.None);
    this.id = `zoneError:${zone}`;
    this.description = `could not list: ${describeError(error)}`;
    this.tooltip = `Listing TPU VMs in ${zone} failed: ${describeError(error)}\nIt is retried automatically; click to show the log.`;
    this.iconPath = new vscode.ThemeIcon('warning', new vscode.ThemeColor('charts.red'));
    this.contextValue = 'tpuZoneError';
    this.command = { command: 'tpuWorkbench.showLog', title: 'Show Log' };
  }
}

export class VmItem extends vscode.TreeItem {
  readonly kind = 'vm';
  constructor(
    readonly node: TpuNode,
    now = new Date(),
  ) {
    super(shortName(node.name), node.networkEndpoints.length > 0 ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None);
    const id = parseNodeName(node.name);
    // A row first shown without workers (a slice whose VMs are still being made) cannot be expanded; VS Code
    // keeps that state per id, so the row gets a new id once workers appear and then shows them expanded.
    this.id = node.networkEndpoints.length > 0 ? `vm:${node.name}` : `vm:${node.name}:no-workers`;
    this.refreshAge(now);
    this.iconPath = toneIcon(nodeStateTone(node.state));
    // The state is part of contextValue so that menus offer Run on READY VMs and Stop on single-host ones only.
    this.contextValue = `tpuVm.${node.state}.${isMultiHost(node) ? 'pod' : 'single'}`;
    // No tooltip here: resolveTooltip makes it on hover, so its "(21s ago)" is the age at that moment.
    this.accessibilityInformation = { label: `TPU VM ${id.node}, ${node.state}, ${node.acceleratorType} in ${id.zone}` };
  }

  /** The description with the VM's age as of `now` (the row is redrawn in place as the age moves on). */
  refreshAge(now = new Date()): void {
    const node = this.node;
    const cost = vmCost(node, parseNodeName(node.name).zone);
    const health = node.state === 'READY' ? healthNote(node) : undefined;
    const planeNote = node.controlPlane === 'compute' ? (computeStatusNote(node, true) ?? node.compute?.machineType ?? 'Compute Engine') : node.runtimeVersion;
    this.description = [node.acceleratorType, node.state, planeNote, schedulingLabel(node), health, formatAge(node.createTime, now), cost?.text]
      .filter((s): s is string => !!s)
      .join(' · ');
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
    const internal = ep.port ? `${ep.ipAddress}:${ep.port}` : ep.ipAddress;
    const external = ep.accessConfig?.externalIp;
    this.description = external && external !== ep.ipAddress ? `${internal} · external ${external}` : internal;
    this.iconPath = new vscode.ThemeIcon('terminal');
    this.contextValue = node.state === 'READY' ? 'tpuWorker.READY' : 'tpuWorker';
    this.tooltip = workerTooltip(node, index);
  }
}

/**
 * The slices of one multislice group (a queued resource's on the Cloud TPU API, a labelled set of slices on
 * Compute Engine), shown as one row (Run on TPU runs on all of them).
 */
export class SliceGroupItem extends vscode.TreeItem {
  readonly kind = 'sliceGroup';
  constructor(
    /** TpuNode.sliceGroup of every slice. */
    readonly group: string,
    readonly slices: TpuNode[],
  ) {
    super(shortName(group), vscode.TreeItemCollapsibleState.Expanded);
    this.id = `slices:${group}`;
    const ready = slices.every((n) => n.state === 'READY');
    const states = [...new Set(slices.map((n) => n.state))].join('/');
    this.description = [`${slices.length} slices`, slices[0]?.acceleratorType, states, schedulingLabel(slices[0])].filter((x): x is string => !!x).join(' · ');
    this.iconPath = toneIcon(ready ? 'ok' : nodeStateTone(slices.find((n) => n.state !== 'READY')?.state ?? 'UNKNOWN'), 'layers');
    // `.compute`: Delete deletes a Compute Engine group's slices; a Cloud TPU group goes with its queued resource.
    this.contextValue = `tpuSliceGroup.${ready ? 'READY' : 'NOT_READY'}${slices[0]?.controlPlane === 'compute' ? '.compute' : ''}`;
    this.tooltip = `Multislice group ${shortName(group)}${slices[0]?.controlPlane === 'compute' ? ' (Compute Engine)' : ''}: ${slices.length} slices of ${slices[0]?.acceleratorType ?? '?'} (${slices.map((n) => `${shortName(n.name)} ${n.state}`).join(', ')}). Run on TPU runs on every worker of every slice.`;
  }
}

/** A zone's VMs as rows: a multislice group's slices under one group row (either control plane), every other VM on its own. */
function vmRows(nodes: readonly TpuNode[]): ExplorerNode[] {
  const groups = sliceGroupsOf(nodes);
  const rows: ExplorerNode[] = [];
  for (const n of nodes) {
    if (!n.sliceGroup) rows.push(new VmItem(n));
    else if (!rows.some((r) => r instanceof SliceGroupItem && r.group === n.sliceGroup)) rows.push(new SliceGroupItem(n.sliceGroup, groups.get(n.sliceGroup) ?? [n]));
  }
  return rows;
}

export class QueuedGroupItem extends vscode.TreeItem {
  readonly kind = 'queuedGroup';
  constructor(
    readonly project: string,
    readonly scan: ZoneScan,
  ) {
    super('Queued resources', vscode.TreeItemCollapsibleState.Expanded);
    this.id = `queued:${project}/${scan.zone}`;
    this.description = scan.queuedError !== undefined ? `could not list: ${describeError(scan.queuedError)}` : String(scan.queued.length);
    this.iconPath = new vscode.ThemeIcon('list-ordered');
    this.contextValue = 'tpuQueuedGroup';
    if (scan.queuedError !== undefined) this.collapsibleState = vscode.TreeItemCollapsibleState.None;
  }
}

export class QueuedItem extends vscode.TreeItem {
  readonly kind = 'queued';
  constructor(
    readonly qr: QueuedResource,
    now = new Date(),
  ) {
    super(shortName(qr.name), vscode.TreeItemCollapsibleState.None);
    this.id = `qr:${qr.name}`;
    this.refreshAge(now);
    this.iconPath = toneIcon(queuedStateTone(qr.state), 'pass-filled');
    this.contextValue = `tpuQueued.${qr.state}`;
  }

  /** The description with the request's age as of `now`. */
  refreshAge(now = new Date()): void {
    const qr = this.qr;
    this.description = [qr.state, qr.acceleratorType, qr.tier !== 'unspecified' ? qr.tier : undefined, qr.validUntil ? `until ${qr.validUntil}` : undefined, formatAge(qr.createTime, now)]
      .filter((s): s is string => !!s)
      .join(' · ');
  }
}

/** The hover card of a row whose tooltip shows an age, made when it is shown (TreeDataProvider.resolveTreeItem). */
export function resolveTooltip(element: ExplorerNode, now = new Date()): vscode.MarkdownString | undefined {
  if (element.kind === 'vm') return vmTooltip(element.node, vmCost(element.node, parseNodeName(element.node.name).zone), now);
  if (element.kind === 'queued') return queuedTooltip(element.qr, now);
  return undefined;
}

/** When each row that shows an age was created, for the redraw that keeps the ages true (core/explorer/tick.ts). */
export function shownCreateTimes(scans: readonly ZoneScan[]): string[] {
  return scans.flatMap((s) => [...s.nodes.map((n) => n.createTime), ...s.queued.map((q) => q.createTime)]).filter((t): t is string => !!t);
}

export type ExplorerNode = ProjectItem | ControlPlaneItem | ZoneItem | ZoneErrorItem | VmItem | WorkerItem | SliceGroupItem | QueuedGroupItem | QueuedItem;

/** Children of a project or zone row, from the scan it carries. */
export function childrenOf(element: ExplorerNode): ExplorerNode[] {
  switch (element.kind) {
    case 'project': {
      const errors = element.scans.filter((s) => s.nodesError !== undefined).map((s) => new ZoneErrorItem(s.zone, s.nodesError));
      const listed = element.scans.filter((s) => s.nodesError === undefined);
      if (!listed.some((s) => s.nodes.some((n) => planeOf(n) === 'compute'))) {
        return element.scans.map((s) => (s.nodesError !== undefined ? new ZoneErrorItem(s.zone, s.nodesError) : new ZoneItem(element.project, s)));
      }
      const planes = (['compute', 'tpu-api'] as const).map((p) => new ControlPlaneItem(element.project, p, scansOf(listed, p))).filter((p) => p.scans.length > 0);
      return [...planes, ...errors];
    }
    case 'plane':
      return element.scans.map((s) => new ZoneItem(element.project, s, element.plane));
    case 'zone': {
      const items: ExplorerNode[] = vmRows(element.scan.nodes);
      const queuedFailed = element.scan.queuedError !== undefined && !isTpwError(element.scan.queuedError, 'NOT_FOUND');
      if (element.scan.queued.length > 0 || queuedFailed) items.push(new QueuedGroupItem(element.project, element.scan));
      return items;
    }
    case 'vm':
      return element.node.networkEndpoints.map((_, i) => new WorkerItem(element.node, i));
    case 'sliceGroup':
      return element.slices.map((n) => new VmItem(n));
    case 'queuedGroup':
      return element.scan.queued.map((q) => new QueuedItem(q));
    default:
      return [];
  }
}
