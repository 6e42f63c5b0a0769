import type * as k8s from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import * as https from 'node:https';
import type { IncomingMessage } from 'node:http';
import { TpwError, type TpwErrorCode } from '../errors';
import type { TokenSource } from './credentials';

/**
 * One cluster's Kubernetes API through `@kubernetes/client-node` 1.x: the server's address and CA, and a bearer
 * token asked of a TokenSource at every request (so an expiring one is refreshed, credentials.ts). Errors become
 * TpwErrors naming the cluster and the object. The library is bundled apart (dist/kubernetes.js) and loaded at
 * the first client: listing VMs or profiling never pays for it.
 */

export function kubernetesLibrary(): typeof k8s {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use, not at start (above)
  return require('@kubernetes/client-node') as typeof k8s;
}

export interface KubeEndpoint {
  /** For messages: `cluster "demo"`. */
  label: string;
  /** https://host[:port] */
  server: string;
  caPem?: string;
  tokens: TokenSource;
}

const USER = 'tpw-token';

export class KubeClient {
  readonly config: k8s.KubeConfig;
  private apis = new Map<unknown, unknown>();

  constructor(readonly endpoint: KubeEndpoint) {
    const lib = kubernetesLibrary();
    const kc = new lib.KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: endpoint.server, ...(endpoint.caPem ? { caData: Buffer.from(endpoint.caPem).toString('base64') } : {}) }],
      users: [{ name: USER }],
      contexts: [{ name: 'c', cluster: 'c', user: USER }],
      currentContext: 'c',
    });
    kc.addAuthenticator({
      isAuthProvider: (user) => user.name === USER,
      applyAuthentication: async (_user, opts) => {
        const token = await endpoint.tokens.token();
        opts.headers = { ...(opts.headers as Record<string, string> | undefined), Authorization: `Bearer ${token}` };
      },
    });
    this.config = kc;
  }

  api<T extends k8s.ApiType>(cls: new (config: k8s.Configuration) => T): T {
    let api = this.apis.get(cls) as T | undefined;
    if (!api) {
      api = this.config.makeApiClient(cls);
      this.apis.set(cls, api);
    }
    return api;
  }

  get core(): k8s.CoreV1Api {
    return this.api(kubernetesLibrary().CoreV1Api);
  }

  get custom(): k8s.CustomObjectsApi {
    return this.api(kubernetesLibrary().CustomObjectsApi);
  }

  /**
   * Opens a container's log (`GET …/pods/POD/log`, the query as the API takes it: container, follow, timestamps,
   * sinceTime, …) and resolves with the response stream once the server answered 200; `signal` closes it. Its own
   * request rather than the library's `Log`, whose stream never ends when the connection breaks (the watcher must see
   * that to reconnect).
   */
  async openLog(namespace: string, pod: string, query: Record<string, string>, signal: AbortSignal): Promise<IncomingMessage> {
    const url = new URL(`${this.endpoint.server}/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(pod)}/log`);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    const opts: https.RequestOptions = {};
    await this.config.applyToHTTPSOptions(opts);
    const what = `read the log of pod ${pod}`;
    return new Promise<IncomingMessage>((resolve, reject) => {
      const req = https.request(url, { ...opts, method: 'GET', signal }, (res) => {
        if (res.statusCode === 200) return resolve(res);
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => reject(kubeError({ code: res.statusCode, body }, what, this.endpoint)));
        res.on('error', (e) => reject(kubeError(e, what, this.endpoint)));
      });
      req.on('error', (e) => reject(kubeError(e, what, this.endpoint)));
      req.end();
    });
  }

  /** Runs `call`, turning the library's ApiException (and network errors) into a TpwError about `what`. */
  async call<T>(what: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (e) {
      throw kubeError(e, what, this.endpoint);
    }
  }
}

interface ApiExceptionLike {
  code?: unknown;
  body?: unknown;
  message?: unknown;
}

/** The Status message the API server put in an error's body, if any. */
function statusMessage(body: unknown): string | undefined {
  if (typeof body === 'string') {
    try {
      return statusMessage(JSON.parse(body));
    } catch {
      return body.trim() || undefined;
    }
  }
  if (body && typeof body === 'object' && typeof (body as { message?: unknown }).message === 'string') return (body as { message: string }).message;
  return undefined;
}

/** An error from the Kubernetes API → one sentence naming the cluster and what was asked. */
export function kubeError(e: unknown, what: string, ep: Pick<KubeEndpoint, 'label' | 'server' | 'tokens'>): TpwError {
  if (e instanceof TpwError) return e;
  const err = (e ?? {}) as ApiExceptionLike;
  const code = typeof err.code === 'number' ? err.code : undefined;
  const detail = statusMessage(err.body) ?? String(err.message ?? e).split('\n')[0];
  const fail = (c: TpwErrorCode, msg: string) => new TpwError(c, msg, { cause: e });
  switch (code) {
    case 401:
      return fail('UNAUTHENTICATED', `The Kubernetes API of ${ep.label} refused the credential from ${ep.tokens.describe} (expired or revoked) to ${what}: run \`gcloud auth login\` and \`gcloud auth application-default login\`, then retry.`);
    case 403:
      return fail('PERMISSION_DENIED', `Permission denied on ${ep.label} to ${what}: ${detail}`);
    case 404:
      return fail('NOT_FOUND', `Not found on ${ep.label} (${what}): ${detail}`);
    case 409:
      return fail('ALREADY_EXISTS', `Already exists on ${ep.label} (${what}): ${detail}`);
    case 400:
    case 422:
      return fail('INVALID_ARGUMENT', `${ep.label} refused to ${what}: ${detail}`);
    case 429:
    case 500:
    case 503:
      return fail('UNAVAILABLE', `The Kubernetes API of ${ep.label} is unavailable (${what}): ${detail} Retry in a moment.`);
    default: {
      const net = /ECONNREFUSED|ENOTFOUND|ETIMEDOUT|EHOSTUNREACH|ECONNRESET|socket hang up|certificate|self.signed/i.exec(String(err.message ?? ''));
      if (net) return fail('UNAVAILABLE', `Cannot reach the Kubernetes API of ${ep.label} at ${ep.server} to ${what} (${net[0]}).`);
      return fail('INTERNAL', `Failed to ${what} on ${ep.label}: ${detail}`);
    }
  }
}
