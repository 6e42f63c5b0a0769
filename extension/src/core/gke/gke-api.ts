import type * as container from '@google-cloud/container';
import { emulatorBearerAuth } from '../compute/client';
import type { EmulatorEndpoint } from '../local-emulator';
import { TpwError, type TpwErrorCode } from '../errors';
import { activationUrl, ADC_HINT } from '../tpu/cloud';
import { clusterFullName, type ClusterId, type GkeCluster, type GkeNodePool } from './models';
import type { NodePoolBody } from './node-pool-request';
import { tpuTypeOfNodePool } from './tpu-types';

type ICluster = container.protos.google.container.v1.ICluster;
type INodePool = container.protos.google.container.v1.INodePool;
type ClientOptions = ConstructorParameters<typeof container.v1.ClusterManagerClient>[0];

/**
 * The GKE API (container.googleapis.com v1) through `@google-cloud/container`'s ClusterManagerClient over REST
 * (`fallback: true`), for Google and the emulator alike; only the endpoint and credentials differ. The library is
 * bundled apart (dist/container.js, like dist/compute.js) and loaded at the first call: most commands never
 * reach GKE.
 */
export interface GkeApi {
  readonly emulator: boolean;
  /** Every cluster of the project in `location` ('-': every location). */
  listClusters(project: string, location?: string): Promise<GkeCluster[]>;
  getCluster(id: ClusterId): Promise<GkeCluster>;
  /** Creates a node pool (node-pool-request.ts) and waits for its operation; the pool as the cluster then lists it. */
  createNodePool(id: ClusterId, pool: NodePoolBody, opts?: { pollMs?: number; onWait?: (status: string) => void }): Promise<GkeNodePool>;
  close(): Promise<void>;
}

function containerLibrary(): typeof container {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use, not at start (above)
  return require('@google-cloud/container') as typeof container;
}

class ContainerGkeApi implements GkeApi {
  private client?: container.v1.ClusterManagerClient;

  constructor(
    readonly emulator: boolean,
    private readonly options: ClientOptions,
  ) {}

  private get cm(): container.v1.ClusterManagerClient {
    this.client ??= new (containerLibrary().v1.ClusterManagerClient)({ ...this.options, fallback: true });
    return this.client;
  }

  async listClusters(project: string, location = '-'): Promise<GkeCluster[]> {
    try {
      const [res] = await this.cm.listClusters({ parent: `projects/${project}/locations/${location}` });
      return (res.clusters ?? []).map((c) => toCluster(project, c));
    } catch (e) {
      throw gkeError(e, { verb: 'list the GKE clusters', where: location === '-' ? `project ${project}` : `project ${project}, location ${location}`, project, emulator: this.emulator });
    }
  }

  async getCluster(id: ClusterId): Promise<GkeCluster> {
    try {
      const [c] = await this.cm.getCluster({ name: clusterFullName(id) });
      return toCluster(id.project, c);
    } catch (e) {
      throw gkeError(e, { verb: 'get', what: `GKE cluster "${id.cluster}"`, where: `project ${id.project}, location ${id.location}`, project: id.project, emulator: this.emulator });
    }
  }

  async createNodePool(id: ClusterId, pool: NodePoolBody, opts: { pollMs?: number; onWait?: (status: string) => void } = {}): Promise<GkeNodePool> {
    const ctx = { verb: 'create', what: `node pool "${pool.name}" of GKE cluster "${id.cluster}"`, where: `project ${id.project}, location ${id.location}`, project: id.project, emulator: this.emulator };
    try {
      const [op] = await this.cm.createNodePool({ parent: clusterFullName(id), nodePool: pool });
      const name = `projects/${id.project}/locations/${id.location}/operations/${op.name ?? ''}`;
      const lib = containerLibrary().protos.google.container.v1;
      for (let got = op; ; ) {
        const status = enumName(got.status, lib.Operation.Status as unknown as Record<string, string | number>);
        if (status === 'DONE') {
          if (got.error?.message) throw new TpwError('FAILED_PRECONDITION', `GKE could not create node pool "${pool.name}" of cluster "${id.cluster}": ${got.error.message}`);
          break;
        }
        opts.onWait?.(got.detail || status);
        await new Promise((r) => setTimeout(r, opts.pollMs ?? 2000));
        [got] = await this.cm.getOperation({ name });
      }
      const made = (await this.getCluster(id)).nodePools.find((p) => p.name === pool.name);
      if (!made) throw new TpwError('INTERNAL', `GKE said node pool "${pool.name}" was made, but cluster "${id.cluster}" does not list it.`);
      return made;
    } catch (e) {
      throw gkeError(e, ctx);
    }
  }

  async close(): Promise<void> {
    await this.client?.close();
  }
}

/** The GKE API of a Google Cloud project, with Application Default Credentials (the `auth` resolveAdc made). */
export function googleGkeApi(auth: unknown): GkeApi {
  return new ContainerGkeApi(false, { auth } as ClientOptions);
}

/** The emulator's GKE API, on its REST server with its bearer token. */
export function emulatorGkeApi(endpoint: Pick<EmulatorEndpoint, 'host' | 'restPort' | 'token'>): GkeApi {
  return new ContainerGkeApi(true, {
    apiEndpoint: endpoint.host,
    port: endpoint.restPort,
    protocol: 'http',
    auth: emulatorBearerAuth(endpoint.token) as unknown as NonNullable<ClientOptions>['auth'],
  } as ClientOptions);
}

/** An enum field as its name, whether the REST decoder gave the name or the number. */
function enumName(value: unknown, names: Record<string, string | number>): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(names[value] ?? value);
  return 'STATUS_UNSPECIFIED';
}

function toCluster(project: string, c: ICluster): GkeCluster {
  const lib = containerLibrary().protos.google.container.v1;
  const location = c.location ?? c.zone ?? '';
  const id = { project, location, cluster: c.name ?? '' };
  const ca = c.masterAuth?.clusterCaCertificate ?? '';
  return {
    ...id,
    fullName: clusterFullName(id),
    status: enumName(c.status, lib.Cluster.Status as unknown as Record<string, string | number>),
    ...(c.statusMessage ? { statusMessage: c.statusMessage } : {}),
    endpoint: c.endpoint ?? '',
    caCertificate: ca ? Buffer.from(ca, 'base64').toString('utf8') : '',
    ...(c.currentMasterVersion ? { version: c.currentMasterVersion } : {}),
    autopilot: c.autopilot?.enabled === true,
    nodePools: (c.nodePools ?? []).map(toNodePool),
  };
}

/** TPU machine types' prefixes → GKE's accelerator label (the API has the machine type, the nodes the label). */
const TPU_MACHINES: ReadonlyArray<readonly [RegExp, string]> = [
  [/^ct4p-hightpu-(\d+)t$/, 'tpu-v4-podslice'],
  [/^ct5lp-hightpu-(\d+)t$/, 'tpu-v5-lite-podslice'],
  [/^ct5p-hightpu-(\d+)t$/, 'tpu-v5p-slice'],
  [/^ct6e-standard-(\d+)t$/, 'tpu-v6e-slice'],
  [/^tpu7x-standard-(\d+)t$/, 'tpu7x'],
];

/** A single-host pool's topology, which GKE derives from its machine type (it has no tpuTopology). */
function singleHostTopology(accelerator: string, chips: number): string {
  const threeD = accelerator === 'tpu-v4-podslice' || accelerator === 'tpu-v5p-slice' || accelerator === 'tpu7x';
  if (threeD) return chips >= 4 ? '2x2x1' : '1x1x1';
  return chips >= 8 ? '2x4' : chips >= 4 ? '2x2' : '1x1';
}

export function toNodePool(p: INodePool): GkeNodePool {
  const lib = containerLibrary().protos.google.container.v1;
  const machineType = p.config?.machineType ?? '';
  let tpu: GkeNodePool['tpu'];
  for (const [re, accelerator] of TPU_MACHINES) {
    const m = re.exec(machineType);
    if (!m) continue;
    const chipsPerNode = Number(m[1]);
    const topology = p.placementPolicy?.tpuTopology || singleHostTopology(accelerator, chipsPerNode);
    tpu = { accelerator, topology, type: tpuTypeOfNodePool(accelerator, topology)?.name ?? `${accelerator}-${topology}`, chipsPerNode };
  }
  const aff = p.config?.reservationAffinity;
  const reservation = aff?.values && aff.values.length > 0 ? aff.values[0] : undefined;
  return {
    name: p.name ?? '',
    status: enumName(p.status, lib.NodePool.Status as unknown as Record<string, string | number>),
    ...(p.statusMessage ? { statusMessage: p.statusMessage } : {}),
    machineType,
    ...(tpu ? { tpu } : {}),
    nodeCount: p.initialNodeCount ?? 0,
    spot: p.config?.spot === true || p.config?.preemptible === true,
    ...(reservation ? { reservation } : {}),
    locations: p.locations ?? [],
  };
}

interface GkeCallContext {
  verb: string;
  what?: string;
  where: string;
  project: string;
  emulator: boolean;
}

interface GaxErrorLike {
  code?: unknown;
  message?: unknown;
  reason?: unknown;
}

/** A gax error from a GKE API call → TpwError with one sentence naming what was asked and the next step. */
export function gkeError(e: unknown, ctx: GkeCallContext): TpwError {
  if (e instanceof TpwError) return e;
  const err = (e ?? {}) as GaxErrorLike;
  const detail = String(err.message ?? e).replace(/^\d+ [A-Z_]+: /, '').split('\n')[0];
  const what = ctx.what ? `${ctx.verb} ${ctx.what}` : ctx.verb;
  const fail = (code: TpwErrorCode, msg: string) => new TpwError(code, msg, { cause: e });
  if (typeof err.code !== 'number' && /Could not load the default credentials|Could not refresh access token|invalid_grant/i.test(detail)) {
    return fail('UNAUTHENTICATED', `No usable Google credentials to ${what} in ${ctx.where}: ${ADC_HINT}.`);
  }
  switch (err.code) {
    case 5:
      return fail('NOT_FOUND', `${ctx.what ? capitalize(ctx.what) : 'It'} was not found in ${ctx.where} (see \`tpw gke clusters\`).`);
    case 7:
      if (err.reason === 'SERVICE_DISABLED' || /has not been used in project \S+ before or it is disabled/i.test(detail)) {
        return fail('API_DISABLED', `The GKE API is not enabled in project ${ctx.project}: enable container.googleapis.com at ${activationUrl('container.googleapis.com', ctx.project)}, then retry.`);
      }
      return fail('PERMISSION_DENIED', `Permission denied to ${what} in ${ctx.where}: ${detail}${ctx.emulator ? '' : ' (you need roles/container.viewer or more on the project)'}`);
    case 16:
      return fail('UNAUTHENTICATED', `Not authenticated to ${what} in ${ctx.where}: ${detail}${ctx.emulator ? '' : ` (${ADC_HINT})`}`);
    case 3:
      return fail('INVALID_ARGUMENT', `The GKE API refused to ${what} in ${ctx.where}: ${detail}`);
    case 4:
    case 14:
      return fail('UNAVAILABLE', `The GKE API is unavailable (${what} in ${ctx.where}): ${detail} Retry in a moment.`);
    default:
      return fail('INTERNAL', `Failed to ${what} in ${ctx.where}: ${detail}`);
  }
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
