import * as https from 'node:https';

/**
 * The emulator's own client of its clusters' API servers: JSON over HTTPS with a bearer token, list pages and
 * watches. Small on purpose (the emulator imports nothing of the product, and @kubernetes/client-node is the
 * product's and the tests' client, not the emulator's).
 */

export type KubeObject = {
  apiVersion?: string;
  kind?: string;
  metadata: KubeMeta;
  spec?: unknown;
  status?: unknown;
  [k: string]: unknown;
};
export interface KubeMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  creationTimestamp?: string;
  ownerReferences?: { kind: string; name: string; uid: string; controller?: boolean }[];
  [k: string]: unknown;
}

export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: KubeObject;
}

export class KubeError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly reason?: string,
  ) {
    super(message);
  }
}

export interface KubeClientOptions {
  /** https://host:port */
  server: string;
  token: string;
  caPem: string;
}

export class KubeClient {
  private readonly agent: https.Agent;
  private readonly url: URL;

  constructor(private readonly opts: KubeClientOptions) {
    this.url = new URL(opts.server);
    this.agent = new https.Agent({ ca: opts.caPem, keepAlive: true, maxSockets: 16 });
  }

  close(): void {
    this.agent.destroy();
  }

  get<T = KubeObject>(p: string): Promise<T> {
    return this.request<T>('GET', p);
  }

  create<T = KubeObject>(p: string, body: unknown): Promise<T> {
    return this.request<T>('POST', p, body);
  }

  /** A JSON merge patch (RFC 7386), or a strategic one where `strategic`. */
  patch<T = KubeObject>(p: string, body: unknown, type: 'merge' | 'strategic' | 'json' = 'merge'): Promise<T> {
    const ct = { merge: 'application/merge-patch+json', strategic: 'application/strategic-merge-patch+json', json: 'application/json-patch+json' }[type];
    return this.request<T>('PATCH', p, body, ct);
  }

  put<T = KubeObject>(p: string, body: unknown): Promise<T> {
    return this.request<T>('PUT', p, body);
  }

  delete(p: string, body?: unknown): Promise<unknown> {
    return this.request('DELETE', p, body);
  }

  /** Creates the object, or replaces what is there (keeping its resourceVersion): `kubectl apply` for our own objects. */
  async apply(collection: string, obj: KubeObject): Promise<KubeObject> {
    try {
      return await this.create(collection, obj);
    } catch (e) {
      if (!(e instanceof KubeError) || e.code !== 409) throw e;
      const item = `${collection}/${obj.metadata.name}`;
      // A controller may write the object (Kueue its LocalQueue's status) between the read and the replace: the
      // replace is refused with 409 then, and is made again on the newer version.
      for (let attempt = 1; ; attempt++) {
        const current = await this.get(item);
        try {
          return await this.put(item, { ...obj, metadata: { ...obj.metadata, resourceVersion: current.metadata.resourceVersion } });
        } catch (e2) {
          if (!(e2 instanceof KubeError) || e2.code !== 409 || attempt >= 5) throw e2;
        }
      }
    }
  }

  /** Every item of a list, page by page (`limit` + `continue`). */
  async list<T = KubeObject>(p: string, query: Record<string, string> = {}): Promise<{ items: T[]; resourceVersion: string }> {
    const items: T[] = [];
    let cont = '';
    for (;;) {
      const q = new URLSearchParams({ ...query, limit: '500', ...(cont ? { continue: cont } : {}) });
      const page = await this.get<{ items: T[]; metadata: { continue?: string; resourceVersion: string } }>(`${p}?${q}`);
      items.push(...page.items);
      cont = page.metadata.continue ?? '';
      if (!cont) return { items, resourceVersion: page.metadata.resourceVersion };
    }
  }

  request<T>(method: string, p: string, body?: unknown, contentType = 'application/json'): Promise<T> {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise<T>((resolve, reject) => {
      const req = https.request(
        {
          host: this.url.hostname,
          port: this.url.port,
          path: p,
          method,
          agent: this.agent,
          headers: {
            authorization: `Bearer ${this.opts.token}`,
            accept: 'application/json',
            ...(data ? { 'content-type': contentType, 'content-length': data.length } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown;
            try {
              parsed = text ? JSON.parse(text) : {};
            } catch {
              parsed = { message: text };
            }
            const status = res.statusCode ?? 0;
            if (status >= 200 && status < 300) return resolve(parsed as T);
            const s = parsed as { message?: string; reason?: string };
            reject(new KubeError(status, `${method} ${p}: ${s.message ?? `HTTP ${status}`}`, s.reason));
          });
        },
      );
      req.on('error', reject);
      req.end(data);
    });
  }

  /**
   * Follows `p` (a collection) from `resourceVersion` until `signal` aborts: `onEvent` for each change. Returns
   * when the server ends the watch (a timeout, or 410 Gone: the caller lists again).
   */
  watch(p: string, query: Record<string, string>, onEvent: (e: WatchEvent) => void, signal: AbortSignal): Promise<'ended' | 'gone'> {
    const q = new URLSearchParams({ ...query, watch: 'true', allowWatchBookmarks: 'true' });
    return new Promise((resolve, reject) => {
      const req = https.request(
        {
          host: this.url.hostname,
          port: this.url.port,
          path: `${p}?${q}`,
          method: 'GET',
          // A watch holds its socket for minutes: not one of the agent's kept-alive ones.
          agent: false,
          ca: this.opts.caPem,
          headers: { authorization: `Bearer ${this.opts.token}`, accept: 'application/json' },
          signal,
        },
        (res) => {
          if (res.statusCode === 410) return resolve('gone');
          if (res.statusCode !== 200) {
            res.resume();
            return reject(new KubeError(res.statusCode ?? 0, `watch ${p}: HTTP ${res.statusCode}`));
          }
          let buf = '';
          let gone = false;
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            buf += chunk;
            let nl: number;
            while ((nl = buf.indexOf('\n')) >= 0) {
              const line = buf.slice(0, nl).trim();
              buf = buf.slice(nl + 1);
              if (!line) continue;
              const ev = JSON.parse(line) as WatchEvent;
              if (ev.type === 'ERROR') {
                if ((ev.object as unknown as { code?: number }).code === 410) gone = true;
                continue;
              }
              onEvent(ev);
            }
          });
          res.on('end', () => resolve(gone ? 'gone' : 'ended'));
          res.on('error', (e) => (signal.aborted ? resolve('ended') : reject(e)));
        },
      );
      req.on('error', (e) => (signal.aborted ? resolve('ended') : reject(e)));
      req.end();
    });
  }
}

/**
 * Keeps `onEvent` fed with every change to a collection for as long as `signal` lives: lists (each item as
 * ADDED, so a restarted follower sees what it missed), then watches from there, listing again after a 410.
 */
export async function informer(
  client: KubeClient,
  p: string,
  query: Record<string, string>,
  onEvent: (e: WatchEvent) => void,
  signal: AbortSignal,
  onError: (e: Error) => void = () => undefined,
): Promise<void> {
  let rv: string | undefined;
  while (!signal.aborted) {
    try {
      if (rv === undefined) {
        const listed = await client.list(p, query);
        for (const item of listed.items) onEvent({ type: 'ADDED', object: item });
        rv = listed.resourceVersion;
      }
      const outcome = await client.watch(p, { ...query, resourceVersion: rv, timeoutSeconds: '300' }, (e) => {
        if (e.object.metadata.resourceVersion) rv = e.object.metadata.resourceVersion;
        if (e.type !== 'BOOKMARK') onEvent(e);
      }, signal);
      if (outcome === 'gone') rv = undefined;
    } catch (e) {
      if (signal.aborted) return;
      onError(e as Error);
      rv = undefined;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}
