import { isTpwError, TpwError } from '../errors';
import type { TpuApi } from './api';

/**
 * Zone-wide questions asked of the API ("which zones offer v6e-8?") and the retry policy for network
 * errors. Zones are queried in parallel, a few at a time: Cloud TPU has some 30 zones, and asking them one by
 * one makes a wizard step take seconds.
 */

export interface ZonesOfferingOptions {
  signal?: AbortSignal;
  /** Zones queried at once (default 8). */
  concurrency?: number;
  /** Ask only these zones instead of every zone the API lists. */
  zones?: readonly string[];
}

/**
 * Zones of the project whose accelerator types include `acceleratorType`, sorted. A zone whose types cannot
 * be listed (e.g. one the project may not use) is skipped; errors that concern every zone (API disabled, no
 * credentials, cancelled) are thrown.
 */
export async function zonesOffering(api: TpuApi, project: string, acceleratorType: string, opts: ZonesOfferingOptions = {}): Promise<string[]> {
  const zones = opts.zones ? [...opts.zones] : (await api.listZones(project, opts.signal)).map((z) => z.locationId);
  const offered = await mapBounded(zones, opts.concurrency ?? 8, opts.signal, async (zone) => {
    try {
      const types = await api.listAcceleratorTypes(project, zone, opts.signal);
      return types.some((t) => t.type === acceleratorType) ? zone : undefined;
    } catch (e) {
      if (isGlobalFailure(e)) throw e;
      return undefined;
    }
  });
  return offered.filter((z): z is string => z !== undefined).sort();
}

/** Errors that no other zone would answer differently. */
function isGlobalFailure(e: unknown): boolean {
  return ['CANCELLED', 'API_DISABLED', 'UNAUTHENTICATED', 'EMULATOR_NOT_RUNNING'].some((c) => isTpwError(e, c as TpwError['code']));
}

/**
 * Runs `fn` over `items` with at most `limit` calls in flight; results keep the items' order. The first
 * failure rejects (the calls already running finish on their own); an aborted signal stops starting new ones.
 */
export async function mapBounded<T, R>(items: readonly T[], limit: number, signal: AbortSignal | undefined, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      if (signal?.aborted) throw new TpwError('CANCELLED', 'Cancelled.');
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  };
  const n = Math.max(1, Math.min(Math.floor(limit) || 1, items.length));
  await Promise.all(Array.from({ length: n }, worker));
  return out;
}

export interface RetryOptions {
  /** Retries after the first attempt (default 3). */
  retries?: number;
  /** Delay before the first retry; doubles each time (default 500 ms). */
  baseMs?: number;
  /** Longest delay between attempts (default 10 s). */
  maxMs?: number;
  signal?: AbortSignal;
  /** Which errors are worth another try (default: TpwError UNAVAILABLE — a network error or a 503). */
  retryOn?: (e: unknown) => boolean;
  /** Called before each wait, e.g. to show "retrying in 2 s". */
  onRetry?: (info: { attempt: number; delayMs: number; error: unknown }) => void;
  /** Randomize each delay to 50–100 % of its value so that many clients do not retry in step (default true). */
  jitter?: boolean;
}

/**
 * Calls `fn` until it succeeds, retrying transient failures with exponential backoff. The last error is
 * thrown when retries run out; an abort during a wait throws TpwError CANCELLED at once.
 */
export async function withRetry<T>(fn: (attempt: number) => Promise<T>, opts: RetryOptions = {}): Promise<T> {
  const retries = opts.retries ?? 3;
  const base = opts.baseMs ?? 500;
  const max = opts.maxMs ?? 10_000;
  const retryOn = opts.retryOn ?? ((e: unknown) => isTpwError(e, 'UNAVAILABLE'));
  for (let attempt = 0; ; attempt++) {
    if (opts.signal?.aborted) throw new TpwError('CANCELLED', 'Cancelled.');
    try {
      return await fn(attempt);
    } catch (e) {
      if (attempt >= retries || !retryOn(e)) throw e;
      const full = Math.min(max, base * 2 ** attempt);
      const delayMs = Math.round(opts.jitter === false ? full : full * (0.5 + Math.random() / 2));
      opts.onRetry?.({ attempt: attempt + 1, delayMs, error: e });
      await sleep(delayMs, opts.signal);
    }
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = () => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new TpwError('CANCELLED', 'Cancelled while waiting to retry.'));
    };
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
