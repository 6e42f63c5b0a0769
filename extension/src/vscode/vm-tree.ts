import * as vscode from 'vscode';
import type { Backend } from '../core/backend';
import { describeError, isTpwError } from '../core/errors';
import { RefreshSchedule } from '../core/explorer/refresh-schedule';
import { nextTickMs } from '../core/explorer/tick';
import { scanFingerprint, scanHasRetryableFailure, scanIsTransitional, scannedNodes, scanZones, isRetryableError, type ZoneScan } from '../core/explorer/zone-scan';
import { withRetry } from '../core/tpu/zones';
import { parseNodeName, shortName, type TpuNode } from '../core/tpu/models';
import type { BackendState, Ctx } from './ctx';
import { childrenOf, ProjectItem, QueuedItem, resolveTooltip, shownCreateTimes, VmItem, type ExplorerNode } from './explorer/items';

export { ControlPlaneItem, QueuedItem, SliceGroupItem, VmItem, WorkerItem, ZoneItem, type ExplorerNode } from './explorer/items';

/** A listing that hangs (a dead proxy, a black-holed network) must not freeze the tree. */
const LIST_TIMEOUT_MS = 60_000;
/** Zones from the API's locations are stable; look them up again after this long. */
const ZONES_TTL_MS = 10 * 60_000;

export function zoneOf(node: TpuNode): string {
  return parseNodeName(node.name).zone;
}

const zoneCache = new Map<string, { zones: string[]; at: number }>();

/**
 * The zones to list: the configured ones (the backend has them), else every zone of the project that offers
 * Cloud TPU, from the API's locations (cached a few minutes: 20 zones do not change between refreshes).
 */
export async function explorerZones(backend: Backend, signal?: AbortSignal): Promise<string[]> {
  if (backend.zones.length > 0) return backend.zones;
  const key = `${backend.kind}:${backend.project}`;
  const cached = zoneCache.get(key);
  if (cached && Date.now() - cached.at < ZONES_TTL_MS) return cached.zones;
  const zones = (await backend.api.listZones(backend.project, signal)).map((z) => z.locationId).sort();
  zoneCache.set(key, { zones, at: Date.now() });
  return zones;
}

export interface ZoneListing {
  nodes: TpuNode[];
  /** Zones whose listing failed, with the reason; the others are still shown. */
  failures: { zone: string; error: unknown }[];
}

/** Lists every VM in every zone of the backend, in parallel; one bad zone does not hide the rest. */
export async function listAllNodes(backend: Backend): Promise<ZoneListing> {
  const zones = await explorerZones(backend);
  const settled = await Promise.allSettled(zones.map((z) => backend.api.listNodes(backend.project, z)));
  const nodes: TpuNode[] = [];
  const failures: ZoneListing['failures'] = [];
  settled.forEach((r, i) => {
    if (r.status === 'fulfilled') nodes.push(...r.value);
    else failures.push({ zone: zones[i], error: r.reason });
  });
  nodes.sort((a, b) => zoneOf(a).localeCompare(zoneOf(b)) || shortName(a.name).localeCompare(shortName(b.name)));
  return { nodes, failures };
}

/** A zone worth a row: it holds something, or its listing failed. Empty zones would bury the rest. */
function isShown(scan: ZoneScan): boolean {
  // A backend without queued resources answers NOT_FOUND: that alone is not worth a row.
  const queuedFailed = scan.queuedError !== undefined && !isTpwError(scan.queuedError, 'NOT_FOUND');
  return scan.nodes.length > 0 || scan.queued.length > 0 || scan.nodesError !== undefined || queuedFailed;
}

/** What the last successful listing showed, kept to redraw the rows (ages) without asking the API again. */
interface Listed {
  project: string;
  kind: Backend['kind'];
  shown: ZoneScan[];
  zoneCount: number;
}

/**
 * The "TPU VMs" view: project → zone → VM → workers, with each zone's queued resources. The root listing
 * scans every zone in parallel; rows below it come from that scan. It lists again when something says the VMs
 * changed (ExplorerWatch: another process's create or delete, the emulator starting or stopping, the window
 * coming back), and on its own only while something is transitional or a zone failed transiently, on a backoff
 * schedule (RefreshSchedule). Between listings the rows are redrawn from the last one whenever an age shown on
 * them would change (core/explorer/tick.ts), while the view is visible.
 */
export class VmTreeProvider implements vscode.TreeDataProvider<ExplorerNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<ExplorerNode | ExplorerNode[] | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private pollTimer: NodeJS.Timeout | undefined;
  private view: vscode.TreeView<ExplorerNode> | undefined;
  private readonly schedule = new RefreshSchedule();
  /** The last successful listing, for commands that want VMs without another round trip. */
  lastNodes: TpuNode[] = [];
  /** The last scan, per zone (zones with nothing in them included). */
  lastScans: ZoneScan[] = [];
  /** When the last listing (successful or not) ended; 0 before the first. */
  lastListedAt = 0;
  private listed: Listed | undefined;
  /** The next root request must ask the API (a refresh), not redraw the last listing (a tick). */
  private mustList = true;
  private tickTimer: NodeJS.Timeout | undefined;

  constructor(private readonly ctx: Ctx) {}

  attach(view: vscode.TreeView<ExplorerNode>): void {
    this.view = view;
    this.ctx.own(view.onDidChangeVisibility((e) => (e.visible ? this.redraw() : this.clearTick())));
  }

  get visible(): boolean {
    return this.view?.visible ?? false;
  }

  /** Lists again. `fromUser`: the Refresh button, which also resets the polling backoff. */
  refresh(fromUser = false): void {
    if (fromUser) this.schedule.reset();
    this.mustList = true;
    this.changed.fire(undefined);
  }

  /** Draws the rows again from the last listing; lists when there is none. */
  redraw(): void {
    this.clearTick();
    this.changed.fire(undefined);
  }

  /** Rows showing an age, as drawn (updated in place on a tick: a menu opened on one still finds it). */
  private aged: (VmItem | QueuedItem)[] = [];

  /** Every row with an age gets its description as of now; only those rows are redrawn. */
  private tickAges(): void {
    const now = new Date();
    for (const item of this.aged) item.refreshAge(now);
    if (this.aged.length > 0) this.changed.fire([...this.aged]);
    if (this.listed) this.scheduleTick(this.listed);
  }

  /**
   * Lists now, without waiting for VS Code to ask (it asks only while it draws the tree, not while the view shows
   * its welcome content), sets the welcome content's state, draws the rows, and resolves with that state.
   */
  async listNow(): Promise<BackendState> {
    try {
      await this.listRoot();
    } finally {
      this.lastListedAt = Date.now();
    }
    this.mustList = false;
    this.changed.fire(undefined);
    return this.ctx.backendState;
  }

  getTreeItem(element: ExplorerNode): vscode.TreeItem {
    return element;
  }

  resolveTreeItem(item: vscode.TreeItem, element: ExplorerNode): vscode.TreeItem {
    item.tooltip ??= resolveTooltip(element);
    return item;
  }

  async getChildren(element?: ExplorerNode): Promise<ExplorerNode[]> {
    if (element) {
      const children = childrenOf(element);
      for (const c of children) if (c instanceof VmItem || c instanceof QueuedItem) this.aged.push(c);
      return children;
    }
    this.aged = [];
    if (!this.mustList && this.listed) return this.drawRoot(this.listed);
    this.mustList = false;
    try {
      return await this.listRoot();
    } finally {
      this.lastListedAt = Date.now();
    }
  }

  private drawRoot(l: Listed): ExplorerNode[] {
    this.scheduleTick(l);
    if (l.shown.length === 0) return [];
    return [new ProjectItem(l.project, l.kind, l.shown, l.zoneCount)];
  }

  /** The next redraw, when an age on screen next changes; none while the view is hidden. */
  private scheduleTick(l: Listed): void {
    this.clearTick();
    if (!this.visible) return;
    const now = Date.now();
    const delay = nextTickMs({ ages: shownCreateTimes(l.shown).map((t) => now - Date.parse(t)).filter((a) => Number.isFinite(a)) });
    if (delay !== undefined) this.tickTimer = setTimeout(() => this.tickAges(), delay);
  }

  private clearTick(): void {
    if (this.tickTimer) clearTimeout(this.tickTimer);
    this.tickTimer = undefined;
  }

  private async listRoot(): Promise<ExplorerNode[]> {
    this.clearPoll();
    this.listed = undefined;
    let backend: Backend;
    try {
      backend = await this.ctx.backend();
    } catch (e) {
      this.lastNodes = [];
      this.lastScans = [];
      if (isTpwError(e, 'EMULATOR_NOT_RUNNING')) {
        this.ctx.setContext('backendKind', 'emulator');
        this.ctx.setContext('backendState', 'emulatorStopped');
        this.setMessage(undefined);
      } else {
        this.fail('opening backend', e);
      }
      return [];
    }
    this.ctx.setContext('backendKind', backend.kind);
    const signal = AbortSignal.timeout(LIST_TIMEOUT_MS);
    let zones: string[];
    try {
      zones = await explorerZones(backend, signal);
    } catch (e) {
      this.fail(`listing the zones of ${backend.project}`, e);
      this.poll({ fingerprint: 'zones!', transitional: false, retryableFailure: true });
      return [];
    }
    const scans = await scanZones(backend.api, backend.project, zones, { signal, retry: (fn) => withRetry(() => fn(), { retries: 2, signal, retryOn: isRetryableError }) });
    for (const s of scans) {
      if (s.nodesError !== undefined) this.ctx.log.warn(`listing VMs in ${s.zone}: ${describeError(s.nodesError)}`);
      if (s.queuedError !== undefined) this.ctx.log.warn(`listing queued resources in ${s.zone}: ${describeError(s.queuedError)}`);
    }
    if (zones.length > 0 && scans.every((s) => s.nodesError !== undefined)) {
      // Every zone failed: most likely the emulator just died or credentials are wrong. Treat a vanished
      // emulator like a stopped one, so the welcome view offers to start it again.
      const errors = scans.map((s) => s.nodesError);
      const stopped = backend.kind === 'emulator' && errors.some((e) => isTpwError(e, 'EMULATOR_NOT_RUNNING') || isTpwError(e, 'UNAVAILABLE'));
      this.lastNodes = [];
      this.lastScans = [];
      if (stopped) {
        this.ctx.dropBackend();
        this.ctx.setContext('backendState', 'emulatorStopped');
        this.setMessage(undefined);
        return [];
      }
      this.fail(`listing TPU VMs in ${backend.project}`, errors[0]);
      this.poll({ fingerprint: scanFingerprint(scans), transitional: false, retryableFailure: scanHasRetryableFailure(scans) });
      return [];
    }
    this.lastScans = scans;
    this.lastNodes = scannedNodes(scans);
    this.ctx.setContext('backendState', 'ready');
    this.ctx.setContext('hasReadyVm', this.lastNodes.some((n) => n.state === 'READY'));
    this.setMessage(undefined);
    this.lastShownError = undefined;
    this.poll({ fingerprint: scanFingerprint(scans), transitional: scanIsTransitional(scans), retryableFailure: scanHasRetryableFailure(scans) });
    // Nothing anywhere: an empty root lets the welcome view offer "Create TPU VM".
    this.listed = { project: backend.project, kind: backend.kind, shown: scans.filter(isShown), zoneCount: zones.length };
    return this.drawRoot(this.listed);
  }

  private poll(obs: Parameters<RefreshSchedule['next']>[0]): void {
    const delay = this.schedule.next(obs);
    if (delay !== undefined) this.pollTimer = setTimeout(() => this.refresh(), delay);
  }

  private fail(what: string, e: unknown): void {
    this.ctx.log.error(`${what}: ${describeError(e)}`);
    this.ctx.setContext('backendState', 'error');
    this.setMessage(describeError(e));
    // Credentials and disabled APIs have a fix one click away: say so once per distinct error.
    const key = `${what}|${describeError(e)}`;
    if (key !== this.lastShownError) {
      this.lastShownError = key;
      this.ctx.showError(what[0].toUpperCase() + what.slice(1), e);
    }
  }

  private lastShownError: string | undefined;

  private setMessage(message: string | undefined): void {
    if (this.view) this.view.message = message;
  }

  private clearPoll(): void {
    if (this.pollTimer) clearTimeout(this.pollTimer);
    this.pollTimer = undefined;
  }

  dispose(): void {
    this.clearPoll();
    this.clearTick();
    this.changed.dispose();
  }
}
