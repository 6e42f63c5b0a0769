import * as crypto from 'node:crypto';
import { familyInfo, machineTypeInfo } from '../../protocol/tpu-machine-types';
import { RESOURCE_ID_PATTERN } from './names';
import { osLoginGoverns } from './os-login-rule';
import { ComputeGroups } from './compute-groups';
import { EMULATOR_ACCOUNT, OsLoginState } from './os-login';
import { ApiError } from './types';

/**
 * The emulator's Compute Engine resources (compute/v1 REST JSON): TPU VM instances, instance templates,
 * managed instance groups (a multi-host slice is a MIG whose workload policy sets the accelerator topology),
 * resource policies and zone/region/global operations. Saved in the same state file as the Cloud TPU nodes
 * (its `compute` field). Every RUNNING instance has one SSH worker, brought up by the emulator's hooks before
 * the instance is reported RUNNING and taken down before it is reported TERMINATED or gone.
 */

export type InstanceStatus = 'PROVISIONING' | 'STAGING' | 'RUNNING' | 'STOPPING' | 'TERMINATED';
export type Json = Record<string, unknown>;

export interface InstanceJson extends Json {
  kind: 'compute#instance';
  id: string;
  name: string;
  zone: string;
  machineType: string;
  status: InstanceStatus;
  selfLink: string;
  creationTimestamp: string;
  networkInterfaces: ({ name: string; network: string; networkIP: string } & Json)[];
  metadata: { kind: 'compute#metadata'; fingerprint: string; items: { key: string; value: string }[] };
  scheduling: Json;
  labels: Record<string, string>;
}

export interface OperationJson extends Json {
  kind: 'compute#operation';
  id: string;
  name: string;
  operationType: string;
  targetLink: string;
  status: 'PENDING' | 'RUNNING' | 'DONE';
  progress: number;
  insertTime: string;
  selfLink: string;
  zone?: string;
  region?: string;
  endTime?: string;
  error?: { errors: { code: string; message: string }[] };
  httpErrorStatusCode?: number;
  httpErrorMessage?: string;
}

/** Where a worker of an instance sits in its slice (the SSH pool's view). */
export interface InstanceWorker {
  /** Key of the instance's SSH worker and sandbox: "ce-<instance>". */
  key: string;
  index: number;
  address: string;
  /** Every worker address of the slice, in worker order. */
  hostnames: string[];
  acceleratorType: string;
}

export interface ComputeHooks {
  instanceUp?(inst: InstanceJson, worker: InstanceWorker): Promise<void>;
  instanceDown?(inst: InstanceJson, worker: InstanceWorker, reason: 'stop' | 'delete' | 'preempt'): Promise<void>;
  metadataChanged?(inst: InstanceJson, worker: InstanceWorker): void;
  /** The project's common instance metadata changed: project-wide `ssh-keys` reach every VM that does not block them. */
  projectMetadataChanged?(): void;
}

/** How the world around the Compute state is reached: loopback addresses (shared with Cloud TPU nodes), the state file, capacity. */
export interface ComputeEnv {
  allocate(owner: string, count: number): string[];
  release(owner: string): void;
  save(): void;
  capacityExhausted(zone: string, acceleratorType: string): boolean;
  opDelayMs: number;
  log(msg: string): void;
}

interface Saved {
  instances: InstanceJson[];
  workers: Record<string, InstanceWorker>;
  templates: Json[];
  migs: Json[];
  policies: Json[];
  operations: OperationJson[];
  /** The project's common instance metadata (projects.setCommonInstanceMetadata). */
  projectMetadata?: MetadataJson;
  /** OS Login's imported keys, by account (os-login.ts). */
  osLogin?: unknown;
}

type MetadataJson = InstanceJson['metadata'];

export const BASE = 'https://compute.googleapis.com/compute/v1';
const MAX_DONE_OPS = 200;

export class ComputeState {
  readonly instances = new Map<string, InstanceJson>();
  readonly workers = new Map<string, InstanceWorker>();
  /** Instance templates, workload policies and MIGs (compute-groups.ts). */
  readonly groups: ComputeGroups;
  readonly operations = new Map<string, OperationJson>();
  /** The project's common instance metadata (the emulator serves one project). */
  projectMetadata: MetadataJson = { kind: 'compute#metadata', fingerprint: fingerprint(), items: [] };
  readonly osLogin: OsLoginState;
  hooks: ComputeHooks = {};
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly waiters = new Set<() => void>();

  constructor(readonly env: ComputeEnv, saved?: unknown) {
    const s = (saved && typeof saved === 'object' ? saved : {}) as Partial<Saved>;
    this.groups = new ComputeGroups(this);
    this.osLogin = new OsLoginState(s.osLogin);
    if (s.projectMetadata) this.projectMetadata = s.projectMetadata;
    for (const i of s.instances ?? []) {
      // A transition the previous emulator left half-way is finished now, as its timer would have.
      if (i.status === 'PROVISIONING' || i.status === 'STAGING') i.status = 'RUNNING';
      if (i.status === 'STOPPING') i.status = 'TERMINATED';
      this.instances.set(i.selfLink, i);
    }
    for (const [k, w] of Object.entries(s.workers ?? {})) this.workers.set(k, w);
    for (const t of s.templates ?? []) this.groups.templates.set(String(t.selfLink), t);
    for (const m of s.migs ?? []) this.groups.migs.set(String(m.selfLink), m);
    for (const p of s.policies ?? []) this.groups.policies.set(String(p.selfLink), p);
    for (const o of s.operations ?? []) {
      if (o.status !== 'DONE') Object.assign(o, { status: 'DONE', progress: 100, endTime: now() });
      this.operations.set(o.selfLink, o);
    }
  }

  toJSON(): Saved {
    return {
      instances: [...this.instances.values()],
      workers: Object.fromEntries(this.workers),
      templates: [...this.groups.templates.values()],
      migs: [...this.groups.migs.values()],
      policies: [...this.groups.policies.values()],
      operations: [...this.operations.values()],
      projectMetadata: this.projectMetadata,
      osLogin: this.osLogin.toJSON(),
    };
  }

  close(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const w of this.waiters) w();
  }

  /** The worker of an instance, by its self link. */
  workerOf(inst: InstanceJson): InstanceWorker | undefined {
    return this.workers.get(inst.selfLink);
  }

  // --- instances ---------------------------------------------------------------------------------------

  listInstances(project: string, zone: string): InstanceJson[] {
    const prefix = `${BASE}/projects/${project}/zones/${zone}/instances/`;
    return [...this.instances.values()].filter((i) => i.selfLink.startsWith(prefix)).sort((a, b) => a.name.localeCompare(b.name));
  }

  getInstance(project: string, zone: string, name: string): InstanceJson {
    const link = `${BASE}/projects/${project}/zones/${zone}/instances/${name}`;
    const i = this.instances.get(link);
    if (!i) throw notFound(`projects/${project}/zones/${zone}/instances/${name}`);
    return i;
  }

  /** instances.insert: validated now, the VM RUNNING (with its worker) when the operation is done. */
  insertInstance(project: string, zone: string, body: Json): OperationJson {
    const name = checkName(body.name, 'instance');
    const link = `${BASE}/projects/${project}/zones/${zone}/instances/${name}`;
    if (this.instances.has(link)) throw new ApiError('ALREADY_EXISTS', `The resource 'projects/${project}/zones/${zone}/instances/${name}' already exists`);
    const mt = tpuMachineType(body.machineType);
    const op = this.newOp(project, { zone }, 'insert', link);
    const shape = singleHostType(mt.name);
    const capacity = this.env.capacityExhausted(zone, shape);
    this.later(() => {
      if (capacity) return this.fail(op, 'ZONE_RESOURCE_POOL_EXHAUSTED', 503, `The zone 'projects/${project}/zones/${zone}' does not have enough resources available to fulfill the request. Try a different zone, or try again later.`);
      const inst = this.makeInstance(project, zone, name, mt.name, body);
      return this.bringUp([inst], shape).then(() => this.finish(op));
    });
    return op;
  }

  deleteInstance(project: string, zone: string, name: string, opType = 'delete'): OperationJson {
    const inst = this.getInstance(project, zone, name);
    const op = this.newOp(project, { zone }, opType, inst.selfLink);
    this.later(async () => {
      await this.takeDown(inst, 'delete');
      this.instances.delete(inst.selfLink);
      this.workers.delete(inst.selfLink);
      this.env.release(inst.selfLink);
      this.finish(op);
    });
    return op;
  }

  stopInstance(project: string, zone: string, name: string): OperationJson {
    const inst = this.getInstance(project, zone, name);
    if (inst.status !== 'RUNNING' && inst.status !== 'TERMINATED') throw new ApiError('FAILED_PRECONDITION', `The instance 'projects/${project}/zones/${zone}/instances/${name}' is ${inst.status} and cannot be stopped now.`, { reason: 'resourceNotReady' });
    const op = this.newOp(project, { zone }, 'stop', inst.selfLink);
    if (inst.status === 'RUNNING') inst.status = 'STOPPING';
    this.later(async () => {
      await this.takeDown(inst, 'stop');
      inst.status = 'TERMINATED';
      this.finish(op);
    });
    return op;
  }

  startInstance(project: string, zone: string, name: string): OperationJson {
    const inst = this.getInstance(project, zone, name);
    const op = this.newOp(project, { zone }, 'start', inst.selfLink);
    if (inst.status !== 'TERMINATED') {
      this.later(() => this.finish(op));
      return op;
    }
    inst.status = 'STAGING';
    this.later(async () => {
      const w = this.workerOf(inst);
      if (w) await this.hooks.instanceUp?.(inst, w);
      inst.status = 'RUNNING';
      inst.lastStartTimestamp = now();
      this.finish(op);
    });
    return op;
  }

  setMetadata(project: string, zone: string, name: string, body: Json): OperationJson {
    const inst = this.getInstance(project, zone, name);
    if (body.fingerprint !== inst.metadata.fingerprint) {
      throw new ApiError('FAILED_PRECONDITION', `Supplied fingerprint does not match current metadata fingerprint.`, { reason: 'conditionNotMet', http: 412 });
    }
    inst.metadata = { kind: 'compute#metadata', fingerprint: fingerprint(), items: metadataItems(body.items) };
    const w = this.workerOf(inst);
    if (w) this.hooks.metadataChanged?.(inst, w);
    const op = this.newOp(project, { zone }, 'setMetadata', inst.selfLink);
    this.finish(op);
    return op;
  }

  /** instances.setLabels: replaces the labels when the label fingerprint matches the VM's (412 otherwise). */
  setLabels(project: string, zone: string, name: string, body: Json): OperationJson {
    const inst = this.getInstance(project, zone, name);
    if (body.labelFingerprint !== undefined && body.labelFingerprint !== (inst.labelFingerprint ?? fingerprintOf(inst.labels))) {
      throw new ApiError('FAILED_PRECONDITION', `Labels fingerprint either invalid or resource labels have changed`, { reason: 'conditionNotMet', http: 412 });
    }
    inst.labels = { ...((body.labels as Record<string, string> | undefined) ?? {}) };
    inst.labelFingerprint = fingerprintOf(inst.labels);
    this.env.save();
    const op = this.newOp(project, { zone }, 'setLabels', inst.selfLink);
    this.finish(op);
    return op;
  }

  /** Test-only: Compute Engine ends a spot / flex-start VM; its action (STOP or DELETE) decides what is left. */
  async preempt(project: string, zone: string, name: string): Promise<InstanceJson> {
    const inst = this.getInstance(project, zone, name);
    await this.takeDown(inst, 'preempt');
    inst.status = 'TERMINATED';
    // Compute Engine records a preemption as a system operation of this type on the instance.
    this.finish(this.newOp(project, { zone }, 'compute.instances.preempted', inst.selfLink));
    const sc = inst.scheduling as { instanceTerminationAction?: string };
    if (sc.instanceTerminationAction === 'DELETE') {
      this.instances.delete(inst.selfLink);
      this.workers.delete(inst.selfLink);
      this.env.release(inst.selfLink);
    }
    this.env.save();
    return inst;
  }

  // --- the project and OS Login ------------------------------------------------------------------------

  /** projects.get: the fields clients read (name, its common instance metadata). */
  getProject(project: string): Json {
    return { kind: 'compute#project', id: '1', name: project, selfLink: `${BASE}/projects/${project}`, commonInstanceMetadata: this.projectMetadata };
  }

  /** projects.setCommonInstanceMetadata: replaces the items when the fingerprint matches (412 otherwise), as Compute does. */
  setCommonInstanceMetadata(project: string, body: Json): OperationJson {
    if (body.fingerprint !== undefined && body.fingerprint !== this.projectMetadata.fingerprint) {
      throw new ApiError('FAILED_PRECONDITION', `Supplied fingerprint does not match current metadata fingerprint.`, { reason: 'conditionNotMet', http: 412 });
    }
    this.projectMetadata = { kind: 'compute#metadata', fingerprint: fingerprint(), items: metadataItems(body.items) };
    this.hooks.projectMetadataChanged?.();
    const op = this.newOp(project, {}, 'setCommonInstanceMetadata', `${BASE}/projects/${project}`);
    this.finish(op);
    return op;
  }

  /**
   * Who may log in to the VM behind an SSH worker under OS Login: undefined where OS Login is off for it (its
   * metadata `ssh-keys` rule), else the OS Login username and the keys imported for the emulator's account.
   */
  osLoginFor(workerKey: string): { username: string; keys: string[] } | undefined {
    const inst = [...this.instances.values()].find((i) => this.workers.get(i.selfLink)?.key === workerKey);
    if (!inst) return undefined;
    const items = (m: MetadataJson) => Object.fromEntries(m.items.map((x) => [x.key, x.value]));
    if (!osLoginGoverns(items(inst.metadata), items(this.projectMetadata))) return undefined;
    return { username: OsLoginState.usernameOf(EMULATOR_ACCOUNT), keys: this.osLogin.liveKeys(EMULATOR_ACCOUNT).map((k) => k.key) };
  }

  // --- operations --------------------------------------------------------------------------------------

  getOperation(project: string, scope: { zone?: string; region?: string }, name: string): OperationJson {
    const link = `${BASE}/projects/${project}/${scopePath(scope)}/operations/${name}`;
    const op = this.operations.get(link);
    if (!op) throw notFound(`projects/${project}/${scopePath(scope)}/operations/${name}`);
    return op;
  }

  /** operations.wait: returns when the operation is DONE or after `maxMs`, as Compute Engine's does (2 minutes there). */
  async waitOperation(project: string, scope: { zone?: string; region?: string }, name: string, maxMs: number): Promise<OperationJson> {
    const op = this.getOperation(project, scope, name);
    const deadline = Date.now() + maxMs;
    while (op.status !== 'DONE' && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(done, Math.min(50, Math.max(1, deadline - Date.now())));
        function done() {
          clearTimeout(t);
          resolve();
        }
        this.waiters.add(done);
        setTimeout(() => this.waiters.delete(done), 60);
      });
    }
    return op;
  }

  // --- internals ---------------------------------------------------------------------------------------

  /** @internal compute-groups.ts */
  makeInstance(project: string, zone: string, name: string, machineType: string, body: Json): InstanceJson {
    const link = `${BASE}/projects/${project}/zones/${zone}/instances/${name}`;
    const [address] = this.env.allocate(link, 1);
    const inst: InstanceJson = {
      kind: 'compute#instance', id: newId(), name, zone: `${BASE}/projects/${project}/zones/${zone}`,
      machineType: `${BASE}/projects/${project}/zones/${zone}/machineTypes/${machineType}`, status: 'PROVISIONING',
      selfLink: link, creationTimestamp: now(),
      networkInterfaces: [nic(project, address, (body.networkInterfaces as Json[] | undefined)?.[0])],
      metadata: { kind: 'compute#metadata', fingerprint: fingerprint(), items: metadataItems((body.metadata as Json | undefined)?.items) },
      // What the client asked for and Compute Engine keeps as asked (gcloud's default service account and scopes).
      ...Object.fromEntries(['description', 'serviceAccounts', 'canIpForward', 'tags'].filter((k) => body[k] !== undefined).map((k) => [k, body[k]])),
      scheduling: { ...((body.scheduling as Json | undefined) ?? {}) },
      labels: { ...((body.labels as Record<string, string> | undefined) ?? {}) },
      labelFingerprint: fingerprintOf(body.labels),
      ...(body.reservationAffinity ? { reservationAffinity: body.reservationAffinity } : {}),
      ...(body.disks ? { disks: body.disks } : {}),
    };
    this.instances.set(link, inst);
    return inst;
  }

  /** Gives each instance its worker (index = its place in `slice`) and reports the new ones RUNNING. */
  /** @internal compute-groups.ts */
  async bringUp(slice: InstanceJson[], acceleratorType: string, fresh: InstanceJson[] = slice): Promise<void> {
    const hostnames = slice.map((i) => i.networkInterfaces[0].networkIP);
    for (const [index, inst] of slice.entries()) {
      const worker: InstanceWorker = { key: `ce-${inst.name}`, index, address: hostnames[index], hostnames, acceleratorType };
      this.workers.set(inst.selfLink, worker);
      // TPU VMs carry their worker number in their metadata, which runtimes read to find their rank.
      inst.metadata.items = [...inst.metadata.items.filter((x) => x.key !== 'agent-worker-number'), { key: 'agent-worker-number', value: String(index) }];
      if (!fresh.includes(inst)) continue;
      await this.hooks.instanceUp?.(inst, worker);
      inst.status = 'RUNNING';
      inst.lastStartTimestamp = now();
    }
  }

  /** @internal compute-groups.ts */
  async takeDown(inst: InstanceJson, reason: 'stop' | 'delete' | 'preempt'): Promise<void> {
    const w = this.workerOf(inst);
    if (w && inst.status !== 'TERMINATED') await this.hooks.instanceDown?.(inst, w, reason);
    else if (w && reason === 'delete') await this.hooks.instanceDown?.(inst, w, reason);
  }

  /** @internal compute-groups.ts */
  newOp(project: string, scope: { zone?: string; region?: string }, operationType: string, targetLink: string): OperationJson {
    const name = `operation-${Date.now()}-${crypto.randomBytes(6).toString('hex')}`;
    const link = `${BASE}/projects/${project}/${scopePath(scope)}/operations/${name}`;
    const op: OperationJson = {
      kind: 'compute#operation', id: newId(), name, operationType, targetLink, status: 'RUNNING', progress: 0,
      insertTime: now(), startTime: now(), selfLink: link,
      ...(scope.zone ? { zone: `${BASE}/projects/${project}/zones/${scope.zone}` } : {}),
      ...(scope.region ? { region: `${BASE}/projects/${project}/regions/${scope.region}` } : {}),
    };
    this.operations.set(link, op);
    const done = [...this.operations.values()].filter((o) => o.status === 'DONE');
    for (const o of done.slice(0, Math.max(0, done.length - MAX_DONE_OPS))) this.operations.delete(o.selfLink);
    return op;
  }

  /** @internal compute-groups.ts */
  done(op: OperationJson): OperationJson {
    this.finish(op);
    return op;
  }

  /** @internal compute-groups.ts */
  finish(op: OperationJson): void {
    Object.assign(op, { status: 'DONE', progress: 100, endTime: now() });
    this.env.save();
  }

  private fail(op: OperationJson, code: string, http: number, message: string): void {
    Object.assign(op, { error: { errors: [{ code, message }] }, httpErrorStatusCode: http, httpErrorMessage: http === 503 ? 'SERVICE UNAVAILABLE' : 'BAD REQUEST' });
    this.finish(op);
  }

  /** Runs `fn` after the operation delay; a failure is logged (the operation stays RUNNING only if fn never finished it). */
  /** @internal compute-groups.ts */
  later(fn: () => Promise<void> | void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      Promise.resolve()
        .then(fn)
        .catch((e: Error) => this.env.log(`compute: ${e.message}`))
        .finally(() => this.env.save());
    }, this.env.opDelayMs);
    this.timers.add(t);
  }
}

export function scopePath(scope: { zone?: string; region?: string }): string {
  if (scope.zone) return `zones/${scope.zone}`;
  if (scope.region) return `regions/${scope.region}`;
  return 'global';
}

export function checkName(v: unknown, what: string): string {
  const name = typeof v === 'string' ? v : '';
  if (!name) throw new ApiError('INVALID_ARGUMENT', `Required field 'resource.name' not specified (${what}).`, { reason: 'required' });
  if (!RESOURCE_ID_PATTERN.test(name)) throw new ApiError('INVALID_ARGUMENT', `Invalid value for field 'resource.name': '${name}'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'`, { reason: 'invalid' });
  return name;
}

/** A machine type URL, partial URL or name → a TPU machine type the emulator serves; 400 otherwise. */
export function tpuMachineType(v: unknown): { name: string; family: string; chips: number } {
  const raw = typeof v === 'string' ? v : '';
  const name = raw.slice(raw.lastIndexOf('/') + 1);
  const mt = machineTypeInfo(name);
  if (!mt) throw new ApiError('INVALID_ARGUMENT', `Invalid value for field 'resource.machineType': '${raw}'. Machine type with name '${name}' does not exist in zone (the local emulator serves TPU machine types only).`, { reason: 'invalid' });
  return mt;
}

/** The accelerator type of one VM of `machineType` (tpu7x-standard-4t → tpu7x-8). */
export function singleHostType(machineType: string): string {
  const mt = machineTypeInfo(machineType);
  const f = mt ? familyInfo(mt.family) : undefined;
  return mt && f ? `${f.family}-${mt.chips * f.suffixPerChip}` : machineType;
}

export function metadataItems(v: unknown): { key: string; value: string }[] {
  if (!Array.isArray(v)) return [];
  return v.filter((x): x is { key: string; value: string } => !!x && typeof (x as Json).key === 'string').map((x) => ({ key: x.key, value: String(x.value ?? '') }));
}

export function notFound(resource: string): ApiError {
  return new ApiError('NOT_FOUND', `The resource '${resource}' was not found`, { reason: 'notFound' });
}

export function newId(): string {
  return (BigInt.asUintN(63, crypto.randomBytes(8).readBigUInt64BE()) || 1n).toString();
}

export function fingerprint(): string {
  return crypto.randomBytes(8).toString('base64');
}

export function now(): string {
  return new Date().toISOString();
}

/**
 * The VM's network interface: its worker's loopback address inside, and, when the client asked for an external
 * IP (an accessConfig, as gcloud adds by default), the same address as its natIP: what `gcloud compute ssh` connects to.
 */
function nic(project: string, address: string, asked: Json | undefined): InstanceJson['networkInterfaces'][number] {
  const access = Array.isArray(asked?.accessConfigs) ? (asked.accessConfigs as Json[]) : [];
  return {
    kind: 'compute#networkInterface', name: 'nic0', network: typeof asked?.network === 'string' ? asked.network : `${BASE}/projects/${project}/global/networks/default`, networkIP: address,
    ...(access.length ? { accessConfigs: access.map((a) => ({ kind: 'compute#accessConfig', type: 'ONE_TO_ONE_NAT', name: 'External NAT', ...a, natIP: address, networkTier: a.networkTier ?? 'PREMIUM' })) } : {}),
  };
}

/** A fingerprint of a value (labels), as Compute Engine derives one: the same labels, the same fingerprint. */
function fingerprintOf(value: unknown): string {
  return crypto.createHash('sha256').update(JSON.stringify(value ?? {})).digest().subarray(0, 8).toString('base64');
}
