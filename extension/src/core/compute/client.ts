import type * as compute from '@google-cloud/compute';
import { readEmulatorEndpoint, type EmulatorEndpoint } from '../local-emulator';
import { TpwError, type TpwErrorCode } from '../errors';
import { activationUrl, ADC_HINT } from '../tpu/cloud';

export type IOperation = compute.protos.google.cloud.compute.v1.IOperation;
export type IInstance = compute.protos.google.cloud.compute.v1.IInstance;
export type IManagedInstance = compute.protos.google.cloud.compute.v1.IManagedInstance;
export type IInstanceGroupManager = compute.protos.google.cloud.compute.v1.IInstanceGroupManager;

/**
 * The `@google-cloud/compute` clients the Compute Engine provider uses, made once per backend. The same clients
 * (REST transport, as that library always speaks) serve Google and the local emulator: only the endpoint and the
 * credentials differ.
 */
export interface ComputeClients {
  readonly emulator: boolean;
  /**
   * For the local emulator: why the emulator these clients were made for is no longer the one answering
   * ("stopped", "restarted (…)"), or undefined while it is. A restarted emulator listens on a new port with a new
   * token, so a client still waiting on the old one would wait forever.
   */
  readonly emulatorGone?: () => string | undefined;
  readonly description: string;
  instances: compute.InstancesClient;
  templates: compute.InstanceTemplatesClient;
  migs: compute.InstanceGroupManagersClient;
  policies: compute.ResourcePoliciesClient;
  zoneOps: compute.ZoneOperationsClient;
  regionOps: compute.RegionOperationsClient;
  globalOps: compute.GlobalOperationsClient;
  zones: compute.ZonesClient;
  images: compute.ImagesClient;
  machineTypes: compute.MachineTypesClient;
  /** The project's common instance metadata (where OS Login is turned on for every VM). */
  projects: compute.ProjectsClient;
  close(): Promise<void>;
}

type ClientOptions = ConstructorParameters<typeof compute.InstancesClient>[0];

/**
 * @google-cloud/compute, loaded when the first Compute Engine client is made: loading it builds every Compute
 * Engine message type (about 2 s and 280 MB on a 2-vCPU machine), which commands and sessions that never reach
 * Compute Engine (`tpw --help`, `tpw flags`, `tpw runs`) would otherwise pay at start.
 */
function computeLibrary(): typeof compute {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use, not at start (above)
  return require('@google-cloud/compute') as typeof compute;
}

/**
 * The clients, each made (and the library loaded) at its first use: opening a backend makes no Compute Engine client,
 * so the commands that never reach Compute Engine (`tpw gke …`, and `tpw logs` / `tpw stop` of a GKE run) do not
 * load the library (3.2 s and 318 MB at start on a busy 2-core machine).
 */
function makeClients(options: ClientOptions, emulator: boolean, description: string, emulatorGone?: () => string | undefined): ComputeClients {
  const made: Array<{ close(): Promise<void> }> = [];
  const lazy = <T extends { close(): Promise<void> }>(make: (lib: typeof compute) => T): { get(): T; enumerable: true } => {
    let client: T | undefined;
    return {
      enumerable: true,
      get: () => {
        if (!client) {
          client = make(computeLibrary());
          made.push(client);
        }
        return client;
      },
    };
  };
  const c = {
    emulator,
    emulatorGone,
    description,
    close: async () => {
      await Promise.allSettled(made.map((x) => x.close()));
    },
  };
  return Object.defineProperties(c, {
    instances: lazy((l) => new l.InstancesClient(options)),
    templates: lazy((l) => new l.InstanceTemplatesClient(options)),
    migs: lazy((l) => new l.InstanceGroupManagersClient(options)),
    policies: lazy((l) => new l.ResourcePoliciesClient(options)),
    zoneOps: lazy((l) => new l.ZoneOperationsClient(options)),
    regionOps: lazy((l) => new l.RegionOperationsClient(options)),
    globalOps: lazy((l) => new l.GlobalOperationsClient(options)),
    zones: lazy((l) => new l.ZonesClient(options)),
    images: lazy((l) => new l.ImagesClient(options)),
    machineTypes: lazy((l) => new l.MachineTypesClient(options)),
    projects: lazy((l) => new l.ProjectsClient(options)),
  }) as unknown as ComputeClients;
}

/** Clients for Google, with Application Default Credentials (the library finds them itself). */
export function googleComputeClients(project: string): ComputeClients {
  return makeClients({ projectId: project }, false, `project ${project}`);
}

/**
 * The `auth` a google-gax REST client (its own copy, in each of @google-cloud/compute and @google-cloud/os-login)
 * calls: `getRequestHeaders()` and `fetch()`. Given for the local emulator so that every request carries its bearer
 * token as a Google client carries an access token.
 */
export function emulatorBearerAuth(token: string): { getRequestHeaders(): Promise<Headers>; fetch(url: string | URL, init: RequestInit): Promise<Response> } {
  const bearer = `Bearer ${token}`;
  return {
    getRequestHeaders: async () => new Headers({ authorization: bearer }),
    fetch: async (url, init) => {
      const headers = new Headers(init.headers ?? {});
      headers.set('authorization', bearer);
      return fetch(url, { method: init.method, body: init.body, headers, signal: init.signal });
    },
  };
}

/**
 * Clients for the local emulator. `@google-cloud/compute` carries its own google-gax, whose REST transport calls
 * `auth.fetch()` and `auth.getRequestHeaders()`: the emulator's bearer token is given through exactly those two,
 * so the client sends `Authorization: Bearer <token>` as it sends Google's access token.
 */
export function emulatorComputeClients(endpoint: Pick<EmulatorEndpoint, 'host' | 'restPort' | 'token'>, dir?: string): ComputeClients {
  const auth = emulatorBearerAuth(endpoint.token);
  const options = {
    apiEndpoint: endpoint.host,
    port: endpoint.restPort,
    protocol: 'http',
    auth: auth as unknown as NonNullable<ClientOptions>['auth'],
  } as ClientOptions;
  // Watched only where the caller says which endpoint file the clients were made from.
  const gone = (folder: string) => (): string | undefined => {
    let now: EmulatorEndpoint | undefined;
    try {
      now = readEmulatorEndpoint(folder);
    } catch {
      now = undefined;
    }
    if (now?.token === endpoint.token) return undefined;
    return now ? `restarted (it now runs as pid ${now.pid}, REST port ${now.restPort})` : 'stopped';
  };
  return makeClients(options, true, `local emulator (${endpoint.host}:${endpoint.restPort})`, dir === undefined ? undefined : gone(dir));
}

/** What a call waiting on an emulator that went away ends with: what happened, and how to finish or clean up. */
export function emulatorGoneError(why: string, ctx: ComputeCallContext): TpwError {
  const where = `${ctx.project}${ctx.zone ? `/${ctx.zone}` : ''}`;
  const restart = why === 'stopped' ? 'start it again with `tpw emulator start`; then ' : '';
  return new TpwError(
    'UNAVAILABLE',
    `The local emulator ${why} while TPU Workbench waited to ${ctx.verb} ${ctx.what} in ${where}: ${restart}\`tpw vm list\` shows where ${ctx.what} stands ` +
      `(what the emulator had accepted is kept in its state); run the same command again to finish, or delete it with \`tpw vm delete\` to clean up.`,
  );
}

/** What a failure was about, for the message. */
export interface ComputeCallContext {
  verb: string;
  /** e.g. `TPU VM "x"` or `TPU slice "x"` */
  what: string;
  project: string;
  zone?: string;
  acceleratorType?: string;
  emulator: boolean;
}

interface GaxErrorLike {
  code?: unknown;
  message?: unknown;
  reason?: unknown;
  errorInfoMetadata?: unknown;
}

/** A gax error from a Compute Engine call → TpwError with a sentence naming the thing and the next step. */
export function computeError(e: unknown, ctx: ComputeCallContext): TpwError {
  if (e instanceof TpwError) return e;
  const err = (e ?? {}) as GaxErrorLike;
  const detail = String(err.message ?? e).replace(/^\d+ [A-Z_]+: /, '');
  const where = `${ctx.project}${ctx.zone ? `/${ctx.zone}` : ''}`;
  const fail = (code: TpwErrorCode, msg: string) => new TpwError(code, msg, { cause: e });
  if (typeof err.code !== 'number' && /Could not load the default credentials|Could not refresh access token|invalid_grant/i.test(detail)) {
    return fail('UNAUTHENTICATED', `No usable Google credentials to ${ctx.verb} ${ctx.what} in ${where}: ${ADC_HINT}.`);
  }
  switch (err.code) {
    case 5:
      return fail('NOT_FOUND', `${capitalize(ctx.what)} was not found in ${where} (Compute Engine): ${detail}`);
    case 6:
      return fail('ALREADY_EXISTS', `${capitalize(ctx.what)} already exists in ${where}: pick another name, or delete the existing one first.`);
    case 3:
    case 9:
      return fail('INVALID_ARGUMENT', `Compute Engine refused to ${ctx.verb} ${ctx.what} in ${where}: ${detail}`);
    case 7: {
      const meta = err.errorInfoMetadata && typeof err.errorInfoMetadata === 'object' ? (err.errorInfoMetadata as Record<string, unknown>) : {};
      if (err.reason === 'SERVICE_DISABLED' || /has not been used in project \S+ before or it is disabled/i.test(detail)) {
        const url = typeof meta.activationUrl === 'string' && meta.activationUrl ? meta.activationUrl : activationUrl('compute.googleapis.com', ctx.project);
        return fail('API_DISABLED', `The Compute Engine API is not enabled in project ${ctx.project}: enable compute.googleapis.com at ${url} (needed to ${ctx.verb} ${ctx.what}), then retry in a few minutes.`);
      }
      return fail(
        'PERMISSION_DENIED',
        `Permission denied to ${ctx.verb} ${ctx.what} in ${where}: ${detail}` +
          (ctx.emulator ? '' : ' (you need the Compute Admin role, roles/compute.admin, or Compute Instance Admin and TPU permissions on the project; check the account of `gcloud auth application-default login`)'),
      );
    }
    case 8:
      return fail('RESOURCE_EXHAUSTED', `Quota exhausted trying to ${ctx.verb} ${ctx.what} in ${where}: ${detail} Request more quota (IAM & Admin > Quotas) or pick another zone.`);
    case 16:
      return fail('UNAUTHENTICATED', `Not authenticated to ${ctx.verb} ${ctx.what} in ${where}: ${detail}` + (ctx.emulator ? '' : ` (${ADC_HINT})`));
    case 4:
    case 14:
      return fail('UNAVAILABLE', `Compute Engine is unavailable (${ctx.verb} ${ctx.what} in ${where}): ${detail} Retry in a moment.`);
    default:
      return fail('INTERNAL', `Failed to ${ctx.verb} ${ctx.what} in ${where}: ${detail}`);
  }
}

/** The error a finished operation carries (Compute puts stockouts and quota there), as a TpwError; undefined if none. */
export function operationError(op: IOperation, ctx: ComputeCallContext): TpwError | undefined {
  const errors = op.error?.errors ?? [];
  if (errors.length === 0) return undefined;
  const first = errors[0];
  const code = first.code ?? '';
  const message = first.message ?? code;
  const where = `${ctx.project}${ctx.zone ? `/${ctx.zone}` : ''}`;
  if (/RESOURCE_POOL_EXHAUSTED|STOCKOUT|RESOURCE_NOT_AVAILABLE/.test(code)) {
    const type = ctx.acceleratorType ? ` of ${ctx.acceleratorType}` : '';
    return new TpwError('RESOURCE_EXHAUSTED', `No capacity${type} in zone ${ctx.zone ?? '?'} to ${ctx.verb} ${ctx.what} (${code}): try another zone, spot or flex-start, or a reservation. ${message}`);
  }
  if (/QUOTA/.test(code)) return new TpwError('RESOURCE_EXHAUSTED', `Quota exhausted to ${ctx.verb} ${ctx.what} in ${where} (${code}): ${message} Request more quota or pick another zone.`);
  if (/INVALID|BAD_REQUEST/.test(code)) return new TpwError('INVALID_ARGUMENT', `Compute Engine refused to ${ctx.verb} ${ctx.what} in ${where} (${code}): ${message}`);
  return new TpwError('INTERNAL', `Failed to ${ctx.verb} ${ctx.what} in ${where} (${code}): ${message}`);
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
