import { v2 } from '@google-cloud/tpu';
import { OAuth2Client } from 'google-auth-library';
import type { EmulatorEndpoint } from '../local-emulator';
import { TpwError, type TpwErrorCode } from '../errors';
import type { CreateNodeRequest, CreateQueuedResourceRequest, OperationProgress, TpuApi, WaitOptions } from './api';
import {
  nodeResourceName,
  queuedResourceName,
  type AcceleratorType,
  type NodeId,
  type QueuedResource,
  type QueuedResourceId,
  type RuntimeVersion,
  type TpuNode,
  type Zone,
} from './models';
import { isoToTimestamp, shortNameOf, toINode, toQueuedResource, toTpuNode, type IQueuedResource } from './v2-messages';

/**
 * TpuApi over the real `@google-cloud/tpu` v2 client, for Google and for the local emulator alike: only the
 * endpoint and the credentials differ. Both use the REST transport (`fallback: true`), so what the emulator
 * tests is exactly what talks to Google — and it bundles with esbuild without gRPC's native-ish loaders.
 */

type ClientOptions = NonNullable<ConstructorParameters<typeof v2.TpuClient>[0]>;

export interface CloudTpuApiOptions {
  /** 'google' (default) or 'emulator'; for the emulator use emulatorTpuApi(), which sets the endpoint. */
  kind?: 'google' | 'emulator';
  /** Passed to TpuClient; `fallback: true` is added. Leave empty for Google with Application Default Credentials. */
  clientOptions?: ClientOptions;
  description?: string;
  /** Set for the local emulator: connection failures then say how to start it. */
  emulator?: { host: string; port: number };
}

/** The subset of gax's LROperation this module uses. */
interface Lro<T> {
  name?: string;
  promise(): Promise<[T, unknown, unknown]>;
  on(event: 'progress', fn: () => void): unknown;
  off(event: 'progress', fn: () => void): unknown;
  removeAllListeners(event: 'complete'): unknown;
}

type Verb = 'list' | 'get' | 'create' | 'delete' | 'start' | 'stop' | 'update' | 'list accelerator types of' | 'list runtime versions of' | 'list zones of';
interface Ctx {
  verb: Verb;
  project: string;
  /** Empty for project-wide calls (list zones). */
  zone: string;
  node?: string;
  /** What is acted on when it is not a TPU VM, e.g. `queued resource "qr1"` or `queued resources`. */
  what?: string;
  /** The accelerator type a create asks for: quota errors name it. */
  acceleratorType?: string;
}

/** Poll an operation every 100 ms at first, at most every 5 s (gax's default backs off to 60 s). */
const LRO_BACKOFF = { initialRetryDelayMillis: 100, retryDelayMultiplier: 1.3, maxRetryDelayMillis: 5000, totalTimeoutMillis: 60 * 60_000 };

/**
 * The emulator's credentials: its bearer token as an OAuth2 access token, so the client sends
 * `Authorization: Bearer <token>` itself, as it sends Google's. gax's REST transport takes an OAuth2Client as
 * `auth` (the path it documents for browsers); a token with no expiry is never refreshed, and no Application
 * Default Credentials lookup happens, which matters on a laptop without gcloud and in tests.
 */
function emulatorCredentials(token: string): OAuth2Client {
  const auth = new OAuth2Client();
  auth.setCredentials({ access_token: token, token_type: 'Bearer' });
  return auth;
}

export class CloudTpuApi implements TpuApi {
  readonly description: string;
  private readonly client: v2.TpuClient;
  private readonly emulator?: { host: string; port: number };

  constructor(opts: CloudTpuApiOptions = {}) {
    this.client = new v2.TpuClient({ fallback: true, ...opts.clientOptions });
    this.emulator = opts.emulator;
    this.description = opts.description ?? (opts.emulator ? `local emulator (${opts.emulator.host}:${opts.emulator.port})` : 'Cloud TPU API');
  }

  async listNodes(project: string, zone: string, signal?: AbortSignal): Promise<TpuNode[]> {
    const ctx: Ctx = { verb: 'list', project, zone };
    const [nodes] = await this.call(ctx, signal, () => this.client.listNodes({ parent: parent(project, zone) }));
    return nodes.map(toTpuNode);
  }

  async getNode(id: NodeId, signal?: AbortSignal): Promise<TpuNode> {
    const [node] = await this.call(ctxOf('get', id), signal, () => this.client.getNode({ name: nodeResourceName(id) }));
    return toTpuNode(node);
  }

  async createNode(req: CreateNodeRequest, opts?: WaitOptions): Promise<TpuNode> {
    const ctx: Ctx = { verb: 'create', project: req.project, zone: req.zone, node: req.nodeId, acceleratorType: req.acceleratorType };
    const node = toINode(req);
    const [op] = await this.call(ctx, opts?.signal, () =>
      this.client.createNode({ parent: parent(req.project, req.zone), nodeId: req.nodeId, node }, { longrunning: LRO_BACKOFF }),
    );
    return toTpuNode(await this.wait(ctx, op, opts));
  }

  async deleteNode(id: NodeId, opts?: WaitOptions): Promise<void> {
    const ctx = ctxOf('delete', id);
    const [op] = await this.call(ctx, opts?.signal, () => this.client.deleteNode({ name: nodeResourceName(id) }, { longrunning: LRO_BACKOFF }));
    await this.wait(ctx, op, opts);
  }

  async startNode(id: NodeId, opts?: WaitOptions): Promise<TpuNode> {
    const ctx = ctxOf('start', id);
    const [op] = await this.call(ctx, opts?.signal, () => this.client.startNode({ name: nodeResourceName(id) }, { longrunning: LRO_BACKOFF }));
    return toTpuNode(await this.wait(ctx, op, opts));
  }

  async stopNode(id: NodeId, opts?: WaitOptions): Promise<TpuNode> {
    const ctx = ctxOf('stop', id);
    const [op] = await this.call(ctx, opts?.signal, () => this.client.stopNode({ name: nodeResourceName(id) }, { longrunning: LRO_BACKOFF }));
    return toTpuNode(await this.wait(ctx, op, opts));
  }

  async updateNodeMetadata(id: NodeId, metadata: Record<string, string>, opts?: WaitOptions): Promise<TpuNode> {
    const ctx = ctxOf('update', id);
    const [op] = await this.call(ctx, opts?.signal, () =>
      this.client.updateNode({ node: { name: nodeResourceName(id), metadata }, updateMask: { paths: ['metadata'] } }, { longrunning: LRO_BACKOFF }),
    );
    return toTpuNode(await this.wait(ctx, op, opts));
  }

  async listAcceleratorTypes(project: string, zone: string, signal?: AbortSignal): Promise<AcceleratorType[]> {
    const ctx: Ctx = { verb: 'list accelerator types of', project, zone };
    const [types] = await this.call(ctx, signal, () => this.client.listAcceleratorTypes({ parent: parent(project, zone) }));
    return types.map((t) => ({ name: t.name ?? '', type: t.type ?? '' }));
  }

  async listRuntimeVersions(project: string, zone: string, signal?: AbortSignal): Promise<RuntimeVersion[]> {
    const ctx: Ctx = { verb: 'list runtime versions of', project, zone };
    const [versions] = await this.call(ctx, signal, () => this.client.listRuntimeVersions({ parent: parent(project, zone) }));
    return versions.map((v) => ({ name: v.name ?? '', version: v.version ?? '' }));
  }

  async listZones(project: string, signal?: AbortSignal): Promise<Zone[]> {
    const ctx: Ctx = { verb: 'list zones of', project, zone: '', what: 'Cloud TPU' };
    // The v2 client exposes ListLocations only as an async iterator (gax's Locations mixin, which calls
    // GET /v1/projects/p/locations — Cloud TPU serves it there); it follows nextPageToken itself.
    // autoPaginate: false only silences gax's warning that iterators never auto-paginate.
    const zones = await this.call(ctx, signal, async () => {
      const out: Zone[] = [];
      for await (const loc of this.client.listLocationsAsync({ name: `projects/${project}` }, { autoPaginate: false })) {
        if (signal?.aborted) break;
        out.push({ name: loc.name ?? '', locationId: loc.locationId ?? shortNameOf(loc.name ?? '') });
      }
      return out;
    });
    return zones.sort((a, b) => a.locationId.localeCompare(b.locationId));
  }

  async listQueuedResources(project: string, zone: string, signal?: AbortSignal): Promise<QueuedResource[]> {
    const ctx: Ctx = { verb: 'list', project, zone, what: 'queued resources' };
    const [qrs] = await this.call(ctx, signal, () => this.client.listQueuedResources({ parent: parent(project, zone) }));
    return qrs.map(toQueuedResource);
  }

  async createQueuedResource(req: CreateQueuedResourceRequest, opts?: WaitOptions): Promise<QueuedResource> {
    const ctx: Ctx = {
      verb: 'create',
      project: req.project,
      zone: req.zone,
      what: `queued resource "${req.queuedResourceId}"`,
      acceleratorType: req.node.acceleratorType,
    };
    const where = parent(req.project, req.zone);
    const qr: IQueuedResource = {
      tpu: {
        nodeSpec: [
          {
            parent: where,
            ...(req.slices !== undefined && req.slices > 1 ? { multisliceParams: { nodeCount: req.slices, nodeIdPrefix: req.node.nodeId } } : { nodeId: req.node.nodeId }),
            node: toINode({ ...req.node, project: req.project, zone: req.zone }),
          },
        ],
      },
      ...(req.tier === 'spot' ? { spot: {} } : { guaranteed: {} }),
      ...(req.validUntil ? { queueingPolicy: { validUntilTime: isoToTimestamp(req.validUntil) } } : {}),
    };
    const [op] = await this.call(ctx, opts?.signal, () =>
      this.client.createQueuedResource({ parent: where, queuedResourceId: req.queuedResourceId, queuedResource: qr }, { longrunning: LRO_BACKOFF }),
    );
    return toQueuedResource(await this.wait(ctx, op, opts));
  }

  async deleteQueuedResource(id: QueuedResourceId, opts?: WaitOptions & { force?: boolean }): Promise<void> {
    const ctx: Ctx = { verb: 'delete', project: id.project, zone: id.zone, what: `queued resource "${id.queuedResource}"` };
    const [op] = await this.call(ctx, opts?.signal, () =>
      this.client.deleteQueuedResource({ name: queuedResourceName(id), force: opts?.force ?? false }, { longrunning: LRO_BACKOFF }),
    );
    await this.wait(ctx, op, opts);
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  /** Runs one RPC; abort cancels it (gax promises carry `cancel()`), errors become TpwErrors. */
  private async call<T>(ctx: Ctx, signal: AbortSignal | undefined, start: () => Promise<T>): Promise<T> {
    if (signal?.aborted) throw cancelled(ctx);
    const p = start();
    try {
      return await abortable(p, signal, () => (p as Promise<T> & { cancel?: () => void }).cancel?.(), ctx);
    } catch (e) {
      throw this.mapError(e, ctx);
    }
  }

  /** Waits for a long-running operation; abort stops polling (the operation itself goes on server-side). */
  private async wait<T>(ctx: Ctx, op: Lro<T>, opts?: WaitOptions): Promise<T> {
    const operationName = op.name ?? '';
    const report = (done: boolean) => opts?.onProgress?.({ operationName, done } satisfies OperationProgress);
    const onProgress = () => report(false);
    op.on('progress', onProgress);
    report(false);
    try {
      // Removing the 'complete' listeners is how gax's Operation stops polling; its 'error' listener stays so a
      // late poll failure has somewhere to go.
      const [result] = await abortable(op.promise(), opts?.signal, () => op.removeAllListeners('complete'), ctx);
      report(true);
      return result;
    } catch (e) {
      throw this.mapError(e, ctx);
    } finally {
      op.off('progress', onProgress);
    }
  }

  private mapError(e: unknown, ctx: Ctx): TpwError {
    if (e instanceof TpwError) return e;
    const err = (e ?? {}) as GaxErrorLike;
    // gax puts the server's message in `message` (REST) or `details` (gRPC; on REST it is an array).
    const text = typeof err.details === 'string' && err.details ? err.details : typeof err.message === 'string' ? err.message : String(e);
    const detail = text.split('\n')[0];
    const what = ctx.what ?? (ctx.node ? `TPU VM "${ctx.node}"` : `TPU VMs`);
    const where = ctx.zone ? `${ctx.project}/${ctx.zone}` : `project ${ctx.project}`;
    const fail = (code: TpwErrorCode, message: string) => new TpwError(code, message, { cause: e });
    const sysCode = typeof err.code === 'string' ? err.code : /\b(ECONNREFUSED|ECONNRESET|ENOTFOUND|EHOSTUNREACH|ETIMEDOUT)\b/.exec(detail)?.[1];
    if (sysCode && ['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EHOSTUNREACH', 'ETIMEDOUT'].includes(sysCode)) {
      if (this.emulator) {
        return fail(
          'EMULATOR_NOT_RUNNING',
          `The local emulator is not running at http://${this.emulator.host}:${this.emulator.port} (${sysCode}); start it with \`tpw emulator start\`.`,
        );
      }
      return fail('UNAVAILABLE', `Cannot reach the Cloud TPU API to ${ctx.verb} ${what} in ${where}: ${detail}`);
    }
    if (err.name === 'AbortError') return cancelled(ctx);
    if (isAuthLookupFailure(err, detail)) {
      return fail('UNAUTHENTICATED', `No Google credentials to ${ctx.verb} ${what} in ${where}: ${ADC_HINT} (${detail})`);
    }
    const code = typeof err.code === 'number' ? err.code : undefined;
    switch (code) {
      case 1:
        return cancelled(ctx);
      case 5:
        if ((ctx.node || ctx.what) && !/\bLocation\s/.test(detail)) return fail('NOT_FOUND', `${capitalize(what)} not found in ${where}.`);
        return fail('NOT_FOUND', `${ctx.zone ? `Zone "${ctx.zone}" of project` : 'Project'} "${ctx.project}" not found while trying to ${ctx.verb} ${what}: ${detail}`);
      case 6:
        return fail('ALREADY_EXISTS', `${capitalize(what)} already exists in ${where}.`);
      case 10:
        // The REST transport maps HTTP 409 to ABORTED; on create that is ALREADY_EXISTS.
        if (ctx.verb === 'create' && !/deleted|changed state/i.test(detail)) return fail('ALREADY_EXISTS', `${capitalize(what)} already exists in ${where}: ${detail}`);
        return fail('FAILED_PRECONDITION', `Could not ${ctx.verb} ${what} in ${where}: ${detail}`);
      case 3:
      case 9:
        // Start, stop and delete take no arguments besides the name (and force), so a 400 there is about the
        // resource's state (REST carries FAILED_PRECONDITION as 400, which gax reads as INVALID_ARGUMENT).
        if (code === 9 || ctx.verb === 'start' || ctx.verb === 'stop' || ctx.verb === 'delete') {
          return fail('FAILED_PRECONDITION', `Cannot ${ctx.verb} ${what} in ${where}: ${detail}`);
        }
        return fail('INVALID_ARGUMENT', `Invalid request to ${ctx.verb} ${what} in ${where}: ${detail}`);
      case 7: {
        const disabled = serviceDisabled(err, detail, ctx.project);
        if (disabled) {
          return fail(
            'API_DISABLED',
            `The ${disabled.title} is not enabled in project ${ctx.project}: enable ${disabled.service} at ${disabled.url} (needed to ${ctx.verb} ${what}), then retry in a few minutes.`,
          );
        }
        return fail(
          'PERMISSION_DENIED',
          `Permission denied to ${ctx.verb} ${what} in ${where}: ${detail}` +
            (this.emulator ? '' : ' (you need the TPU Admin role, roles/tpu.admin, on the project; check the account of `gcloud auth application-default login`)'),
        );
      }
      case 16:
        return fail(
          'UNAUTHENTICATED',
          `Not authenticated to ${ctx.verb} ${what} in ${where}: ${detail}` + (this.emulator ? '' : ` (${ADC_HINT})`),
        );
      case 8: {
        const type = ctx.acceleratorType ? ` for ${ctx.acceleratorType}` : '';
        return fail('RESOURCE_EXHAUSTED', `Quota or capacity exhausted${type} trying to ${ctx.verb} ${what} in ${where}: ${detail}`);
      }
      case 4:
      case 14:
        return fail('UNAVAILABLE', `The Cloud TPU API is unavailable (${ctx.verb} ${what} in ${where}): ${detail}`);
      default:
        return fail('INTERNAL', `Failed to ${ctx.verb} ${what} in ${where}: ${detail}`);
    }
  }
}

/** The fields of a gax GoogleError (or a Node system error) that mapError reads. */
interface GaxErrorLike {
  code?: unknown;
  message?: unknown;
  details?: unknown;
  name?: unknown;
  /** ErrorInfo.reason, e.g. SERVICE_DISABLED (gax decodes it from the REST error's details). */
  reason?: unknown;
  /** ErrorInfo.metadata, e.g. { activationUrl, service, serviceTitle }. */
  errorInfoMetadata?: unknown;
}

export const ADC_HINT = 'run `gcloud auth application-default login` (or set GOOGLE_APPLICATION_CREDENTIALS to a service account key file)';

/** google-auth-library's "no credentials" errors, as they reach callers through gax. */
function isAuthLookupFailure(err: GaxErrorLike, detail: string): boolean {
  return typeof err.code !== 'number' && /Could not load the default credentials|Unable to detect a Project Id|invalid_grant|Could not refresh access token/i.test(detail);
}

/** The API (and where to enable it) when a 403 says a service is disabled; undefined for other 403s. */
function serviceDisabled(err: GaxErrorLike, detail: string, project: string): { service: string; title: string; url: string } | undefined {
  const meta = err.errorInfoMetadata && typeof err.errorInfoMetadata === 'object' ? (err.errorInfoMetadata as Record<string, unknown>) : {};
  const byReason = err.reason === 'SERVICE_DISABLED';
  const byText = /has not been used in project \S+ before or it is disabled/i.test(detail);
  if (!byReason && !byText) return undefined;
  const service = typeof meta.service === 'string' && meta.service ? meta.service : (/apis\/api\/([a-z0-9.-]+)\//.exec(detail)?.[1] ?? 'tpu.googleapis.com');
  const url =
    typeof meta.activationUrl === 'string' && meta.activationUrl
      ? meta.activationUrl
      : (/https:\/\/\S+\/apis\/api\/\S+?(?=\s|$)/.exec(detail)?.[0] ?? activationUrl(service, project));
  const title = typeof meta.serviceTitle === 'string' && meta.serviceTitle ? meta.serviceTitle : service === 'tpu.googleapis.com' ? 'Cloud TPU API' : service;
  return { service, title, url };
}

/** Where a project owner enables an API (the page Google's SERVICE_DISABLED errors link to). */
export function activationUrl(service: string, project: string): string {
  return `https://console.developers.google.com/apis/api/${service}/overview?project=${encodeURIComponent(project)}`;
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** A CloudTpuApi that talks to a running local emulator, with its bearer token from the endpoint file. */
export function emulatorTpuApi(endpoint: Pick<EmulatorEndpoint, 'host' | 'restPort' | 'token'>): CloudTpuApi {
  return new CloudTpuApi({
    emulator: { host: endpoint.host, port: endpoint.restPort },
    clientOptions: {
      apiEndpoint: endpoint.host,
      port: endpoint.restPort,
      protocol: 'http',
      fallback: true,
      // The client types `auth` as GoogleAuth; in REST mode gax takes an OAuth2Client and calls getRequestHeaders().
      auth: emulatorCredentials(endpoint.token) as unknown as NonNullable<ClientOptions['auth']>,
    },
  });
}

function parent(project: string, zone: string): string {
  return `projects/${project}/locations/${zone}`;
}

function ctxOf(verb: Verb, id: NodeId): Ctx {
  return { verb, project: id.project, zone: id.zone, node: id.node };
}

function cancelled(ctx: Ctx): TpwError {
  const what = ctx.what ?? (ctx.node ? `TPU VM "${ctx.node}"` : 'TPU VMs');
  return new TpwError('CANCELLED', `Cancelled: ${ctx.verb} ${what} in ${ctx.zone ? `${ctx.project}/${ctx.zone}` : `project ${ctx.project}`}.`);
}

function abortable<T>(p: Promise<T>, signal: AbortSignal | undefined, onAbort: () => void, ctx: Ctx): Promise<T> {
  if (!signal) return p;
  return new Promise<T>((resolve, reject) => {
    const abort = () => {
      onAbort();
      reject(cancelled(ctx));
    };
    if (signal.aborted) return abort();
    signal.addEventListener('abort', abort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', abort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', abort);
        reject(e);
      },
    );
  });
}
