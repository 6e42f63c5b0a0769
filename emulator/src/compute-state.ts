import * as crypto from 'node:crypto';
import { checkLabels, checkMetadataItems } from './labels-metadata';
import { computeInstanceKey } from './names';
import { osLoginGoverns } from './os-login-rule';
import { ComputeGroups } from './compute-groups';
import { EMULATOR_ACCOUNT, OsLoginState } from './os-login';
import { ApiError } from './types';
import {
  BASE,
  checkInstanceBody,
  checkName,
  fingerprint,
  instanceParts,
  interrupted,
  metadataItems,
  newId,
  notFound,
  now,
  scopePath,
  singleHostType,
  tpuMachineType,
  type InstanceJson,
  type InstanceWorker,
  type Json,
  type MetadataJson,
  type OperationJson,
} from './compute-resources';

export type { InstanceJson, InstanceWorker, Json, OperationJson } from './compute-resources';

/**
 * The emulator's Compute Engine resources (compute/v1 REST JSON): TPU VM instances, instance templates,
 * managed instance groups (a multi-host slice is a MIG whose workload policy sets the accelerator topology),
 * resource policies and zone/region/global operations. Saved in the same state file as the Cloud TPU nodes
 * (its `compute` field). Every RUNNING instance has one SSH worker, brought up by the emulator's hooks before
 * the instance is reported RUNNING and taken down before it is reported TERMINATED or gone.
 */

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
  private readonly pendingInserts: { op: OperationJson; inst: InstanceJson }[] = [];

  constructor(readonly env: ComputeEnv, saved?: unknown) {
    const s = (saved && typeof saved === 'object' ? saved : {}) as Partial<Saved>;
    this.groups = new ComputeGroups(this);
    this.osLogin = new OsLoginState(s.osLogin);
    if (s.projectMetadata) this.projectMetadata = s.projectMetadata;
    const pendingLinks = new Set((s.operations ?? []).filter((o) => o.status !== 'DONE' && o.operationType === 'insert').map((o) => o.targetLink));
    for (const i of s.instances ?? []) {
      // A transition the previous emulator left half-way is finished now, as its timer would have; an insert it
      // accepted but never brought up stays PROVISIONING until resumeInserts().
      const pending = i.status === 'PROVISIONING' && pendingLinks.has(i.selfLink) && !(s.workers ?? {})[i.selfLink];
      if (!pending && (i.status === 'PROVISIONING' || i.status === 'STAGING')) i.status = 'RUNNING';
      if (i.status === 'STOPPING') i.status = 'TERMINATED';
      this.instances.set(i.selfLink, i);
    }
    for (const [k, w] of Object.entries(s.workers ?? {})) this.workers.set(k, w);
    for (const t of s.templates ?? []) this.groups.templates.set(String(t.selfLink), t);
    for (const m of s.migs ?? []) this.groups.migs.set(String(m.selfLink), m);
    for (const p of s.policies ?? []) this.groups.policies.set(String(p.selfLink), p);
    for (const o of s.operations ?? []) {
      this.operations.set(o.selfLink, o);
      if (o.status === 'DONE') continue;
      const inst = this.instances.get(o.targetLink);
      if (o.operationType === 'insert' && inst?.status === 'PROVISIONING' && !this.workers.has(inst.selfLink)) {
        // Accepted before the previous emulator ended: the instance is brought up by resumeInserts().
        this.pendingInserts.push({ op: o, inst });
      } else if (/\/instances\/[^/]+$/.test(o.targetLink)) {
        // Its effect may be half done; the operation must not claim it was done.
        Object.assign(o, interrupted(o));
      } else {
        Object.assign(o, { status: 'DONE', progress: 100, endTime: now() });
      }
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

  /**
   * instances.insert: validated now, and the instance exists from the moment the insert is accepted
   * (PROVISIONING), in the state file before the answer goes out, as on Compute Engine: of concurrent inserts of
   * one name one wins and the others get 409, and an emulator killed right after still has it (resumeInserts).
   * RUNNING, with its worker, when the operation is done; an insert that fails leaves nothing.
   */
  insertInstance(project: string, zone: string, body: Json): OperationJson {
    const name = checkName(body.name, 'instance');
    const link = `${BASE}/projects/${project}/zones/${zone}/instances/${name}`;
    if (this.instances.has(link)) throw new ApiError('ALREADY_EXISTS', `The resource 'projects/${project}/zones/${zone}/instances/${name}' already exists`);
    const mt = tpuMachineType(body.machineType);
    checkInstanceBody(body);
    const shape = singleHostType(mt.name);
    const inst = this.makeInstance(project, zone, name, mt.name, body);
    const op = this.newOp(project, { zone }, 'insert', link);
    this.commit(() => {
      this.operations.delete(op.selfLink);
      this.forget(inst);
    });
    this.scheduleInsert(op, inst, shape, this.env.capacityExhausted(zone, shape));
    return op;
  }

  /** Inserts the previous emulator accepted and never finished: brought up now (call once the hooks are set). */
  resumeInserts(): void {
    for (const { op, inst } of this.pendingInserts.splice(0)) {
      this.scheduleInsert(op, inst, singleHostType(inst.machineType.slice(inst.machineType.lastIndexOf('/') + 1)), false);
    }
  }

  private scheduleInsert(op: OperationJson, inst: InstanceJson, shape: string, capacity: boolean): void {
    const { project, zone } = instanceParts(inst.selfLink);
    this.later(
      async () => {
        if (capacity) {
          await this.discard(inst);
          return this.fail(op, 'ZONE_RESOURCE_POOL_EXHAUSTED', 503, `The zone 'projects/${project}/zones/${zone}' does not have enough resources available to fulfill the request. Try a different zone, or try again later.`);
        }
        await this.bringUp([inst], shape);
        this.finish(op);
      },
      { op, undo: () => this.discard(inst) },
    );
  }

  /** A failed create leaves nothing: no worker, no sandbox, no instance, no addresses. */
  /** @internal compute-groups.ts */
  async discard(inst: InstanceJson): Promise<void> {
    const w = this.workers.get(inst.selfLink);
    if (w) await this.hooks.instanceDown?.(inst, w, 'delete');
    this.forget(inst);
  }

  private forget(inst: InstanceJson): void {
    this.instances.delete(inst.selfLink);
    this.workers.delete(inst.selfLink);
    this.env.release(inst.selfLink);
  }

  /**
   * Writes the state now (before the caller answers); when that fails (a full disk), `undo` takes the change
   * back and the request gets the error instead of an acceptance the next start would not know.
   */
  private commit(undo: () => void): void {
    try {
      this.env.save();
    } catch (e) {
      undo();
      throw e;
    }
  }

  deleteInstance(project: string, zone: string, name: string, opType = 'delete'): OperationJson {
    const inst = this.getInstance(project, zone, name);
    const op = this.newOp(project, { zone }, opType, inst.selfLink);
    this.commit(() => this.operations.delete(op.selfLink));
    this.later(
      async () => {
        await this.takeDown(inst, 'delete');
        this.forget(inst);
        this.finish(op);
      },
      { op },
    );
    return op;
  }

  stopInstance(project: string, zone: string, name: string): OperationJson {
    const inst = this.getInstance(project, zone, name);
    if (inst.status !== 'RUNNING' && inst.status !== 'TERMINATED') throw new ApiError('FAILED_PRECONDITION', `The instance 'projects/${project}/zones/${zone}/instances/${name}' is ${inst.status} and cannot be stopped now.`, { reason: 'resourceNotReady' });
    const op = this.newOp(project, { zone }, 'stop', inst.selfLink);
    const before = inst.status;
    if (inst.status === 'RUNNING') inst.status = 'STOPPING';
    this.commit(() => {
      this.operations.delete(op.selfLink);
      inst.status = before;
    });
    this.later(
      async () => {
        await this.takeDown(inst, 'stop');
        inst.status = 'TERMINATED';
        this.finish(op);
      },
      { op },
    );
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
    this.commit(() => {
      this.operations.delete(op.selfLink);
      inst.status = 'TERMINATED';
    });
    this.later(
      async () => {
        const w = this.workerOf(inst);
        if (w) await this.hooks.instanceUp?.(inst, w);
        inst.status = 'RUNNING';
        inst.lastStartTimestamp = now();
        this.finish(op);
      },
      // A VM whose worker cannot come back is left stopped, as Compute Engine leaves one it cannot start.
      { op, undo: () => void (inst.status = 'TERMINATED') },
    );
    return op;
  }

  setMetadata(project: string, zone: string, name: string, body: Json): OperationJson {
    const inst = this.getInstance(project, zone, name);
    if (body.fingerprint !== inst.metadata.fingerprint) {
      throw new ApiError('FAILED_PRECONDITION', `Supplied fingerprint does not match current metadata fingerprint.`, { reason: 'conditionNotMet', http: 412 });
    }
    inst.metadata = { kind: 'compute#metadata', fingerprint: fingerprint(), items: checkMetadataItems(body.items, 'items') };
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
    checkLabels(body.labels, 'labels');
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
    this.projectMetadata = { kind: 'compute#metadata', fingerprint: fingerprint(), items: checkMetadataItems(body.items, 'items') };
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
      const worker: InstanceWorker = { key: this.workers.get(inst.selfLink)?.key ?? computeInstanceKey(inst.selfLink), index, address: hostnames[index], hostnames, acceleratorType };
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
    const httpErrorMessage = http === 503 ? 'SERVICE UNAVAILABLE' : http >= 500 ? 'INTERNAL SERVER ERROR' : 'BAD REQUEST';
    Object.assign(op, { error: { errors: [{ code, message }] }, httpErrorStatusCode: http, httpErrorMessage });
    this.finish(op);
  }

  /**
   * Runs `fn` after the operation delay. A failure is logged and, when `fn` belongs to an operation that it did
   * not finish, `undo` runs and the operation ends with the error: no operation stays RUNNING forever, and no
   * failure (a full disk included) escapes to crash the emulator.
   */
  /** @internal compute-groups.ts */
  later(fn: () => Promise<void> | void, on?: { op: OperationJson; undo?: () => Promise<void> | void }): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      Promise.resolve()
        .then(fn)
        .catch(async (e: Error) => {
          this.env.log(`compute: ${e.message}`);
          if (!on || on.op.status === 'DONE') return;
          await Promise.resolve()
            .then(on.undo)
            .catch((u: Error) => this.env.log(`compute: undoing ${on.op.operationType} of ${on.op.targetLink}: ${u.message}`));
          this.fail(on.op, 'INTERNAL_ERROR', 500, `The ${on.op.operationType} of ${on.op.targetLink} failed: ${e.message}`);
        })
        .catch((e: Error) => this.env.log(`compute: ${e.message}`))
        .finally(() => this.saveQuietly());
    }, this.env.opDelayMs);
    this.timers.add(t);
  }

  private saveQuietly(): void {
    try {
      this.env.save();
    } catch (e) {
      this.env.log(`compute: the state was not written: ${(e as Error).message}`);
    }
  }
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
