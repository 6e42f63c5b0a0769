import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ACCELERATOR_TYPES, RUNTIME_VERSIONS } from './catalog';
import { ApiError, GOOGLE_STATUS, type CreateNodeInput, type EmulatorState, type GoogleStatus, type NodeJson } from './state';

/**
 * The Cloud TPU v2 REST subset, served over HTTP/1.1 + JSON exactly as `@google-cloud/tpu`'s v2 TpuClient
 * speaks it with `fallback: true`. What that client sends (logged from the real client):
 *   GET    /v2/projects/p/locations/z/nodes?pageSize=5&pageToken=t&$alt=json%3Benum-encoding=int
 *   POST   /v2/projects/p/locations/z/nodes?nodeId=n&$alt=json%3Benum-encoding=int   body: the Node
 *   GET    /v2/projects/p/locations/z/nodes/n?$alt=…          DELETE the same path
 *   POST   /v2/projects/p/locations/z/nodes/n:stop?$alt=…     body: {}   (and :start)
 *   GET    /v2/projects/p/locations/z/acceleratorTypes?$alt=…  /runtimeVersions?$alt=…
 *   GET    /v2/projects/p/locations/z/operations/op?           (LRO polling: no $alt, enums by name)
 *   GET    /v2/projects/p/locations                            (LocationsClient)
 * `$alt=json;enum-encoding=int` asks for enums as numbers, which a real server honours, so this one does too.
 * Test-only endpoints live under /emulator/v1 (preempt, faults, latency, status).
 */

/** Make the next `count` calls of RPCs whose name matches `method` (a regex, e.g. "CreateNode" or ".*") fail. */
export interface FaultSpec {
  method: string;
  /** A Google status name or an HTTP status code (403, 429, 503, …). */
  code: GoogleStatus | number;
  count?: number;
  message?: string;
}

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
  log?: (msg: string) => void;
}

interface ActiveFault {
  re: RegExp;
  status: GoogleStatus;
  http: number;
  remaining: number;
  message?: string;
}

type Query = URLSearchParams;
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
const MAX_BODY = 1 << 20;

// google.cloud.tpu.v2 enum values, for `enum-encoding=int`.
const NODE_STATE: Record<string, number> = {
  STATE_UNSPECIFIED: 0, CREATING: 1, READY: 2, RESTARTING: 3, REIMAGING: 4, DELETING: 5, REPAIRING: 6, STOPPED: 8,
  STOPPING: 9, STARTING: 10, PREEMPTED: 11, TERMINATED: 12, HIDING: 13, HIDDEN: 14, UNHIDING: 15, UNKNOWN: 16,
};
const HEALTH: Record<string, number> = { HEALTH_UNSPECIFIED: 0, HEALTHY: 1, TIMEOUT: 3, UNHEALTHY_TENSORFLOW: 4, UNHEALTHY_MAINTENANCE: 5 };
const API_VERSION: Record<string, number> = { API_VERSION_UNSPECIFIED: 0, V1_ALPHA1: 1, V1: 2, V2_ALPHA1: 3, V2: 4 };
const ACCEL_CONFIG_TYPE: Record<string, number> = { TYPE_UNSPECIFIED: 0, V2: 2, V3: 4, V4: 7, V5LITE_POD: 9, V5P: 10, V6E: 11 };

export class RestServer {
  private readonly server: http.Server;
  private readonly routes: Route[];
  private faults: ActiveFault[] = [];
  private latencyMs: number;
  private readonly log: (msg: string) => void;

  constructor(private readonly opts: RestServerOptions) {
    this.latencyMs = opts.latencyMs ?? 0;
    this.log = opts.log ?? (() => undefined);
    for (const f of opts.faults ?? []) this.addFault(f);
    this.routes = this.buildRoutes();
    this.server = http.createServer((req, res) => void this.handle(req, res));
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
    const status = typeof f.code === 'number' ? statusForHttp(f.code) : f.code;
    if (!(status in GOOGLE_STATUS)) throw new ApiError('INVALID_ARGUMENT', `Unknown fault code "${String(f.code)}".`);
    let re: RegExp;
    try {
      re = new RegExp(`^(?:${f.method})$`);
    } catch {
      throw new ApiError('INVALID_ARGUMENT', `Fault method pattern "${f.method}" is not a valid regular expression.`);
    }
    this.faults.push({
      re,
      status,
      http: typeof f.code === 'number' ? f.code : GOOGLE_STATUS[status].http,
      remaining: f.count ?? 1,
      message: f.message,
    });
  }

  clearFaults(): void {
    this.faults = [];
    this.latencyMs = 0;
  }

  setLatency(ms: number): void {
    this.latencyMs = ms;
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      // Keep-alive sockets from clients would otherwise hold the server (and a test process) open.
      this.server.closeAllConnections();
    });
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://emulator');
    const method = req.method ?? 'GET';
    let status = 200;
    try {
      const route = this.routes.find((r) => r.verb === method && r.re.test(url.pathname));
      const match = route ? route.re.exec(url.pathname) : null;
      if (!route || !match) {
        throw new ApiError('NOT_FOUND', `The requested URL ${method} ${url.pathname} was not found on this server.`);
      }
      const body = await readJson(req);
      const isApi = url.pathname.startsWith('/v2/');
      if (isApi) {
        if (this.latencyMs > 0) await new Promise((r) => setTimeout(r, this.latencyMs));
        this.injectFault(route.rpc);
      }
      const ctx: Ctx = {
        method,
        query: url.searchParams,
        body,
        numericEnums: /enum-encoding=int/.test(url.searchParams.get('$alt') ?? ''),
      };
      const result = await route.handle(match.slice(1).map(decodeURIComponent), ctx);
      send(res, 200, ctx.numericEnums ? encodeEnums(result) : result);
    } catch (e) {
      const err = e instanceof ApiError ? e : new ApiError('INTERNAL', `Internal error: ${(e as Error).message}`);
      status = (e as ApiError & { http?: number }).http ?? GOOGLE_STATUS[err.status].http;
      send(res, status, { error: { code: status, message: err.message, status: err.status } });
    }
    this.log(`${method} ${url.pathname}${url.search} -> ${status}`);
  }

  private injectFault(rpc: string): void {
    const f = this.faults.find((x) => x.remaining > 0 && x.re.test(rpc));
    if (!f) return;
    f.remaining--;
    this.faults = this.faults.filter((x) => x.remaining > 0);
    const message =
      f.message ??
      (f.status === 'RESOURCE_EXHAUSTED'
        ? `Quota limit exceeded for ${rpc} (injected by the local emulator).`
        : f.status === 'PERMISSION_DENIED'
          ? `Permission denied for ${rpc} (injected by the local emulator).`
          : `${f.status} (injected by the local emulator for ${rpc}).`);
    throw Object.assign(new ApiError(f.status, message), { http: f.http });
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
        verb: 'GET', re: new RegExp(`^/v2/projects/${SEG}/locations$`), rpc: 'ListLocations',
        handle: (m, c) => {
          const parent = this.location(m[0]);
          const all = this.opts.zones.map((z) => ({ name: `${parent}/locations/${z}`, locationId: z }));
          return page(all, c.query, 'locations');
        },
      },
      {
        verb: 'GET', re: new RegExp(`${loc}$`), rpc: 'GetLocation',
        handle: (m) => ({ name: this.location(m[0], m[1]), locationId: m[1] }),
      },
      {
        verb: 'GET', re: new RegExp(`${loc}/nodes$`), rpc: 'ListNodes',
        handle: (m, c) => page(st.listNodes(this.location(m[0], m[1])), c.query, 'nodes'),
      },
      {
        verb: 'POST', re: new RegExp(`${loc}/nodes$`), rpc: 'CreateNode',
        handle: (m, c) => st.beginCreate(this.location(m[0], m[1]), c.query.get('nodeId') ?? undefined, createInput(c.body)),
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
      { verb: 'POST', re: new RegExp(`${loc}/nodes/${SEG}:stop$`), rpc: 'StopNode', handle: (m) => st.beginStop(node(m)) },
      { verb: 'POST', re: new RegExp(`${loc}/nodes/${SEG}:start$`), rpc: 'StartNode', handle: (m) => st.beginStart(node(m)) },
      {
        verb: 'GET', re: new RegExp(`${loc}/operations/${SEG}$`), rpc: 'GetOperation',
        handle: (m) => st.getOperation(`${this.location(m[0], m[1])}/operations/${m[2]}`),
      },
      {
        verb: 'GET', re: new RegExp(`${loc}/acceleratorTypes$`), rpc: 'ListAcceleratorTypes',
        handle: (m, c) => page(acceleratorTypes(this.location(m[0], m[1])), c.query, 'acceleratorTypes'),
      },
      {
        verb: 'GET', re: new RegExp(`${loc}/acceleratorTypes/${SEG}$`), rpc: 'GetAcceleratorType',
        handle: (m) => {
          const parent = this.location(m[0], m[1]);
          const t = acceleratorTypes(parent).find((a) => a.type === m[2]);
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
          const b = c.body as { faults?: FaultSpec[]; latencyMs?: number } & Partial<FaultSpec>;
          const list = b.faults ?? (b.method !== undefined && b.code !== undefined ? [b as FaultSpec] : []);
          for (const f of list) this.addFault(f);
          if (typeof b.latencyMs === 'number') this.setLatency(b.latencyMs);
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

  private faultStatus(): { faults: { method: string; status: GoogleStatus; http: number; remaining: number }[]; latencyMs: number } {
    return {
      faults: this.faults.map((f) => ({ method: f.re.source.slice(4, -2), status: f.status, http: f.http, remaining: f.remaining })),
      latencyMs: this.latencyMs,
    };
  }
}

function createInput(body: Record<string, unknown>): CreateNodeInput {
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const sc = (body.schedulingConfig ?? {}) as Record<string, unknown>;
  const labels = body.labels && typeof body.labels === 'object' ? (body.labels as Record<string, string>) : {};
  return {
    acceleratorType: str(body.acceleratorType),
    runtimeVersion: str(body.runtimeVersion),
    description: str(body.description),
    labels,
    schedulingConfig: { preemptible: sc.preemptible === true, reserved: sc.reserved === true, spot: sc.spot === true },
  };
}

function acceleratorTypes(parent: string) {
  return ACCELERATOR_TYPES.map((a) => ({
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
  return out;
}

function statusForHttp(code: number): GoogleStatus {
  const hit = (Object.keys(GOOGLE_STATUS) as GoogleStatus[]).find((s) => GOOGLE_STATUS[s].http === code);
  if (hit) return hit;
  return code >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION';
}

function readJson(req: http.IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new ApiError('INVALID_ARGUMENT', 'Request payload is too large.'));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('error', reject);
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8').trim();
      if (!text) return resolve({});
      try {
        const parsed: unknown = JSON.parse(text);
        if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
        resolve(parsed as Record<string, unknown>);
      } catch {
        reject(new ApiError('INVALID_ARGUMENT', `Invalid JSON payload received: ${text.slice(0, 80)}`));
      }
    });
  });
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

