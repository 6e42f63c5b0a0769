import { isTpwError } from '../errors';
import type { TpuApi } from '../tpu/api';
import { shortName, type QueuedResource, type TpuNode } from '../tpu/models';
import { isNodeTransitional, isQueuedTransitional } from './node-status';

/** What one zone holds, or why it could not be listed. VMs and queued resources fail independently. */
export interface ZoneScan {
  zone: string;
  nodes: TpuNode[];
  queued: QueuedResource[];
  /** Listing the VMs failed: the zone shows an error item instead (the other zones still show). */
  nodesError?: unknown;
  /** Listing queued resources failed (e.g. the API is not enabled for them); the VMs still show. */
  queuedError?: unknown;
}

/** Runs `fn`, retrying transient failures; the explorer passes the core's withRetry. */
export type RetryRunner = <T>(fn: () => Promise<T>) => Promise<T>;

export interface ScanOptions {
  signal?: AbortSignal;
  retry?: RetryRunner;
}

/**
 * Lists every zone in parallel (a project with 20 TPU zones must not take 20 round trips in a row). One bad
 * zone, or a zone whose queued-resource listing fails, never hides the rest.
 */
export async function scanZones(api: TpuApi, project: string, zones: readonly string[], opts: ScanOptions = {}): Promise<ZoneScan[]> {
  const retry: RetryRunner = opts.retry ?? ((fn) => fn());
  return Promise.all(
    zones.map(async (zone): Promise<ZoneScan> => {
      const [nodes, queued] = await Promise.allSettled([
        retry(() => api.listNodes(project, zone, opts.signal)),
        retry(() => api.listQueuedResources(project, zone, opts.signal)),
      ]);
      const scan: ZoneScan = { zone, nodes: [], queued: [] };
      if (nodes.status === 'fulfilled') scan.nodes = [...nodes.value].sort((a, b) => shortName(a.name).localeCompare(shortName(b.name)));
      else scan.nodesError = nodes.reason;
      if (queued.status === 'fulfilled') scan.queued = [...queued.value].sort((a, b) => shortName(a.name).localeCompare(shortName(b.name)));
      else scan.queuedError = queued.reason;
      return scan;
    }),
  );
}

/** True when a scan shows anything that changes on its own, so the tree should look again soon. */
export function scanIsTransitional(scans: readonly ZoneScan[]): boolean {
  return scans.some((s) => s.nodes.some((n) => isNodeTransitional(n.state)) || s.queued.some((q) => isQueuedTransitional(q.state)));
}

/**
 * Errors that may go away by themselves (network, 503, a restarting emulator) are retried on a backoff;
 * permission, credentials and disabled APIs need the user, so retrying them would only spam the log.
 */
export function isRetryableError(e: unknown): boolean {
  if (isTpwError(e)) return e.code === 'UNAVAILABLE' || e.code === 'INTERNAL' || e.code === 'RESOURCE_EXHAUSTED';
  return true; // not ours: a socket error or similar
}

/** A scan failed in a way worth retrying on a timer. */
export function scanHasRetryableFailure(scans: readonly ZoneScan[]): boolean {
  return scans.some((s) => (s.nodesError !== undefined && isRetryableError(s.nodesError)) || (s.queuedError !== undefined && isRetryableError(s.queuedError)));
}

/** "vm-a=READY;qr-b=WAITING_FOR_RESOURCES;…": changes whenever anything shown changes state. */
export function scanFingerprint(scans: readonly ZoneScan[]): string {
  const parts: string[] = [];
  for (const s of scans) {
    for (const n of s.nodes) parts.push(`${n.name}=${n.state}`);
    for (const q of s.queued) parts.push(`${q.name}=${q.state}`);
    if (s.nodesError !== undefined) parts.push(`${s.zone}!nodes`);
  }
  return parts.join(';');
}

/** Every VM of the scans, in zone then name order. */
export function scannedNodes(scans: readonly ZoneScan[]): TpuNode[] {
  return scans.flatMap((s) => s.nodes);
}

