import * as vscode from 'vscode';
import type { Backend } from '../core/backend';
import { describeError } from '../core/errors';
import { clusterRow, nodePoolRow, queueRow, sortWorkloads, workloadChildren, workloadRow, type Row } from '../core/explorer/gke-rows';
import type { StateTone } from '../core/explorer/node-status';
import type { GkeCluster, GkeNodePool, GkePod, GkeWorkload } from '../core/gke/models';
import { getWorkload, listPods, listQueues, listWorkloads, workloadsByNodePool } from '../core/gke/workloads';
import type { Ctx } from './ctx';

/**
 * The "GKE" view, apart from the TPU VMs view (its own provider and refresh): the backend's project → its clusters →
 * TPU node pools (nodes, topology, state) → the workloads on each → their pods; and under each cluster its Kueue
 * queues and every workload by phase (queued ones say why they wait), a page at a time. Rows are drawn from
 * core/explorer/gke-rows.ts. `contextValue`s: `gkeCluster`, `gkeNodePool.tpu`, `gkeWorkload.<phase>[.tpw]`,
 * `gkePod`.
 */

const PAGE = 100;

const TONES: Record<StateTone, [string, string | undefined]> = {
  ok: ['pass-filled', 'charts.green'],
  transitional: ['loading~spin', 'charts.yellow'],
  bad: ['error', 'charts.red'],
  stopped: ['circle-outline', 'disabledForeground'],
  unknown: ['question', undefined],
};

function drawn(item: vscode.TreeItem, row: Row, icon?: string): void {
  item.description = row.description;
  item.tooltip = row.tooltip;
  const [toneIcon, color] = TONES[row.tone];
  item.iconPath = new vscode.ThemeIcon(row.tone === 'ok' && icon ? icon : toneIcon, color ? new vscode.ThemeColor(color) : undefined);
}

export class GkeProjectItem extends vscode.TreeItem {
  readonly kind = 'gkeProject';
  constructor(readonly backend: Backend) {
    super(backend.project, vscode.TreeItemCollapsibleState.Expanded);
    this.id = `gke:${backend.kind}:${backend.project}`;
    this.description = backend.kind === 'emulator' ? 'local emulator' : 'Google Cloud';
    this.iconPath = new vscode.ThemeIcon(backend.kind === 'emulator' ? 'server-environment' : 'cloud');
    this.contextValue = 'gkeProject';
  }
}

export class GkeClusterItem extends vscode.TreeItem {
  readonly kind = 'gkeCluster';
  constructor(readonly backend: Backend, readonly cluster: GkeCluster) {
    super(cluster.cluster, cluster.status === 'RUNNING' ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
    this.id = `gke:${cluster.fullName}`;
    drawn(this, clusterRow(cluster), 'server');
    this.contextValue = 'gkeCluster';
  }
}

export class GkeNodePoolItem extends vscode.TreeItem {
  readonly kind = 'gkeNodePool';
  constructor(readonly backend: Backend, readonly cluster: GkeCluster, readonly pool: GkeNodePool & { nodes?: { ready: number; total: number } }) {
    super(pool.name, vscode.TreeItemCollapsibleState.Collapsed);
    this.id = `gke:${cluster.fullName}/pool/${pool.name}`;
    drawn(this, nodePoolRow(pool), 'chip');
    this.contextValue = pool.tpu ? 'gkeNodePool.tpu' : 'gkeNodePool';
  }
}

export class GkeFolderItem extends vscode.TreeItem {
  readonly kind = 'gkeFolder';
  constructor(readonly backend: Backend, readonly cluster: GkeCluster, readonly folder: 'queues' | 'workloads', description = '') {
    super(folder === 'queues' ? 'Queues' : 'Workloads', vscode.TreeItemCollapsibleState.Collapsed);
    this.id = `gke:${cluster.fullName}/${folder}`;
    this.description = description;
    this.iconPath = new vscode.ThemeIcon(folder === 'queues' ? 'list-ordered' : 'layers');
  }
}

export class GkeWorkloadItem extends vscode.TreeItem {
  readonly kind = 'gkeWorkload';
  constructor(readonly backend: Backend, readonly cluster: GkeCluster, readonly workload: GkeWorkload, parentId: string) {
    super(workload.name, vscode.TreeItemCollapsibleState.Collapsed);
    this.id = `${parentId}/w/${workload.name}`;
    drawn(this, workloadRow(workload), 'play-circle');
    this.contextValue = `gkeWorkload.${workload.phase}${workload.runId ? '.tpw' : ''}`;
  }
}

export class GkePodItem extends vscode.TreeItem {
  readonly kind = 'gkePod';
  constructor(readonly backend: Backend, readonly cluster: GkeCluster, readonly workload: GkeWorkload, readonly pod: GkePod, row: Row, parentId: string) {
    super(row.label, vscode.TreeItemCollapsibleState.None);
    this.id = `${parentId}/p/${row.label}`;
    drawn(this, row, 'vm-running');
    this.contextValue = 'gkePod';
    this.command = { command: 'tpuWorkbench.gke.showPodLog', title: 'Show Pod Log', arguments: [this] };
  }
}

export class GkeMoreItem extends vscode.TreeItem {
  readonly kind = 'gkeMore';
  constructor(readonly folder: GkeFolderItem, readonly token: string, remaining?: number) {
    super('Load more…', vscode.TreeItemCollapsibleState.None);
    this.description = remaining !== undefined ? `${remaining} more` : '';
    this.iconPath = new vscode.ThemeIcon('ellipsis');
    this.command = { command: 'tpuWorkbench.gke.loadMore', title: 'Load More', arguments: [this] };
  }
}

export class GkeMessageItem extends vscode.TreeItem {
  readonly kind = 'gkeMessage';
  constructor(message: string, error = false) {
    super(message, vscode.TreeItemCollapsibleState.None);
    this.iconPath = new vscode.ThemeIcon(error ? 'error' : 'info');
    this.tooltip = message;
  }
}

export type GkeNode = GkeProjectItem | GkeClusterItem | GkeNodePoolItem | GkeFolderItem | GkeWorkloadItem | GkePodItem | GkeMoreItem | GkeMessageItem;

export class GkeTreeProvider implements vscode.TreeDataProvider<GkeNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<GkeNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  /** Workloads loaded so far per cluster (pages appended by "Load more…"), and the next page's token. */
  private readonly pages = new Map<string, { items: GkeWorkload[]; next?: string; remaining?: number }>();

  constructor(private readonly ctx: Ctx) {}

  refresh(item?: GkeNode): void {
    if (!item) this.pages.clear();
    this.changed.fire(item);
  }

  getTreeItem(item: GkeNode): vscode.TreeItem {
    return item;
  }

  async getChildren(item?: GkeNode): Promise<GkeNode[]> {
    try {
      return await this.children(item);
    } catch (e) {
      this.ctx.log.warn(`GKE view: ${describeError(e)}`);
      return [new GkeMessageItem(describeError(e), true)];
    }
  }

  private async children(item?: GkeNode): Promise<GkeNode[]> {
    if (!item) return [new GkeProjectItem(await this.ctx.backend())];
    if (item instanceof GkeProjectItem) {
      const clusters = await item.backend.gke.listClusters(item.backend.project);
      if (clusters.length === 0) return [new GkeMessageItem(`No GKE clusters in project ${item.backend.project}.`)];
      return clusters.sort((a, b) => a.cluster.localeCompare(b.cluster)).map((c) => new GkeClusterItem(item.backend, c));
    }
    if (item instanceof GkeClusterItem) {
      const pools = await item.backend.gke.nodePools(item.cluster);
      const tpu = pools.filter((p) => p.tpu);
      return [
        ...tpu.map((p) => new GkeNodePoolItem(item.backend, item.cluster, p)),
        ...(tpu.length === 0 ? [new GkeMessageItem('No TPU node pools.')] : []),
        new GkeFolderItem(item.backend, item.cluster, 'queues'),
        new GkeFolderItem(item.backend, item.cluster, 'workloads'),
      ];
    }
    if (item instanceof GkeNodePoolItem) {
      const kube = item.backend.gke.kube(item.cluster);
      const names = (await workloadsByNodePool(kube, 'default')).get(item.pool.name) ?? [];
      if (names.length === 0) return [new GkeMessageItem('No workload on this node pool.')];
      const ws = await Promise.all(names.map((n) => getWorkload(kube, 'default', n)));
      return sortWorkloads(ws).map((w) => new GkeWorkloadItem(item.backend, item.cluster, w, item.id!));
    }
    if (item instanceof GkeFolderItem && item.folder === 'queues') {
      const q = await listQueues(item.backend.gke.kube(item.cluster));
      if (q.noKueue) return [new GkeMessageItem('No Kueue on this cluster: workloads start without queueing.')];
      return q.clusterQueues.map((c) => {
        const row = queueRow(c);
        const it = new GkeMessageItem(row.label);
        drawn(it, row, 'list-ordered');
        return it;
      });
    }
    if (item instanceof GkeFolderItem) {
      const key = item.cluster.fullName;
      let page = this.pages.get(key);
      if (!page) {
        const first = await listWorkloads(item.backend.gke.kube(item.cluster), { limit: PAGE });
        page = { items: first.items, next: first.continue, remaining: first.remaining };
        this.pages.set(key, page);
      }
      const rows: GkeNode[] = sortWorkloads(page.items).map((w) => new GkeWorkloadItem(item.backend, item.cluster, w, item.id!));
      if (page.next) rows.push(new GkeMoreItem(item, page.next, page.remaining));
      if (rows.length === 0) rows.push(new GkeMessageItem('No workloads.'));
      return rows;
    }
    if (item instanceof GkeWorkloadItem) {
      const got = workloadChildren(item.workload, await listPods(item.backend.gke.kube(item.cluster), item.workload.namespace, item.workload.name));
      if ('message' in got) return [new GkeMessageItem(got.message)];
      return got.pods.map(({ pod, row }) => new GkePodItem(item.backend, item.cluster, item.workload, pod, row, item.id!));
    }
    return [];
  }

  /** "Load more…": the next page of a cluster's workloads appended to the ones shown. */
  async loadMore(more: GkeMoreItem): Promise<void> {
    const { folder } = more;
    const page = this.pages.get(folder.cluster.fullName);
    if (!page) return this.refresh(folder);
    const next = await listWorkloads(folder.backend.gke.kube(folder.cluster), { limit: PAGE, continue: more.token });
    page.items.push(...next.items);
    page.next = next.continue;
    page.remaining = next.remaining;
    this.changed.fire(folder);
  }

  dispose(): void {
    this.changed.dispose();
  }
}
