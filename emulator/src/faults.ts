import { ApiError, GOOGLE_STATUS, type GoogleStatus } from './state';

/**
 * Error injection for the emulator's REST API, so tests (and demos) can walk every error path the real
 * Cloud TPU API takes clients down:
 * - RPC faults: the next N calls of RPCs matching a pattern fail with a status (403, 429, 503, …);
 * - capacity faults: an accelerator type is out of quota/capacity in one zone until cleared — CreateNode
 *   there fails with RESOURCE_EXHAUSTED (429) while queued resources wait in WAITING_FOR_RESOURCES;
 * - "service disabled": every API call fails as Google fails it for a project without the Cloud TPU API;
 * - latency before every API call.
 */

/** Make the next `count` calls of RPCs whose name matches `method` (a regex, e.g. "CreateNode" or ".*") fail. */
export interface FaultSpec {
  method: string;
  /** A Google status name or an HTTP status code (403, 429, 503, …). */
  code: GoogleStatus | number;
  count?: number;
  message?: string;
}

/** No capacity (or no quota) for `acceleratorType` in `zone` until cleared. */
export interface CapacityFault {
  zone: string;
  acceleratorType: string;
}

/** The body of POST /emulator/v1/faults: any combination of these. */
export interface FaultRequest extends Partial<FaultSpec> {
  faults?: FaultSpec[];
  latencyMs?: number;
  /** Capacity faults to add. */
  capacity?: CapacityFault[];
  /** true: the Cloud TPU API is "disabled" for the project until cleared; false: enabled again. */
  serviceDisabled?: boolean;
}

export interface FaultStatus {
  faults: { method: string; status: GoogleStatus; http: number; remaining: number }[];
  capacity: CapacityFault[];
  serviceDisabled: boolean;
  latencyMs: number;
}

interface ActiveFault {
  re: RegExp;
  status: GoogleStatus;
  http: number;
  remaining: number;
  message?: string;
}

/** A numeric project number for the emulated project, as Google's SERVICE_DISABLED errors name one. */
const PROJECT_NUMBER = '123456789012';

export class FaultInjector {
  private faults: ActiveFault[] = [];
  private capacity: CapacityFault[] = [];
  private serviceDisabled = false;
  latencyMs: number;

  constructor(
    private readonly project: string,
    opts: { latencyMs?: number; faults?: FaultSpec[]; capacity?: CapacityFault[] } = {},
  ) {
    this.latencyMs = opts.latencyMs ?? 0;
    for (const f of opts.faults ?? []) this.addFault(f);
    for (const c of opts.capacity ?? []) this.addCapacityFault(c);
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

  addCapacityFault(c: CapacityFault): void {
    if (typeof c.zone !== 'string' || !c.zone || typeof c.acceleratorType !== 'string' || !c.acceleratorType) {
      throw new ApiError('INVALID_ARGUMENT', 'A capacity fault needs "zone" and "acceleratorType".');
    }
    if (!this.capacityExhausted(c.zone, c.acceleratorType)) this.capacity.push({ zone: c.zone, acceleratorType: c.acceleratorType });
  }

  setServiceDisabled(disabled: boolean): void {
    this.serviceDisabled = disabled;
  }

  /** Applies a POST /emulator/v1/faults body. */
  apply(b: FaultRequest): void {
    const list = b.faults ?? (b.method !== undefined && b.code !== undefined ? [b as FaultSpec] : []);
    for (const f of list) this.addFault(f);
    for (const c of b.capacity ?? []) this.addCapacityFault(c);
    if (typeof b.serviceDisabled === 'boolean') this.setServiceDisabled(b.serviceDisabled);
    if (typeof b.latencyMs === 'number') this.latencyMs = b.latencyMs;
  }

  clear(): void {
    this.faults = [];
    this.capacity = [];
    this.serviceDisabled = false;
    this.latencyMs = 0;
  }

  capacityExhausted(zone: string, acceleratorType: string): boolean {
    return this.capacity.some((c) => c.zone === zone && c.acceleratorType === acceleratorType);
  }

  /** Throws what Google answers to CreateNode when a type has no quota/capacity in a zone. */
  checkCapacity(project: string, zone: string, acceleratorType: string): void {
    if (!this.capacityExhausted(zone, acceleratorType)) return;
    const message =
      `There is no more capacity in the zone "${zone}" for ${acceleratorType}; you can try in another zone where Cloud TPU ` +
      `Nodes are offered (see https://cloud.google.com/tpu/docs/regions-zones) or request more quota (injected by the local emulator).`;
    throw new ApiError('RESOURCE_EXHAUSTED', message, {
      details: [
        {
          '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
          violations: [{ subject: `projects/${project}/locations/${zone}/acceleratorTypes/${acceleratorType}`, description: `No capacity for ${acceleratorType} in ${zone}.` }],
        },
      ],
    });
  }

  /** Runs before every API call: the service-disabled switch first (Google checks it first), then RPC faults. */
  inject(rpc: string, service: DisableableService = TPU_SERVICE): void {
    if (this.serviceDisabled) throw serviceDisabledError(this.project, service);
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
    throw new ApiError(f.status, message, { http: f.http });
  }

  status(): FaultStatus {
    return {
      faults: this.faults.map((f) => ({ method: f.re.source.slice(4, -2), status: f.status, http: f.http, remaining: f.remaining })),
      capacity: this.capacity.map((c) => ({ ...c })),
      serviceDisabled: this.serviceDisabled,
      latencyMs: this.latencyMs,
    };
  }
}

/**
 * The 403 Google returns when the project has not enabled the Cloud TPU API: the message names the
 * project by number, and the details carry ErrorInfo (reason SERVICE_DISABLED, metadata with
 * activationUrl) and a Help link — which is what clients read to say where to enable it.
 */
export interface DisableableService {
  service: string;
  title: string;
}
export const TPU_SERVICE: DisableableService = { service: 'tpu.googleapis.com', title: 'Cloud TPU API' };
export const COMPUTE_SERVICE: DisableableService = { service: 'compute.googleapis.com', title: 'Compute Engine API' };

export function serviceDisabledError(project: string, svc: DisableableService = TPU_SERVICE): ApiError {
  const activationUrl = `https://console.developers.google.com/apis/api/${svc.service}/overview?project=${PROJECT_NUMBER}`;
  return new ApiError(
    'PERMISSION_DENIED',
    `${svc.title} has not been used in project ${PROJECT_NUMBER} before or it is disabled. Enable it by visiting ${activationUrl} then retry. ` +
      'If you enabled this API recently, wait a few minutes for the action to propagate to our systems and retry.',
    {
      details: [
        {
          '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
          reason: 'SERVICE_DISABLED',
          domain: 'googleapis.com',
          metadata: {
            service: svc.service,
            serviceTitle: svc.title,
            consumer: `projects/${PROJECT_NUMBER}`,
            containerInfo: PROJECT_NUMBER,
            activationUrl,
            // Which project the emulator serves, for people reading the raw response.
            emulatedProject: project,
          },
        },
        {
          '@type': 'type.googleapis.com/google.rpc.Help',
          links: [{ description: 'Google developers console API activation', url: activationUrl }],
        },
      ],
      reason: 'accessNotConfigured',
    },
  );
}

function statusForHttp(code: number): GoogleStatus {
  const hit = (Object.keys(GOOGLE_STATUS) as GoogleStatus[]).find((s) => GOOGLE_STATUS[s].http === code);
  if (hit) return hit;
  return code >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION';
}
