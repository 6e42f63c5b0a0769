import { TpwError, isTpwError } from '../errors';
import type { OperationProgress, WaitOptions } from '../tpu/api';
import type { NodeState } from '../tpu/models';
import { computeError, emulatorGoneError, operationError, type ComputeCallContext, type ComputeClients, type IInstance, type IOperation } from './client';
import { osLoginEnabledOn, parseBool } from './os-login-policy';
import { instanceSlice, isTpu, metadataOf, provisioningDetails, shortName, sleep, workersOf } from './slice-view';
import { familyInfo, machineTypeInfo, resolveSliceShape, type TpuSliceShape } from './tpu-machine-types';

/**
 * TPU VMs on Compute Engine: a single-host slice is one instance, a multi-host slice is a managed instance group
 * whose HIGH_THROUGHPUT workload policy sets the accelerator topology (Google's "Cloud TPU resources in Compute
 * Engine"). Everything here goes through `@google-cloud/compute`; operations are waited with `operations.wait`.
 */

export type Provisioning = 'on-demand' | 'spot' | 'flex-start' | 'reservation';

export interface ComputeWorker {
  /** Worker id (TPU_WORKER_ID): the instance's `agent-worker-number`, else its place by name. */
  index: number;
  instance: string;
  status: string;
  internalIp: string;
  externalIp?: string;
}

/** A TPU slice made by Compute Engine: one instance, or a MIG of N instances. */
export interface ComputeSlice {
  controlPlane: 'compute';
  kind: 'instance' | 'mig';
  /** The instance name, or the MIG name. */
  name: string;
  project: string;
  zone: string;
  machineType: string;
  acceleratorType: string;
  topology?: string;
  /** The slice's state in the Cloud TPU vocabulary, so both control planes read the same in the UI. */
  state: NodeState;
  /** The Compute Engine status behind `state` (instance status, or "running/target" for a MIG). */
  status: string;
  provisioning: Provisioning;
  /** The reservation consumed (provisioning 'reservation'). */
  reservation?: string;
  /** flex-start: the VMs' max run duration, in seconds. */
  maxRunDurationSeconds?: number;
  workers: ComputeWorker[];
  /** MIG: VMs asked for, and whether the MIG is stable. */
  targetSize?: number;
  isStable?: boolean;
  /** Why a MIG cannot create its VMs (e.g. ZONE_RESOURCE_POOL_EXHAUSTED), when it says. */
  lastError?: string;
  labels: Record<string, string>;
  metadata: Record<string, string>;
  createTime?: string;
}

export interface CreateComputeSliceRequest {
  project: string;
  zone: string;
  name: string;
  /** e.g. tpu7x-8 (one VM) or tpu7x-16 (a 2-VM slice). */
  acceleratorType: string;
  /** Default: the type's usual topology. */
  topology?: string;
  /** Boot image (URL or `projects/P/global/images/[family/]X`); default Google's TPU VM image family for the type. */
  image?: string;
  provisioning?: Provisioning;
  /** The reservation to consume (provisioning 'reservation'). */
  reservation?: string;
  /** flex-start: how long the VMs may run (required there), in seconds. */
  maxRunDurationSeconds?: number;
  labels?: Record<string, string>;
  metadata?: Record<string, string>;
  /** How long to wait for every VM to be RUNNING (default 30 minutes). */
  timeoutMs?: number;
}

/** What Compute Engine calls the project that publishes the TPU VM images. */
export const TPU_IMAGE_PROJECT = 'ubuntu-os-accelerator-images';
/** Names of what a slice create makes besides the MIG; deletion removes them only if they carry MARK. */
export const TEMPLATE_SUFFIX = '-tpw-template';
export const POLICY_SUFFIX = '-tpw-policy';
export const MARK = 'Made by TPU Workbench for TPU slice';
/** The label that says which TPU accelerator type a VM belongs to (a multi-host slice's VMs all carry the slice's). */
export const ACCELERATOR_TYPE_LABEL = 'tpw-accelerator-type';
/** The boot disk of every VM tpw makes, in GB (as `--boot-disk-size` says it). */
export const BOOT_DISK_GB = 100;
const POLL_MS = 500;
/** Metadata Compute Engine keeps per VM of a slice; a slice-wide metadata update leaves them as they are. */
const PER_VM_KEYS = ['agent-worker-number', 'created-by', 'instance-template'];

/** How often a call to the local emulator checks that the emulator it was made for still runs. */
const EMULATOR_CHECK_MS = 1000;

export class ComputeTpuProvider {
  constructor(readonly clients: ComputeClients) {}

  get description(): string {
    return this.clients.description;
  }

  close(): Promise<void> {
    return this.clients.close();
  }

  /** TPU VMs and multi-host slices of a zone; MIG members are shown as their slice's workers, not on their own. */
  async listSlices(project: string, zone: string, signal?: AbortSignal): Promise<ComputeSlice[]> {
    const ctx = this.ctx('list', 'TPU VMs', project, zone);
    const instances = await this.call(ctx, async () => (await this.clients.instances.list({ project, zone, maxResults: 500 }, { signal } as object))[0]);
    const migs = await this.call(ctx, async () => (await this.clients.migs.list({ project, zone, maxResults: 500 }))[0]);
    const byLink = new Map(instances.map((i) => [i.selfLink ?? '', i]));
    const out: ComputeSlice[] = [];
    const standalone = instances.filter((i) => isTpu(i) && !metadataOf(i)['created-by']);
    const preempted = await this.preemptedAmong(project, zone, standalone);
    for (const i of standalone) out.push(instanceSlice(project, zone, i, preempted.has(i.selfLink ?? '')));
    for (const m of migs) {
      const slice = await this.migSlice(project, zone, m.name ?? '', byLink).catch((e: unknown) => (isTpwError(e, 'NOT_FOUND') ? undefined : Promise.reject(e)));
      if (slice) out.push(slice);
    }
    return out.sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The TPU machine types Compute Engine offers in `zone` (machineTypes.list, TPU families only). */
  async listTpuMachineTypes(project: string, zone: string): Promise<string[]> {
    const ctx = this.ctx('list the TPU machine types of', `zone ${zone}`, project, zone);
    const [types] = await this.call(ctx, () => this.clients.machineTypes.list({ project, zone, maxResults: 500 }));
    return types.map((t) => t.name ?? '').filter((n) => machineTypeInfo(n) !== undefined);
  }

  /** The families of Google's TPU VM images (in TPU_IMAGE_PROJECT, named tpu-vm-…), for the create wizard's list. */
  async listTpuImageFamilies(): Promise<string[]> {
    const ctx = this.ctx('list', 'the TPU VM images', TPU_IMAGE_PROJECT);
    const [images] = await this.call(ctx, () => this.clients.images.list({ project: TPU_IMAGE_PROJECT, maxResults: 500, filter: 'name eq tpu-vm-.*' }));
    return [...new Set(images.map((i) => i.family ?? '').filter((f) => f.startsWith('tpu-vm-')))].sort();
  }

  /** The slice named `name`: a MIG of that name first (a slice), else an instance. NOT_FOUND names it. */
  async getSlice(project: string, zone: string, name: string): Promise<ComputeSlice> {
    const mig = await this.migSlice(project, zone, name).catch((e: unknown) => (isTpwError(e, 'NOT_FOUND') ? undefined : Promise.reject(e)));
    if (mig) return mig;
    const ctx = this.ctx('get', `TPU VM "${name}"`, project, zone);
    const inst = await this.call(ctx, async () => (await this.clients.instances.get({ project, zone, instance: name }))[0]);
    if (!isTpu(inst)) throw new TpwError('NOT_FOUND', `Compute Engine instance "${name}" in ${project}/${zone} is not a TPU VM (machine type ${shortName(inst.machineType ?? '')}).`);
    const preempted = await this.preemptedAmong(project, zone, [inst]);
    return instanceSlice(project, zone, inst, preempted.has(inst.selfLink ?? ''));
  }

  /**
   * Creates a TPU VM (one VM) or a multi-host slice (workload policy → instance template → MIG of N), and waits
   * until every VM is RUNNING. A multi-host create that fails deletes what it made before throwing.
   */
  async createSlice(req: CreateComputeSliceRequest, opts: WaitOptions = {}): Promise<ComputeSlice> {
    const shape = resolveSliceShape(req.acceleratorType, req.topology);
    if (req.provisioning === 'flex-start' && !(req.maxRunDurationSeconds && req.maxRunDurationSeconds > 0)) {
      throw new TpwError('INVALID_ARGUMENT', `Flex-start TPU VM "${req.name}" needs a maximum run duration (e.g. --max-run-duration 4h).`);
    }
    if (req.provisioning === 'reservation' && !req.reservation) {
      throw new TpwError('INVALID_ARGUMENT', `TPU VM "${req.name}" is to use a reservation, but none is named (--reservation NAME).`);
    }
    const props = this.instanceProperties(req, shape);
    if (shape.vmCount === 1) {
      const ctx = this.ctx('create', `TPU VM "${req.name}"`, req.project, req.zone, shape.acceleratorType);
      const [op] = await this.call(ctx, () => this.clients.instances.insert({ project: req.project, zone: req.zone, instanceResource: { ...props, name: req.name, machineType: `zones/${req.zone}/machineTypes/${shape.machineType}` } }));
      await this.waitOp(op, ctx, opts);
      return this.getSlice(req.project, req.zone, req.name);
    }
    return this.createMultiHost(req, shape, props, opts);
  }

  /** Deletes a slice: the MIG, then the template and workload policy that a slice create made (nothing else); or the VM. */
  async deleteSlice(project: string, zone: string, name: string, opts: WaitOptions = {}): Promise<void> {
    const slice = await this.getSlice(project, zone, name);
    if (slice.kind === 'instance') {
      const ctx = this.ctx('delete', `TPU VM "${name}"`, project, zone);
      const [op] = await this.call(ctx, () => this.clients.instances.delete({ project, zone, instance: name }));
      await this.waitOp(op, ctx, opts);
      return;
    }
    const ctx = this.ctx('delete', `TPU slice "${name}"`, project, zone);
    const [mig] = await this.call(ctx, () => this.clients.migs.get({ project, zone, instanceGroupManager: name }));
    const [op] = await this.call(ctx, () => this.clients.migs.delete({ project, zone, instanceGroupManager: name }));
    await this.waitOp(op, ctx, opts);
    await this.deleteOwnTemplateAndPolicy(project, zone, name, mig.instanceTemplate ?? '', mig.resourcePolicies?.workloadPolicy ?? '', opts);
  }

  /** Stops a single-host TPU VM (Compute Engine keeps its disk); a multi-host slice cannot be stopped, only deleted. */
  async stopSlice(project: string, zone: string, name: string, opts: WaitOptions = {}): Promise<ComputeSlice> {
    return this.startStop('stop', project, zone, name, opts);
  }

  async startSlice(project: string, zone: string, name: string, opts: WaitOptions = {}): Promise<ComputeSlice> {
    return this.startStop('start', project, zone, name, opts);
  }

  /**
   * Adds `user:key` lines to the `ssh-keys` metadata of every VM of the slice (the guest agent makes the account),
   * keeping the lines already there. Returns the slice as it is after.
   */
  async addSshKeys(project: string, zone: string, name: string, lines: string[], opts: WaitOptions = {}): Promise<ComputeSlice> {
    const slice = await this.getSlice(project, zone, name);
    for (const w of slice.workers) {
      const ctx = this.ctx('add an SSH key to', `TPU VM "${w.instance}"`, project, zone);
      const [inst] = await this.call(ctx, () => this.clients.instances.get({ project, zone, instance: w.instance }));
      const items = (inst.metadata?.items ?? []).map((x) => ({ key: x.key ?? '', value: x.value ?? '' }));
      const current = items.find((x) => x.key === 'ssh-keys')?.value ?? '';
      const have = new Set(current.split('\n').map((l) => l.trim()).filter(Boolean));
      const merged = [...have, ...lines.filter((l) => !have.has(l.trim()))].join('\n');
      const next = [...items.filter((x) => x.key !== 'ssh-keys'), { key: 'ssh-keys', value: merged }];
      const [op] = await this.call(ctx, () => this.clients.instances.setMetadata({ project, zone, instance: w.instance, metadataResource: { fingerprint: inst.metadata?.fingerprint, items: next } }));
      await this.waitOp(op, ctx, opts);
    }
    return this.getSlice(project, zone, name);
  }

  /**
   * Sets the slice's metadata on every VM (what the Cloud TPU API's UpdateNode with updateMask=metadata does for a
   * node; callers merge first). Keys Compute Engine sets per VM (worker number, the MIG and template that made it)
   * keep each VM's own value.
   */
  async setSliceMetadata(project: string, zone: string, name: string, metadata: Record<string, string>, opts: WaitOptions = {}): Promise<ComputeSlice> {
    const slice = await this.getSlice(project, zone, name);
    for (const w of slice.workers) {
      const ctx = this.ctx('set the metadata of', `TPU VM "${w.instance}"`, project, zone);
      const [inst] = await this.call(ctx, () => this.clients.instances.get({ project, zone, instance: w.instance }));
      const own = (inst.metadata?.items ?? []).filter((x) => PER_VM_KEYS.includes(x.key ?? '')).map((x) => ({ key: x.key ?? '', value: x.value ?? '' }));
      const items = [...Object.entries(metadata).filter(([k]) => !PER_VM_KEYS.includes(k)).map(([key, value]) => ({ key, value })), ...own];
      const [op] = await this.call(ctx, () => this.clients.instances.setMetadata({ project, zone, instance: w.instance, metadataResource: { fingerprint: inst.metadata?.fingerprint, items } }));
      await this.waitOp(op, ctx, opts);
    }
    return this.getSlice(project, zone, name);
  }

  /**
   * Whether OS Login governs the slice's VMs, and where it was turned on: the VM's own `enable-oslogin` metadata
   * wins over the project's common instance metadata (Compute Engine's rule, os-login-policy.ts).
   */
  async osLoginEnabledOn(project: string, instanceMetadata: Record<string, string>): Promise<'instance' | 'project' | undefined> {
    if (parseBool(instanceMetadata['enable-oslogin']) !== undefined) return osLoginEnabledOn(instanceMetadata, {});
    const ctx = this.ctx('read the common instance metadata of', `project ${project}`, project);
    const [p] = await this.call(ctx, () => this.clients.projects.get({ project }));
    const common = Object.fromEntries((p.commonInstanceMetadata?.items ?? []).map((x) => [x.key ?? '', x.value ?? '']));
    return osLoginEnabledOn(instanceMetadata, common);
  }

  /**
   * The spot / flex-start VMs among `instances` that Compute Engine stopped (preempted) since they last started:
   * TERMINATED alone cannot tell a preemption from the user's own stop, the zone's `compute.instances.preempted`
   * operations can (Google's documented way to find preempted VMs).
   */
  private async preemptedAmong(project: string, zone: string, instances: IInstance[]): Promise<Set<string>> {
    const candidates = instances.filter((i) => i.status === 'TERMINATED' && (['SPOT', 'FLEX_START'].includes(i.scheduling?.provisioningModel ?? '') || i.scheduling?.preemptible === true));
    const out = new Set<string>();
    if (candidates.length === 0) return out;
    const ctx = this.ctx('list the preemptions of', 'TPU VMs', project, zone);
    const [ops] = await this.call(ctx, () => this.clients.zoneOps.list({ project, zone, filter: 'operationType="compute.instances.preempted"' }));
    for (const i of candidates) {
      const started = Date.parse(i.lastStartTimestamp ?? '') || 0;
      if (ops.some((o) => o.targetLink === i.selfLink && (Date.parse(o.insertTime ?? '') || 0) >= started)) out.add(i.selfLink ?? '');
    }
    return out;
  }

  // --- internals -----------------------------------------------------------------------------------------

  private async createMultiHost(req: CreateComputeSliceRequest, shape: TpuSliceShape, props: IInstance, opts: WaitOptions): Promise<ComputeSlice> {
    const { project, zone, name } = req;
    const region = zone.replace(/-[a-z]$/, '');
    const ctx = this.ctx('create', `TPU slice "${name}" (${shape.acceleratorType}, ${shape.vmCount} VMs)`, project, zone, shape.acceleratorType);
    const policyName = `${name}${POLICY_SUFFIX}`;
    const templateName = `${name}${TEMPLATE_SUFFIX}`;
    const made: ('policy' | 'template' | 'mig')[] = [];
    try {
      const [pOp] = await this.call(ctx, () =>
        this.clients.policies.insert({
          project, region,
          resourcePolicyResource: { name: policyName, description: `${MARK} ${name}`, workloadPolicy: { type: 'HIGH_THROUGHPUT', acceleratorTopology: shape.topology } },
        }),
      );
      made.push('policy');
      await this.waitOp(pOp, ctx, opts);
      const [tOp] = await this.call(ctx, () =>
        this.clients.templates.insert({ project, instanceTemplateResource: { name: templateName, description: `${MARK} ${name}`, properties: { ...props, machineType: shape.machineType } } }),
      );
      made.push('template');
      await this.waitOp(tOp, ctx, opts);
      const [mOp] = await this.call(ctx, () =>
        this.clients.migs.insert({
          project, zone,
          instanceGroupManagerResource: {
            name, baseInstanceName: name, targetSize: shape.vmCount,
            instanceTemplate: `projects/${project}/global/instanceTemplates/${templateName}`,
            resourcePolicies: { workloadPolicy: `projects/${project}/regions/${region}/resourcePolicies/${policyName}` },
          },
        }),
      );
      made.push('mig');
      await this.waitOp(mOp, ctx, opts);
      return await this.waitAllRunning(project, zone, name, shape, ctx, opts, req.timeoutMs ?? 30 * 60_000);
    } catch (e) {
      // Nothing half-made is left behind: what this call created goes, in reverse order.
      await this.cleanUp(project, zone, name, made, templateName, policyName, region).catch(() => undefined);
      throw e;
    }
  }

  private async waitAllRunning(project: string, zone: string, name: string, shape: TpuSliceShape, ctx: ComputeCallContext, opts: WaitOptions, timeoutMs: number): Promise<ComputeSlice> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (opts.signal?.aborted) throw new TpwError('CANCELLED', `Stopped waiting for TPU slice "${name}"; it is being created in ${project}/${zone}.`);
      const slice = await this.migSlice(project, zone, name, undefined, ctx);
      if (!slice) throw new TpwError('NOT_FOUND', `TPU slice "${name}" in ${project}/${zone} is gone while it was being created.`);
      opts.onProgress?.({ operationName: `${name}: ${slice.status}`, done: slice.state === 'READY' });
      if (slice.lastError) {
        throw operationError({ error: { errors: [{ code: slice.lastError.split(':')[0], message: slice.lastError }] } }, ctx) ?? new TpwError('INTERNAL', slice.lastError);
      }
      if (slice.state === 'READY' && slice.workers.length === shape.vmCount) return slice;
      if (Date.now() > deadline) throw new TpwError('UNAVAILABLE', `TPU slice "${name}" in ${project}/${zone} did not have all ${shape.vmCount} VMs RUNNING within ${Math.round(timeoutMs / 1000)} s (${slice.status}).`);
      await sleep(POLL_MS, opts.signal);
    }
  }

  private async cleanUp(project: string, zone: string, name: string, made: string[], templateName: string, policyName: string, region: string): Promise<void> {
    const ctx = this.ctx('clean up', `TPU slice "${name}"`, project, zone);
    if (made.includes('mig')) {
      const [op] = await this.call(ctx, () => this.clients.migs.delete({ project, zone, instanceGroupManager: name }));
      await this.waitOp(op, ctx, {});
    }
    if (made.includes('template')) {
      const [op] = await this.call(ctx, () => this.clients.templates.delete({ project, instanceTemplate: templateName }));
      await this.waitOp(op, ctx, {});
    }
    if (made.includes('policy')) {
      const [op] = await this.call(ctx, () => this.clients.policies.delete({ project, region, resourcePolicy: policyName }));
      await this.waitOp(op, ctx, {});
    }
  }

  private async deleteOwnTemplateAndPolicy(project: string, zone: string, name: string, templateLink: string, policyLink: string, opts: WaitOptions): Promise<void> {
    const ctx = this.ctx('delete', `TPU slice "${name}"`, project, zone);
    const templateName = shortName(templateLink);
    if (templateName) {
      const [t] = await this.call(ctx, () => this.clients.templates.get({ project, instanceTemplate: templateName }));
      if (t.description === `${MARK} ${name}`) {
        const [op] = await this.call(ctx, () => this.clients.templates.delete({ project, instanceTemplate: templateName }));
        await this.waitOp(op, ctx, opts);
      }
    }
    const pm = /regions\/([^/]+)\/resourcePolicies\/([^/]+)$/.exec(policyLink);
    if (pm) {
      const [p] = await this.call(ctx, () => this.clients.policies.get({ project, region: pm[1], resourcePolicy: pm[2] }));
      if (p.description === `${MARK} ${name}`) {
        const [op] = await this.call(ctx, () => this.clients.policies.delete({ project, region: pm[1], resourcePolicy: pm[2] }));
        await this.waitOp(op, ctx, opts);
      }
    }
  }

  private async startStop(verb: 'start' | 'stop', project: string, zone: string, name: string, opts: WaitOptions): Promise<ComputeSlice> {
    const slice = await this.getSlice(project, zone, name);
    if (slice.kind === 'mig') {
      throw new TpwError('FAILED_PRECONDITION', `TPU slice "${name}" is a multi-host slice (a managed instance group): Compute Engine cannot ${verb} it; delete it and create it again instead.`);
    }
    const ctx = this.ctx(verb, `TPU VM "${name}"`, project, zone);
    const [op] = await this.call(ctx, () => (verb === 'stop' ? this.clients.instances.stop({ project, zone, instance: name }) : this.clients.instances.start({ project, zone, instance: name })));
    await this.waitOp(op, ctx, opts);
    return this.getSlice(project, zone, name);
  }

  /** `outer`: the call this read is part of (a create waiting for its VMs), for what a failure says. */
  private async migSlice(project: string, zone: string, name: string, byLink?: Map<string, IInstance>, outer?: ComputeCallContext): Promise<ComputeSlice | undefined> {
    const ctx = outer ?? this.ctx('get', `TPU slice "${name}"`, project, zone);
    const [mig] = await this.call(ctx, () => this.clients.migs.get({ project, zone, instanceGroupManager: name }));
    const [template] = await this.call(ctx, () => this.clients.templates.get({ project, instanceTemplate: shortName(mig.instanceTemplate ?? '') }));
    const mt = machineTypeInfo(shortName(template.properties?.machineType ?? ''));
    if (!mt) return undefined;
    const [managed] = await this.call(ctx, () => this.clients.migs.listManagedInstances({ project, zone, instanceGroupManager: name }));
    const members: IInstance[] = [];
    let lastError: string | undefined;
    for (const m of managed) {
      const err = m.lastAttempt?.errors?.errors?.[0];
      if (err) lastError = `${err.code ?? 'ERROR'}: ${err.message ?? ''}`;
      if (!m.instance) continue;
      const inst = byLink?.get(m.instance) ?? (await this.call(ctx, async () => (await this.clients.instances.get({ project, zone, instance: shortName(m.instance ?? '') }))[0]));
      members.push(inst);
    }
    const policyLink = mig.resourcePolicies?.workloadPolicy ?? '';
    const pm = /regions\/([^/]+)\/resourcePolicies\/([^/]+)$/.exec(policyLink);
    const topology = pm ? ((await this.call(ctx, () => this.clients.policies.get({ project, region: pm[1], resourcePolicy: pm[2] })))[0].workloadPolicy?.acceleratorTopology ?? undefined) : undefined;
    const f = familyInfo(mt.family);
    const target = Number(mig.targetSize ?? 0);
    const running = members.filter((i) => i.status === 'RUNNING').length;
    // A spot member that Compute Engine took back leaves the slice unusable as a whole, as a preempted TPU VM.
    const preempted = (await this.preemptedAmong(project, zone, members)).size > 0;
    const state: NodeState = preempted ? 'PREEMPTED' : running === target && target > 0 ? 'READY' : target === 0 ? 'STOPPED' : 'CREATING';
    const first = members[0];
    return {
      controlPlane: 'compute', kind: 'mig', name, project, zone, machineType: mt.name,
      acceleratorType: `${mt.family}-${target * mt.chips * (f?.suffixPerChip ?? 1)}`,
      ...(topology ? { topology } : {}),
      state, status: `${running}/${target} VMs running${mig.status?.isStable ? '' : ', changing'}`,
      // The template says how every VM of the slice is provisioned, even when none is left (spot, flex-start).
      ...provisioningDetails(template.properties ?? first ?? {}),
      workers: workersOf(members), targetSize: target, isStable: mig.status?.isStable ?? undefined,
      ...(lastError ? { lastError } : {}),
      labels: { ...(template.properties?.labels ?? {}) }, metadata: first ? metadataOf(first) : {},
      ...(mig.creationTimestamp ? { createTime: mig.creationTimestamp } : {}),
    };
  }

  private instanceProperties(req: CreateComputeSliceRequest, shape: TpuSliceShape): IInstance {
    const image = req.image ?? `projects/${TPU_IMAGE_PROJECT}/global/images/family/${familyInfo(shape.family)?.defaultImage ?? 'tpu-vm-ubuntu2204-base'}`;
    const scheduling: IInstance['scheduling'] =
      req.provisioning === 'spot'
        ? // gcloud's --provisioning-model=SPOT also sends preemptible: true; the same VM either way.
          { provisioningModel: 'SPOT', preemptible: true, instanceTerminationAction: 'STOP', onHostMaintenance: 'TERMINATE', automaticRestart: false }
        : req.provisioning === 'flex-start'
          ? { provisioningModel: 'FLEX_START', instanceTerminationAction: 'DELETE', maxRunDuration: { seconds: req.maxRunDurationSeconds }, onHostMaintenance: 'TERMINATE', automaticRestart: false }
          : { provisioningModel: 'STANDARD', onHostMaintenance: 'TERMINATE', automaticRestart: true };
    const reservationAffinity: IInstance['reservationAffinity'] =
      req.provisioning === 'reservation'
        ? { consumeReservationType: 'SPECIFIC_RESERVATION', key: 'compute.googleapis.com/reservation-name', values: [req.reservation ?? ''] }
        : req.provisioning === 'flex-start' || req.provisioning === 'spot'
          ? { consumeReservationType: 'NO_RESERVATION' }
          : undefined;
    return {
      disks: [{ boot: true, autoDelete: true, initializeParams: { sourceImage: image, diskSizeGb: BOOT_DISK_GB } }],
      // The external IP gcloud gives a VM by default, under gcloud's name for it.
      networkInterfaces: [{ network: 'global/networks/default', accessConfigs: [{ name: 'external-nat', type: 'ONE_TO_ONE_NAT' }] }],
      scheduling,
      ...(reservationAffinity ? { reservationAffinity } : {}),
      labels: { ...(req.labels ?? {}), [ACCELERATOR_TYPE_LABEL]: shape.acceleratorType },
      metadata: { items: Object.entries(req.metadata ?? {}).map(([key, value]) => ({ key, value })) },
    };
  }

  /** Waits for a Compute operation with operations.wait (it returns at DONE or after a while; asked again until DONE). */
  private async waitOp(lro: unknown, ctx: ComputeCallContext, opts: WaitOptions): Promise<IOperation> {
    let op = ((lro as { latestResponse?: IOperation }).latestResponse ?? lro) as IOperation;
    const name = op.name ?? '';
    const scope = { zone: shortName(op.zone ?? ''), region: shortName(op.region ?? '') };
    const progress = (o: IOperation): OperationProgress => ({ operationName: name, done: o.status === 'DONE' });
    opts.onProgress?.(progress(op));
    while (op.status !== 'DONE') {
      if (opts.signal?.aborted) throw new TpwError('CANCELLED', `Stopped waiting to ${ctx.verb} ${ctx.what}; operation ${name} goes on in ${ctx.project}.`);
      const [next] = await this.call(ctx, () =>
        scope.zone
          ? this.clients.zoneOps.wait({ project: ctx.project, zone: scope.zone, operation: name })
          : scope.region
            ? this.clients.regionOps.wait({ project: ctx.project, region: scope.region, operation: name })
            : this.clients.globalOps.wait({ project: ctx.project, operation: name }),
      );
      op = next;
      opts.onProgress?.(progress(op));
    }
    const failed = operationError(op, ctx);
    if (failed) throw failed;
    return op;
  }

  private ctx(verb: string, what: string, project: string, zone?: string, acceleratorType?: string): ComputeCallContext {
    return { verb, what, project, zone, acceleratorType, emulator: this.clients.emulator };
  }

  private async call<T>(ctx: ComputeCallContext, fn: () => Promise<T>): Promise<T> {
    const gone = this.clients.emulatorGone;
    let timer: NodeJS.Timeout | undefined;
    try {
      if (!gone) return await fn();
      // The client retries a refused connection for minutes: the endpoint file says sooner that the emulator it
      // talks to is gone.
      const watch = new Promise<never>((_, reject) => {
        timer = setInterval(() => {
          const why = gone();
          if (why) reject(emulatorGoneError(why, ctx));
        }, EMULATOR_CHECK_MS);
        timer.unref();
      });
      return await Promise.race([fn(), watch]);
    } catch (e) {
      // Whatever the call failed with, an emulator that went away is the cause to report.
      const why = gone?.();
      if (why) throw emulatorGoneError(why, ctx);
      throw computeError(e, ctx);
    } finally {
      if (timer) clearInterval(timer);
    }
  }
}
