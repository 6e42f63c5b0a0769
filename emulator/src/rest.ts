import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { boolParam, checkStoppable, decodeSegment, guestAttributes, operationFilter, serviceIdentity } from './api-extras';
import { ACCELERATOR_TYPES, RUNTIME_VERSIONS, type AcceleratorInfo } from './catalog';
import { computeErrorBody, computeRoutes } from './compute-rest';
import type { ComputeState } from './compute-state';
import { COMPUTE_SERVICE, FaultInjector, type CapacityFault, type FaultRequest, type FaultSpec, type FaultStatus } from './faults';
import { ACCEL_CONFIG_TYPE, acceleratorTypeOf } from './node-config';
import { QueuedResources } from './queued';
import { osLoginRoutes } from './os-login';
import { formatBatch, parseBatch, type BatchResponse } from './compute-batch';
import { parseJsonBody, PayloadTooLarge, readBody, readJson, send } from './http-json';
import { guardRequest } from './rest-guard';
import { gkeRoutes } from './gke/gke-rest';
import type { GkeService } from './gke/gke-service';
import type { EmulatorState } from './state';
import { ApiError, GOOGLE_STATUS, type AttachedDiskJson, type CreateNodeInput, type NodeJson } from './types';

export type { CapacityFault, FaultSpec } from './faults';

/**
 * The Cloud TPU v2 REST subset, served over HTTP/1.1 + JSON exactly as `@google-cloud/tpu`'s v2 TpuClient
 * speaks it with `fallback: true`. What that client sends (logged from the real client):
 *   GET    /v2/projects/p/locations/z/nodes?pageSize=5&pageToken=t&$alt=json%3Benum-encoding=int
 *   POST   /v2/projects/p/locations/z/nodes?nodeId=n&$alt=json%3Benum-encoding=int   body: the Node
 *   GET    /v2/projects/p/locations/z/nodes/n?$alt=…          DELETE the same path
 *   POST   /v2/projects/p/locations/z/nodes/n:stop?$alt=…     body: {}   (and :start)
 *   GET    /v2/projects/p/locations/z/acceleratorTypes?$alt=…  /runtimeVersions?$alt=…
 *   GET    /v2/projects/p/locations/z/operations/op?           (LRO polling: no $alt, enums by name)
 *   GET    /v1/projects/p/locations?pageSize=…&pageToken=…     (ListLocations: gax's mixin uses v1; paginated)
 *   POST   /v2/projects/p/locations/z/queuedResources?queuedResourceId=q   body: the QueuedResource
 *   GET    /v2/projects/p/locations/z/queuedResources[/q]     DELETE …/queuedResources/q?force=true
 * and what Python's google-cloud-tpu REST transport and gcloud add: operations list (?filter=…) / :cancel /
 * DELETE, queuedResources/q:reset, nodes/n:getGuestAttributes, locations/z:generateServiceIdentity
 * (gcloud sends `force=True`: bools are read as Google's front end reads them).
 * `$alt=json;enum-encoding=int` asks for enums as numbers, which a real server honours, so this one does too.
 * Test-only endpoints live under /emulator/v1 (preempt, faults, latency, capacity, service disabled, status).
 */

export interface RestServerOptions {
  state: EmulatorState;
  project: string;
  zones: readonly string[];
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** Added before every /v2 call. */
  latencyMs?: number;
  faults?: FaultSpec[];
  /** Accelerator types out of capacity in a zone from the start. */
  capacityFaults?: CapacityFault[];
  /** Zone → the accelerator types it offers; a zone not named offers every type. */
  offerings?: Readonly<Record<string, readonly string[]>>;
  /** Least time a queued resource spends in each state (default 300 ms). */
  queuedStepMs?: number;
  /** The workers' SSH host public key, which GetGuestAttributes publishes as a real guest agent does. */
  hostPublicKey?: string;
  log?: (msg: string) => void;
  /** Every request must carry `Authorization: Bearer <token>` (rest-guard.ts). */
  token: string;
  /** Compute Engine resources: with it, the server also answers the compute/v1 subset (compute-rest.ts). */
  compute?: ComputeState;
  /** GKE: with it, the server also answers the container/v1 subset (gke/gke-rest.ts). */
  gke?: GkeService;
  /** Cloud Storage reads with the owner's token (vm-services.ts serveOwner), as `storage.googleapis.com` takes a user's. */
  storage?: (req: http.IncomingMessage, res: http.ServerResponse, base: string) => void;
}

type Query = URLSearchParams;

/** Where Compute Engine's batch calls go (gcloud: one POST for several calls). */
const BATCH_PATH = '/batch/compute/v1';

/** An error as the API the path belongs to words it: Compute's shape for /compute/, Google's for the rest. */
function errorBody(url: URL, err: ApiError, status: number): unknown {
  return url.pathname.startsWith('/compute/') ? computeErrorBody(err, status) : { error: { code: status, message: err.message, status: err.status, ...(err.details ? { details: err.details } : {}) } };
}
interface Ctx {
  method: string;
  query: Query;
  body: Record<string, unknown>;
  numericEnums: boolean;
}
interface Route {
  verb: string;
  re: RegExp;
  /** The RPC name, which fault patterns match against. */
  rpc: string;
  handle: (m: string[], ctx: Ctx) => Promise<unknown> | unknown;
}

const SEG = '([^/:]+)';

// google.cloud.tpu.v2 enum values, for `enum-encoding=int`.
const NODE_STATE: Record<string, number> = {
  STATE_UNSPECIFIED: 0, CREATING: 1, READY: 2, RESTARTING: 3, REIMAGING: 4, DELETING: 5, REPAIRING: 6, STOPPED: 8,
  STOPPING: 9, STARTING: 10, PREEMPTED: 11, TERMINATED: 12, HIDING: 13, HIDDEN: 14, UNHIDING: 15, UNKNOWN: 16,
};
const HEALTH: Record<string, number> = { HEALTH_UNSPECIFIED: 0, HEALTHY: 1, TIMEOUT: 3, UNHEALTHY_TENSORFLOW: 4, UNHEALTHY_MAINTENANCE: 5 };
const API_VERSION: Record<string, number> = { API_VERSION_UNSPECIFIED: 0, V1_ALPHA1: 1, V1: 2, V2_ALPHA1: 3, V2: 4 };
const QR_STATE: Record<string, number> = {
  STATE_UNSPECIFIED: 0, CREATING: 1, ACCEPTED: 2, PROVISIONING: 3, FAILED: 4, DELETING: 5, ACTIVE: 6, SUSPENDING: 7, SUSPENDED: 8, WAITING_FOR_RESOURCES: 9,
};
const STATE_INITIATOR: Record<string, number> = { STATE_INITIATOR_UNSPECIFIED: 0, USER: 1, SERVICE: 2 };
const DISK_MODE: Record<string, number> = { DISK_MODE_UNSPECIFIED: 0, READ_WRITE: 1, READ_ONLY: 2 };

export class RestServer {
  private readonly server: http.Server;
  private readonly routes: Route[];
  /** Fault, capacity and latency injection; tests reach it through the emulator or /emulator/v1/faults. */
  readonly faults: FaultInjector;
  readonly queued: QueuedResources;
  private readonly log: (msg: string) => void;

  constructor(private readonly opts: RestServerOptions) {
    this.log = opts.log ?? (() => undefined);
    this.faults = new FaultInjector(opts.project, { latencyMs: opts.latencyMs, faults: opts.faults, capacity: opts.capacityFaults });
    this.queued = new QueuedResources(opts.state, {
      stepMs: opts.queuedStepMs,
      capacityExhausted: (zone, type) => this.faults.capacityExhausted(zone, type),
      log: this.log,
    });
    this.routes = this.buildRoutes();
    const cs = opts.compute;
    if (cs) this.routes.push(...computeRoutes({ compute: cs, project: opts.project, zones: opts.zones }), ...osLoginRoutes({ osLogin: cs.osLogin, project: opts.project, save: () => opts.state.save() }));
    if (opts.gke) this.routes.push(...gkeRoutes(opts.gke));
    this.server = http.createServer((req, res) => void this.handle(req, res));
    // Clients keep sockets alive between calls (node's global agent does, closing idle ones after 5 s); a server
    // closing an idle socket at the same 5 s races a request sent on it, which then fails with ECONNRESET.
    // Google's front ends keep idle connections far longer than clients do, and so does this.
    this.server.keepAliveTimeout = 120_000;
    this.server.headersTimeout = 125_000;
  }

  listen(): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.opts.port ?? 0, this.opts.host ?? '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve(this.port);
      });
    });
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  addFault(f: FaultSpec): void {
    this.faults.addFault(f);
  }

  /** No capacity for `acceleratorType` in `zone` until clearFaults(). */
  addCapacityFault(c: CapacityFault): void {
    this.faults.addCapacityFault(c);
  }

  setServiceDisabled(disabled: boolean): void {
    this.faults.setServiceDisabled(disabled);
  }

  clearFaults(): void {
    this.faults.clear();
  }

  setLatency(ms: number): void {
    this.faults.latencyMs = ms;
  }

  close(): Promise<void> {
    this.queued.close();
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      // Keep-alive sockets from clients would otherwise hold the server (and a test process) open.
      this.server.closeAllConnections();
    });
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://emulator');
    const method = req.method ?? 'GET';
    const batch = method === 'POST' && url.pathname === BATCH_PATH && this.opts.compute !== undefined;
    let status = 200;
    try {
      const refused = guardRequest(req, { token: this.opts.token, port: () => this.port, host: this.opts.host ?? '127.0.0.1' }, { multipartMixed: batch });
      if (refused) throw refused;
      if (this.opts.storage && /^\/(download\/)?storage\/v1\//.test(url.pathname)) {
        this.opts.storage(req, res, `http://${req.headers.host ?? `127.0.0.1:${this.port}`}`);
        this.log(`${method} ${url.pathname}${url.search} -> ${res.statusCode}`);
        return;
      }
      if (batch) {
        // Each part is a call of its own, under the outer request's credentials (checked above).
        const parts = parseBatch(String(req.headers['content-type'] ?? ''), await readBody(req));
        const answers: BatchResponse[] = [];
        for (const p of parts) {
          const inner = new URL(p.target, 'http://emulator');
          const r = await this.dispatch(p.method, inner, async () => parseJsonBody(p.body), res);
          if (!r) return; // the client left
          answers.push({ contentId: p.contentId, status: r.status, body: r.body });
          this.log(`  batch ${p.method} ${inner.pathname}${inner.search} -> ${r.status}`);
        }
        const out = formatBatch(answers);
        res.writeHead(200, { 'content-type': out.contentType, 'content-length': Buffer.byteLength(out.body) });
        res.end(out.body);
      } else {
        const r = await this.dispatch(method, url, () => readJson(req), res);
        if (!r) return; // the client left
        status = r.status;
        if (r.status === 401) res.setHeader('www-authenticate', 'Bearer realm="tpw-emulator"');
        send(res, r.status, r.body);
      }
    } catch (e) {
      const err = e instanceof ApiError ? e : new ApiError('INTERNAL', `Internal error: ${(e as Error).message}`);
      if (e instanceof PayloadTooLarge) res.shouldKeepAlive = false;
      status = err.http ?? GOOGLE_STATUS[err.status].http;
      if (err.status === 'UNAUTHENTICATED') res.setHeader('www-authenticate', 'Bearer realm="tpw-emulator"');
      send(res, status, errorBody(url, err, status));
    }
    this.log(`${method} ${url.pathname}${url.search} -> ${status}`);
  }

  /** One call: routed, its body read, faults applied, handled; the answer or the error as Google words it
   * (undefined when the client behind `res` left during the injected latency). */
  private async dispatch(method: string, url: URL, readBody: () => Promise<Record<string, unknown>>, res: http.ServerResponse): Promise<{ status: number; body: unknown } | undefined> {
    try {
      const route = this.routes.find((r) => r.verb === method && r.re.test(url.pathname));
      const match = route ? route.re.exec(url.pathname) : null;
      if (!route || !match) {
        throw new ApiError('NOT_FOUND', `The requested URL ${method} ${url.pathname} was not found on this server.`);
      }
      const body = await readBody();
      const isCompute = url.pathname.startsWith('/compute/v1/');
      const isApi = /^\/v[12]\//.test(url.pathname) || isCompute;
      if (isApi) {
        // Injected latency stands for the network: a client that gives up during it never reaches the API, and
        // its wait ends with it (so an abandoned request leaves no timer behind).
        if (this.faults.latencyMs > 0 && !(await delayUnlessGone(res, this.faults.latencyMs))) return;
        this.faults.inject(route.rpc, isCompute ? COMPUTE_SERVICE : undefined);
      }
      const ctx: Ctx = {
        method,
        query: url.searchParams,
        body,
        numericEnums: /enum-encoding=int/.test(url.searchParams.get('$alt') ?? ''),
      };
      const result = await route.handle(match.slice(1).map(decodeSegment), ctx);
      return { status: 200, body: ctx.numericEnums ? encodeEnums(result) : result };
    } catch (e) {
      if (e instanceof PayloadTooLarge) throw e;
      const err = e instanceof ApiError ? e : new ApiError('INTERNAL', `Internal error: ${(e as Error).message}`);
      const status = err.http ?? GOOGLE_STATUS[err.status].http;
      return { status, body: errorBody(url, err, status) };
    }
  }

  /** The catalog's types a zone offers (all of them unless the options say otherwise). */
  private offered(zone: string): readonly AcceleratorInfo[] {
    const only = this.opts.offerings?.[zone];
    return only ? ACCELERATOR_TYPES.filter((a) => only.includes(a.type)) : ACCELERATOR_TYPES;
  }

  /** Checks project and zone; the emulator serves one project and a fixed set of zones. */
  private location(project: string, zone?: string): string {
    if (project !== this.opts.project) {
      throw new ApiError(
        'PERMISSION_DENIED',
        `Permission denied on resource project ${project}: the local emulator serves only project "${this.opts.project}".`,
      );
    }
    if (zone !== undefined && !this.opts.zones.includes(zone)) {
      throw new ApiError(
        'NOT_FOUND',
        `Location projects/${project}/locations/${zone} was not found. The local emulator serves zones: ${this.opts.zones.join(', ')}.`,
      );
    }
    return zone === undefined ? `projects/${project}` : `projects/${project}/locations/${zone}`;
  }

  private buildRoutes(): Route[] {
    const st = this.opts.state;
    const loc = `^/v2/projects/${SEG}/locations/${SEG}`;
    const node = (m: string[]) => `${this.location(m[0], m[1])}/nodes/${m[2]}`;
    const routes: Route[] = [
      {
        // gax's Locations mixin asks /v1 whatever the client's version; Cloud TPU answers both.
        verb: 'GET', re: new RegExp(`^/v[12]/projects/${SEG}/locations$`), rpc: 'ListLocations',
        handle: (m, c) => {
          const parent = this.location(m[0]);
          const all = this.opts.zones.map((z) => ({ name: `${parent}/locations/${z}`, locationId: z }));
          return page(all, c.query, 'locations');
        },
      },
      {
        verb: 'GET', re: new RegExp(`^/v[12]/projects/${SEG}/locations/${SEG}$`), rpc: 'GetLocation',
        handle: (m) => ({ name: this.location(m[0], m[1]), locationId: m[1] }),
      },
      {
        verb: 'GET', re: new RegExp(`${loc}/nodes$`), rpc: 'ListNodes',
        handle: (m, c) => page(st.listNodes(this.location(m[0], m[1])), c.query, 'nodes'),
      },
      {
        verb: 'POST', re: new RegExp(`${loc}/nodes$`), rpc: 'CreateNode',
        handle: (m, c) => {
          const parent = this.location(m[0], m[1]);
          const input = createInput(c.body);
          // Validate first: a bad request is INVALID_ARGUMENT even where there is no capacity.
          st.validateCreate(parent, c.query.get('nodeId') ?? undefined, input);
          if (!this.offered(m[1]).some((a) => a.type === input.acceleratorType)) {
            throw new ApiError('INVALID_ARGUMENT', `Accelerator type "${input.acceleratorType ?? ''}" is not available in zone ${m[1]}.`);
          }
          this.faults.checkCapacity(m[0], m[1], input.acceleratorType ?? '');
          return st.beginCreate(parent, c.query.get('nodeId') ?? undefined, input);
        },
      },
      { verb: 'GET', re: new RegExp(`${loc}/nodes/${SEG}$`), rpc: 'GetNode', handle: (m) => st.getNode(node(m)) },
      { verb: 'DELETE', re: new RegExp(`${loc}/nodes/${SEG}$`), rpc: 'DeleteNode', handle: (m) => st.beginDelete(node(m)) },
      {
        // UpdateNode: PATCH /v2/{node.name} with the Node as body and ?updateMask=a,b.
        verb: 'PATCH', re: new RegExp(`${loc}/nodes/${SEG}$`), rpc: 'UpdateNode',
        handle: (m, c) => {
          const mask = (c.query.get('updateMask') ?? '').split(',').map((f) => f.trim()).filter(Boolean);
          return st.updateNode(node(m), (c.body ?? {}) as Partial<NodeJson>, mask);
        },
      },
      {
        verb: 'POST', re: new RegExp(`${loc}/nodes/${SEG}:stop$`), rpc: 'StopNode',
        handle: (m) => {
          checkStoppable(st.getNode(node(m)));
          return st.beginStop(node(m));
        },
      },
      { verb: 'POST', re: new RegExp(`${loc}/nodes/${SEG}:start$`), rpc: 'StartNode', handle: (m) => st.beginStart(node(m)) },
      {
        verb: 'POST', re: new RegExp(`${loc}/nodes/${SEG}:getGuestAttributes$`), rpc: 'GetGuestAttributes',
        handle: (m, c) => {
          const workerIds = Array.isArray(c.body.workerIds) ? c.body.workerIds.map(String) : [];
          const queryPath = typeof c.body.queryPath === 'string' ? c.body.queryPath : '';
          return { guestAttributes: guestAttributes(st.getNode(node(m)), this.opts.hostPublicKey, queryPath, workerIds) };
        },
      },
      {
        verb: 'POST', re: new RegExp(`${loc}:generateServiceIdentity$`), rpc: 'GenerateServiceIdentity',
        handle: (m) => (this.location(m[0], m[1]), serviceIdentity(m[0])),
      },
      {
        verb: 'GET', re: new RegExp(`${loc}/operations$`), rpc: 'ListOperations',
        handle: (m, c) => {
          const ops = st.operationsIn(this.location(m[0], m[1])).filter(operationFilter(c.query.get('filter') ?? ''));
          return page(ops, c.query, 'operations');
        },
      },
      {
        verb: 'GET', re: new RegExp(`${loc}/operations/${SEG}$`), rpc: 'GetOperation',
        handle: (m) => st.getOperation(`${this.location(m[0], m[1])}/operations/${m[2]}`),
      },
      {
        verb: 'POST', re: new RegExp(`${loc}/operations/${SEG}:cancel$`), rpc: 'CancelOperation',
        handle: (m) => (st.requestCancel(`${this.location(m[0], m[1])}/operations/${m[2]}`), {}),
      },
      {
        verb: 'DELETE', re: new RegExp(`${loc}/operations/${SEG}$`), rpc: 'DeleteOperation',
        handle: (m) => (st.forgetOperation(`${this.location(m[0], m[1])}/operations/${m[2]}`), {}),
      },
      {
        verb: 'GET', re: new RegExp(`${loc}/queuedResources$`), rpc: 'ListQueuedResources',
        handle: (m, c) => page(this.queued.list(this.location(m[0], m[1])), c.query, 'queuedResources'),
      },
      {
        verb: 'POST', re: new RegExp(`${loc}/queuedResources$`), rpc: 'CreateQueuedResource',
        handle: (m, c) => this.queued.create(this.location(m[0], m[1]), c.query.get('queuedResourceId') ?? undefined, c.body, createInput),
      },
      {
        verb: 'GET', re: new RegExp(`${loc}/queuedResources/${SEG}$`), rpc: 'GetQueuedResource',
        handle: (m) => this.queued.get(`${this.location(m[0], m[1])}/queuedResources/${m[2]}`),
      },
      {
        verb: 'DELETE', re: new RegExp(`${loc}/queuedResources/${SEG}$`), rpc: 'DeleteQueuedResource',
        handle: (m, c) => this.queued.delete(`${this.location(m[0], m[1])}/queuedResources/${m[2]}`, boolParam(c.query, 'force')),
      },
      {
        verb: 'POST', re: new RegExp(`${loc}/queuedResources/${SEG}:reset$`), rpc: 'ResetQueuedResource',
        handle: (m) => this.queued.reset(`${this.location(m[0], m[1])}/queuedResources/${m[2]}`),
      },
      {
        verb: 'GET', re: new RegExp(`${loc}/acceleratorTypes$`), rpc: 'ListAcceleratorTypes',
        handle: (m, c) => page(acceleratorTypes(this.location(m[0], m[1]), this.offered(m[1])), c.query, 'acceleratorTypes'),
      },
      {
        verb: 'GET', re: new RegExp(`${loc}/acceleratorTypes/${SEG}$`), rpc: 'GetAcceleratorType',
        handle: (m) => {
          const parent = this.location(m[0], m[1]);
          const t = acceleratorTypes(parent, this.offered(m[1])).find((a) => a.type === m[2]);
          if (!t) throw new ApiError('NOT_FOUND', `Resource '${parent}/acceleratorTypes/${m[2]}' was not found`);
          return t;
        },
      },
      {
        verb: 'GET', re: new RegExp(`${loc}/runtimeVersions$`), rpc: 'ListRuntimeVersions',
        handle: (m, c) => page(runtimeVersions(this.location(m[0], m[1])), c.query, 'runtimeVersions'),
      },
      {
        verb: 'GET', re: new RegExp(`${loc}/runtimeVersions/${SEG}$`), rpc: 'GetRuntimeVersion',
        handle: (m) => {
          const parent = this.location(m[0], m[1]);
          const v = runtimeVersions(parent).find((r) => r.version === m[2]);
          if (!v) throw new ApiError('NOT_FOUND', `Resource '${parent}/runtimeVersions/${m[2]}' was not found`);
          return v;
        },
      },
      // Test-only endpoints.
      {
        verb: 'POST', re: new RegExp(`^/emulator/v1/projects/${SEG}/locations/${SEG}/nodes/${SEG}:preempt$`), rpc: 'Preempt',
        handle: (m) => st.preempt(node(m)),
      },
      {
        verb: 'POST', re: /^\/emulator\/v1\/faults$/, rpc: 'AddFaults',
        handle: (_m, c) => {
          this.faults.apply(c.body as FaultRequest);
          return this.faultStatus();
        },
      },
      { verb: 'GET', re: /^\/emulator\/v1\/faults$/, rpc: 'ListFaults', handle: () => this.faultStatus() },
      {
        verb: 'DELETE', re: /^\/emulator\/v1\/faults$/, rpc: 'ClearFaults',
        handle: () => {
          this.clearFaults();
          return this.faultStatus();
        },
      },
      {
        verb: 'GET', re: /^\/emulator\/v1\/status$/, rpc: 'Status',
        handle: () => ({ pid: process.pid, project: this.opts.project, zones: this.opts.zones, nodes: st.allNodes().length }),
      },
    ];
    return routes;
  }

  private faultStatus(): FaultStatus {
    return this.faults.status();
  }
}

/** A Node from a request body (CreateNode, or a queued resource's nodeSpec) → what state.ts creates. */
function createInput(raw: unknown): CreateNodeInput {
  const body = (raw && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const strMap = (v: unknown, field: string): Record<string, string> => {
    if (v === undefined || v === null) return {};
    if (typeof v !== 'object' || Array.isArray(v) || !Object.values(v).every((x) => typeof x === 'string')) {
      throw new ApiError('INVALID_ARGUMENT', `Invalid value for "${field}": expected a map of strings.`);
    }
    return { ...(v as Record<string, string>) };
  };
  const sc = (body.schedulingConfig ?? {}) as Record<string, unknown>;
  const disks = Array.isArray(body.dataDisks) ? (body.dataDisks as Record<string, unknown>[]) : [];
  const dataDisks: AttachedDiskJson[] = disks.map((d, i) => {
    if (typeof d?.sourceDisk !== 'string' || !/^projects\/[^/]+\/zones\/[^/]+\/disks\/[^/]+$/.test(d.sourceDisk)) {
      throw new ApiError('INVALID_ARGUMENT', `Invalid dataDisks[${i}].sourceDisk "${String(d?.sourceDisk)}": expected projects/P/zones/Z/disks/D.`);
    }
    // With enum-encoding=int the client sends DiskMode as a number (2 = READ_ONLY).
    return { sourceDisk: d.sourceDisk, mode: d.mode === 'READ_ONLY' || d.mode === 2 ? 'READ_ONLY' : 'READ_WRITE' };
  });
  const nc = body.networkConfig && typeof body.networkConfig === 'object' ? (body.networkConfig as Record<string, unknown>) : undefined;
  return {
    acceleratorType: acceleratorTypeOf(body),
    runtimeVersion: str(body.runtimeVersion),
    description: str(body.description),
    labels: strMap(body.labels, 'labels'),
    metadata: strMap(body.metadata, 'metadata'),
    dataDisks,
    schedulingConfig: { preemptible: sc.preemptible === true, reserved: sc.reserved === true, spot: sc.spot === true },
    ...(nc
      ? { networkConfig: { network: str(nc.network), subnetwork: str(nc.subnetwork), enableExternalIps: nc.enableExternalIps === true, canIpForward: nc.canIpForward === true } }
      : {}),
  };
}

function acceleratorTypes(parent: string, offered: readonly AcceleratorInfo[]) {
  return offered.map((a) => ({
    name: `${parent}/acceleratorTypes/${a.type}`,
    type: a.type,
    acceleratorConfigs: [{ type: a.generation, topology: a.topology }],
  }));
}

function runtimeVersions(parent: string) {
  return RUNTIME_VERSIONS.map((v) => ({ name: `${parent}/runtimeVersions/${v}`, version: v }));
}

/** AIP-158 pagination; the token is the offset, opaque to clients. */
function page<T>(items: T[], q: Query, key: string): Record<string, unknown> {
  const size = Number(q.get('pageSize') ?? '0');
  if (!Number.isInteger(size) || size < 0) throw new ApiError('INVALID_ARGUMENT', `Invalid pageSize "${q.get('pageSize')}".`);
  const token = q.get('pageToken') ?? '';
  const start = token ? Number(Buffer.from(token, 'base64url').toString('utf8')) : 0;
  if (!Number.isInteger(start) || start < 0) throw new ApiError('INVALID_ARGUMENT', `Invalid pageToken "${token}".`);
  const end = size > 0 ? start + size : items.length;
  const out: Record<string, unknown> = { [key]: items.slice(start, end) };
  if (end < items.length) out.nextPageToken = Buffer.from(String(end), 'utf8').toString('base64url');
  return out;
}

/** Rewrites enum names to numbers in Node / AcceleratorType / Operation JSON (for `enum-encoding=int`). */
function encodeEnums(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(encodeEnums);
  if (!v || typeof v !== 'object') return v;
  const o = v as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [k, val] of Object.entries(o)) out[k] = encodeEnums(val);
  const isNode = typeof o.acceleratorType === 'string' && typeof o.state === 'string';
  if (isNode) {
    out.state = NODE_STATE[o.state as string] ?? 0;
    if (typeof o.health === 'string') out.health = HEALTH[o.health] ?? 0;
    if (typeof o.apiVersion === 'string') out.apiVersion = API_VERSION[o.apiVersion] ?? 0;
  }
  if (typeof o.topology === 'string' && typeof o.type === 'string') out.type = ACCEL_CONFIG_TYPE[o.type] ?? 0;
  // QueuedResourceState: { state, stateInitiator, failedData… }; AttachedDisk: { sourceDisk, mode }.
  const isQrState = typeof o.state === 'string' && o.state in QR_STATE && !isNode && ('stateInitiator' in o || Object.keys(o).length === 1);
  if (isQrState) {
    out.state = QR_STATE[o.state as string];
    if (typeof o.stateInitiator === 'string') out.stateInitiator = STATE_INITIATOR[o.stateInitiator] ?? 0;
  }
  if (typeof o.sourceDisk === 'string' && typeof o.mode === 'string') out.mode = DISK_MODE[o.mode] ?? 0;
  return out;
}

/** Waits `ms`; false (at once) if the client closes the connection first. */
function delayUnlessGone(res: http.ServerResponse, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const gone = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      res.off('close', gone);
      resolve(true);
    }, ms);
    res.once('close', gone);
  });
}
