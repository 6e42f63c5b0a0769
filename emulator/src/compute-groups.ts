import * as crypto from 'node:crypto';
import { shapeFromTopology } from '../../protocol/tpu-machine-types';
import { EmulatorError } from './errors';
import { BASE, checkInstanceBody, checkName, newId, notFound, now, singleHostType, tpuMachineType, type InstanceJson, type Json, type OperationJson } from './compute-resources';
import type { ComputeState } from './compute-state';
import { ApiError } from './types';

/**
 * Instance templates, resource (workload) policies and managed instance groups of the emulated Compute Engine:
 * a multi-host TPU slice is a MIG whose HIGH_THROUGHPUT workload policy sets the accelerator topology. The MIG's
 * instances are ComputeState's instances (one SSH worker each, worker index = place in the slice).
 */
export class ComputeGroups {
  readonly templates = new Map<string, Json>();
  readonly migs = new Map<string, Json>();
  readonly policies = new Map<string, Json>();

  constructor(private readonly cs: ComputeState) {}


  insertTemplate(project: string, body: Json): OperationJson {
    const name = checkName(body.name, 'instance template');
    const link = `${BASE}/projects/${project}/global/instanceTemplates/${name}`;
    if (this.templates.has(link)) throw new ApiError('ALREADY_EXISTS', `The resource 'projects/${project}/global/instanceTemplates/${name}' already exists`);
    const props = (body.properties ?? {}) as Json;
    checkInstanceBody(props, 'resource.properties');
    tpuMachineType(props.machineType);
    this.templates.set(link, { ...body, kind: 'compute#instanceTemplate', id: newId(), selfLink: link, creationTimestamp: now() });
    return this.cs.done(this.cs.newOp(project, {}, 'insert', link));
  }

  getTemplate(project: string, name: string): Json {
    const t = this.templates.get(`${BASE}/projects/${project}/global/instanceTemplates/${name}`);
    if (!t) throw notFound(`projects/${project}/global/instanceTemplates/${name}`);
    return t;
  }

  deleteTemplate(project: string, name: string): OperationJson {
    const t = this.getTemplate(project, name);
    const user = [...this.migs.values()].find((m) => String(m.instanceTemplate) === t.selfLink);
    if (user) throw new ApiError('FAILED_PRECONDITION', `The instance_template resource '${String(t.selfLink)}' is already being used by '${String(user.selfLink)}'`, { reason: 'resourceInUseByAnotherResource' });
    this.templates.delete(String(t.selfLink));
    return this.cs.done(this.cs.newOp(project, {}, 'delete', String(t.selfLink)));
  }

  insertPolicy(project: string, region: string, body: Json): OperationJson {
    const name = checkName(body.name, 'resource policy');
    const link = `${BASE}/projects/${project}/regions/${region}/resourcePolicies/${name}`;
    if (this.policies.has(link)) throw new ApiError('ALREADY_EXISTS', `The resource 'projects/${project}/regions/${region}/resourcePolicies/${name}' already exists`);
    const wp = body.workloadPolicy as Json | undefined;
    if (wp && wp.type !== 'HIGH_THROUGHPUT' && wp.type !== 'HIGH_AVAILABILITY') {
      throw new ApiError('INVALID_ARGUMENT', `Invalid value for field 'resource.workloadPolicy.type': '${String(wp.type)}'.`, { reason: 'invalid' });
    }
    this.policies.set(link, { ...body, kind: 'compute#resourcePolicy', id: newId(), region: `${BASE}/projects/${project}/regions/${region}`, selfLink: link, status: 'READY', creationTimestamp: now() });
    return this.cs.done(this.cs.newOp(project, { region }, 'insert', link));
  }

  getPolicy(project: string, region: string, name: string): Json {
    const p = this.policies.get(`${BASE}/projects/${project}/regions/${region}/resourcePolicies/${name}`);
    if (!p) throw notFound(`projects/${project}/regions/${region}/resourcePolicies/${name}`);
    return p;
  }

  deletePolicy(project: string, region: string, name: string): OperationJson {
    const p = this.getPolicy(project, region, name);
    const user = [...this.migs.values()].find((m) => (m.resourcePolicies as Json | undefined)?.workloadPolicy === p.selfLink);
    if (user) throw new ApiError('FAILED_PRECONDITION', `The resource_policy resource '${String(p.selfLink)}' is already being used by '${String(user.selfLink)}'`, { reason: 'resourceInUseByAnotherResource' });
    this.policies.delete(String(p.selfLink));
    return this.cs.done(this.cs.newOp(project, { region }, 'delete', String(p.selfLink)));
  }

  listMigs(project: string, zone: string): Json[] {
    const prefix = `${BASE}/projects/${project}/zones/${zone}/instanceGroupManagers/`;
    return [...this.migs.values()].filter((m) => String(m.selfLink).startsWith(prefix)).map((m) => this.migView(m));
  }

  getMig(project: string, zone: string, name: string): Json {
    return this.migView(this.migRecord(project, zone, name));
  }

  /**
   * instanceGroupManagers.insert: a MIG of targetSize TPU VMs from a template. With a HIGH_THROUGHPUT workload
   * policy the topology must fit the template's machine type and the MIG makes all of its VMs or none (no
   * capacity: every managed instance stays CREATING with ZONE_RESOURCE_POOL_EXHAUSTED as its last attempt).
   */
  insertMig(project: string, zone: string, body: Json): OperationJson {
    const name = checkName(body.name, 'instance group manager');
    const link = `${BASE}/projects/${project}/zones/${zone}/instanceGroupManagers/${name}`;
    if (this.migs.has(link)) throw new ApiError('ALREADY_EXISTS', `The resource 'projects/${project}/zones/${zone}/instanceGroupManagers/${name}' already exists`);
    const templateName = /instanceTemplates\/([^/]+)$/.exec(String(body.instanceTemplate ?? ''))?.[1];
    if (!templateName) throw new ApiError('INVALID_ARGUMENT', `Invalid value for field 'resource.instanceTemplate': '${String(body.instanceTemplate ?? '')}'.`, { reason: 'invalid' });
    const template = this.getTemplate(project, templateName);
    const mt = tpuMachineType((template.properties as Json).machineType);
    const targetSize = Number(body.targetSize ?? 0);
    if (!Number.isInteger(targetSize) || targetSize < 0) throw new ApiError('INVALID_ARGUMENT', `Invalid value for field 'resource.targetSize': '${String(body.targetSize)}'.`, { reason: 'invalid' });
    const policyLink = (body.resourcePolicies as Json | undefined)?.workloadPolicy;
    let acceleratorType = singleHostType(mt.name);
    if (typeof policyLink === 'string' && policyLink) {
      const m = /regions\/([^/]+)\/resourcePolicies\/([^/]+)$/.exec(policyLink);
      if (!m) throw new ApiError('INVALID_ARGUMENT', `Invalid value for field 'resource.resourcePolicies.workloadPolicy': '${policyLink}'.`, { reason: 'invalid' });
      const policy = this.getPolicy(project, m[1], m[2]);
      const topology = String((policy.workloadPolicy as Json | undefined)?.acceleratorTopology ?? '');
      let vms: number;
      try {
        const shape = shapeFromTopology(mt.family, topology);
        if (shape.chipsPerVm !== mt.chips) throw new EmulatorError('INVALID_ARGUMENT', `a ${topology} slice is made of ${shape.machineType} VMs, not ${mt.name}`);
        vms = shape.vmCount;
        acceleratorType = shape.acceleratorType;
      } catch (e) {
        throw new ApiError('INVALID_ARGUMENT', `Invalid value for field 'resource.resourcePolicies.workloadPolicy': accelerator topology '${topology}' is not supported for machine type '${mt.name}' (${(e as Error).message}).`, { reason: 'invalid' });
      }
      if (targetSize !== 0 && targetSize !== vms) {
        throw new ApiError('INVALID_ARGUMENT', `Invalid value for field 'resource.targetSize': ${targetSize}. Accelerator topology '${topology}' needs exactly ${vms} VMs.`, { reason: 'invalid' });
      }
    }
    // Its instances are named `<base>-<4 hex>`: a base that is no resource name would put their sandboxes anywhere.
    const base = body.baseInstanceName === undefined ? name : body.baseInstanceName;
    if (typeof base !== 'string' || !/^[a-z](?:[-a-z0-9]{0,56}[a-z0-9])?$/.test(base)) {
      throw new ApiError('INVALID_ARGUMENT', `Invalid value for field 'resource.baseInstanceName': '${String(base).slice(0, 80)}'. Must be a match of regex '[a-z](?:[-a-z0-9]{0,56}[a-z0-9])?'`, { reason: 'invalid' });
    }
    const record: Json = {
      kind: 'compute#instanceGroupManager', id: newId(), name, selfLink: link, creationTimestamp: now(),
      zone: `${BASE}/projects/${project}/zones/${zone}`, baseInstanceName: base,
      instanceTemplate: String(template.selfLink), targetSize, resourcePolicies: body.resourcePolicies ?? {},
      instanceGroup: `${BASE}/projects/${project}/zones/${zone}/instanceGroups/${name}`,
      // Emulator bookkeeping (not part of the API's answer): the slice's type and members.
      _acceleratorType: acceleratorType, _members: [] as string[], _failed: '',
    };
    this.migs.set(link, record);
    const op = this.cs.newOp(project, { zone }, 'insert', link);
    this.cs.finish(op);
    this.cs.later(() => this.reconcile(project, zone, record));
    return op;
  }

  resizeMig(project: string, zone: string, name: string, size: number): OperationJson {
    const mig = this.migRecord(project, zone, name);
    if (!Number.isInteger(size) || size < 0) throw new ApiError('INVALID_ARGUMENT', `Invalid value for field 'size': '${size}'.`, { reason: 'invalid' });
    mig.targetSize = size;
    mig._failed = '';
    const op = this.cs.newOp(project, { zone }, 'compute.instanceGroupManagers.resize', String(mig.selfLink));
    this.cs.finish(op);
    this.cs.later(() => this.reconcile(project, zone, mig));
    return op;
  }

  deleteMig(project: string, zone: string, name: string): OperationJson {
    const mig = this.migRecord(project, zone, name);
    const op = this.cs.newOp(project, { zone }, 'delete', String(mig.selfLink));
    this.cs.later(async () => {
      mig.targetSize = 0;
      await this.reconcile(project, zone, mig);
      this.migs.delete(String(mig.selfLink));
      this.cs.finish(op);
    });
    return op;
  }

  listManagedInstances(project: string, zone: string, name: string): Json[] {
    const mig = this.migRecord(project, zone, name);
    const members = (mig._members as string[]).map((l) => this.cs.instances.get(l)).filter((i): i is InstanceJson => i !== undefined);
    const out: Json[] = members.map((i) => ({
      instance: i.selfLink, id: i.id, name: i.name, instanceStatus: i.status,
      currentAction: i.status === 'RUNNING' || i.status === 'TERMINATED' ? 'NONE' : 'CREATING', targetStatus: 'RUNNING',
    }));
    const missing = Number(mig.targetSize) - members.length;
    for (let k = 0; k < missing; k++) {
      out.push({
        name: `${String(mig.baseInstanceName)}-pending${k}`, currentAction: 'CREATING', targetStatus: 'RUNNING',
        ...(mig._failed ? { lastAttempt: { errors: { errors: [{ code: 'ZONE_RESOURCE_POOL_EXHAUSTED', message: String(mig._failed) }] } } } : {}),
      });
    }
    return out;
  }

  // --- internals -------------------------------------------------------------------------------------

  private migRecord(project: string, zone: string, name: string): Json {
    const m = this.migs.get(`${BASE}/projects/${project}/zones/${zone}/instanceGroupManagers/${name}`);
    if (!m) throw notFound(`projects/${project}/zones/${zone}/instanceGroupManagers/${name}`);
    return m;
  }

  private migView(m: Json): Json {
    const members = (m._members as string[]).map((l) => this.cs.instances.get(l)).filter((i): i is InstanceJson => i !== undefined);
    const running = members.filter((i) => i.status === 'RUNNING').length;
    const creating = Number(m.targetSize) - running;
    const view: Json = Object.fromEntries(Object.entries(m).filter(([k]) => !k.startsWith('_')));
    view.currentActions = { creating: Math.max(0, creating), none: running, deleting: 0 };
    view.status = { isStable: creating === 0 && !m._busy };
    return view;
  }

  /** Brings the MIG's members to its target size: all at once (a slice is atomic), or the failure recorded. */
  /**
   * After a restart: a MIG the previous emulator left short of its target size (it stopped mid-create or
   * mid-resize) goes on towards it, as Compute Engine's group manager would.
   */
  resumeAll(): void {
    for (const mig of this.migs.values()) {
      mig._busy = false;
      const m = /projects\/([^/]+)\/zones\/([^/]+)\//.exec(String(mig.selfLink));
      const members = (mig._members as string[]).filter((l) => this.cs.instances.has(l));
      mig._members = members;
      if (m && members.length !== Number(mig.targetSize)) this.cs.later(() => this.reconcile(m[1], m[2], mig));
    }
  }

  private async reconcile(project: string, zone: string, mig: Json): Promise<void> {
    const members = mig._members as string[];
    const target = Number(mig.targetSize);
    mig._busy = true;
    try {
      while (members.length > target) {
        const link = members.pop() as string;
        const inst = this.cs.instances.get(link);
        if (!inst) continue;
        await this.cs.takeDown(inst, 'delete');
        this.cs.instances.delete(link);
        this.cs.workers.delete(link);
        this.cs.env.release(link);
      }
      if (members.length >= target) return;
      const acceleratorType = String(mig._acceleratorType);
      if (this.cs.env.capacityExhausted(zone, acceleratorType)) {
        mig._failed = `The zone 'projects/${project}/zones/${zone}' does not have enough resources available to fulfill the request. Resource type: ${acceleratorType}.`;
        return;
      }
      const props = (this.templates.get(String(mig.instanceTemplate))?.properties ?? {}) as Json;
      const mt = tpuMachineType(props.machineType);
      const made: InstanceJson[] = [];
      try {
        for (let k = members.length; k < target; k++) {
          const name = `${String(mig.baseInstanceName)}-${crypto.randomBytes(2).toString('hex')}`;
          const inst = this.cs.makeInstance(project, zone, name, mt.name, { ...props, name });
          // Compute Engine marks a MIG's instances with the MIG that made them.
          inst.metadata.items.push({ key: 'created-by', value: `projects/${project}/zones/${zone}/instanceGroupManagers/${String(mig.name)}` });
          made.push(inst);
        }
        members.push(...made.map((i) => i.selfLink));
        await this.cs.bringUp(members.map((l) => this.cs.instances.get(l)).filter((i): i is InstanceJson => !!i), acceleratorType, made);
      } catch (e) {
        // A slice is atomic: what this attempt made goes again (its addresses too, or a resize past the
        // emulator's 254 addresses would leave none for anything else), and the failure is the MIG's.
        for (const inst of made) await this.cs.discard(inst);
        mig._members = members.filter((l) => !made.some((i) => i.selfLink === l));
        mig._failed = (e as Error).message;
      }
    } finally {
      mig._busy = false;
      this.cs.env.save();
    }
  }

}
