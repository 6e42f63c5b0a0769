import { RESOURCE_ID_PATTERN, type QueuedResourceStateName } from './names';
import type { EmulatorState } from './state';
import { ApiError, EMPTY_TYPE_URL, GOOGLE_STATUS, QUEUED_RESOURCE_TYPE_URL, type CreateNodeInput, type OperationJson } from './types';

/**
 * Queued resources (google.cloud.tpu.v2.QueuedResource) with the state machine Cloud TPU runs them through:
 *
 *   ACCEPTED → WAITING_FOR_RESOURCES (while the zone has no capacity for the type) → PROVISIONING (the node is
 *   being created) → ACTIVE (the node is READY)
 *   ACCEPTED / WAITING_FOR_RESOURCES → FAILED once queueingPolicy's valid-until passes, or when the node
 *   cannot be created
 *   ACTIVE → SUSPENDING → SUSPENDED when its (spot) node is preempted or deleted
 *   any → DELETING → gone (with force, its node is deleted first)
 *   FAILED / SUSPENDED → ACCEPTED on ResetQueuedResource (a suspended one's node is deleted first)
 *
 * Multislice: a node spec with `multisliceParams {nodeCount, nodeIdPrefix}` (instead of a node id) makes
 * nodeCount nodes named `<prefix>-0` … `<prefix>-<n-1>` (the prefix defaults to the queued resource's id), each
 * marked `multisliceNode` with the queued resource's name. Every state above then speaks for all of them:
 * ACTIVE once every slice is READY, SUSPENDING as soon as one is preempted or deleted.
 *
 * Transitions happen on a tick (a timer, and before every read, so a client never sees a stale state):
 * each step waits at least `stepMs` in its state, so a client polling can observe every state it passes.
 */

export interface QueuedResourceJson {
  name: string;
  createTime: string;
  tpu: { nodeSpec: NodeSpecJson[] };
  spot?: Record<string, never>;
  guaranteed?: Record<string, unknown>;
  queueingPolicy?: { validUntilTime?: string; validUntilDuration?: string };
  state: {
    state: QueuedResourceStateName;
    stateInitiator?: 'USER' | 'SERVICE';
    failedData?: { error: { code: number; message: string } };
  };
}

export interface NodeSpecJson {
  parent: string;
  /** Absent for a multislice spec. */
  nodeId?: string;
  multisliceParams?: { nodeCount: number; nodeIdPrefix: string };
  node: CreateNodeInput;
}

/** What the state file keeps per queued resource: the resource and the bookkeeping of its state machine. */
interface Entry {
  qr: QueuedResourceJson;
  /** When the current state began (ms since epoch). */
  since: number;
  /** queueingPolicy's deadline (ms since epoch), if any. */
  validUntil?: number;
  /** The pending DeleteQueuedResource operation. */
  deleteOp?: string;
}

export interface QueuedResourcesOptions {
  /** Least time spent in each state before the next (default 300 ms). */
  stepMs?: number;
  /** Whether `zone` has capacity for `acceleratorType` now (false: wait); the fault injector answers. */
  capacityExhausted: (zone: string, acceleratorType: string) => boolean;
  log?: (msg: string) => void;
}

const QR_ID_PATTERN = RESOURCE_ID_PATTERN;

export class QueuedResources {
  private readonly entries = new Map<string, Entry>();
  private readonly stepMs: number;
  private readonly log: (msg: string) => void;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly state: EmulatorState,
    private readonly opts: QueuedResourcesOptions,
  ) {
    this.stepMs = opts.stepMs ?? 300;
    this.log = opts.log ?? (() => undefined);
    for (const raw of state.savedQueuedResources) {
      const e = raw as Entry;
      if (e && e.qr && typeof e.qr.name === 'string') this.entries.set(e.qr.name, e);
    }
    state.setQueuedResourceSource(() => [...this.entries.values()]);
    this.timer = setInterval(() => this.tick(), Math.max(10, Math.floor(this.stepMs / 2)));
    // The emulator's servers keep the process alive; this timer alone must not.
    this.timer.unref();
  }

  list(parent: string): QueuedResourceJson[] {
    this.tick();
    return [...this.entries.values()]
      .filter((e) => e.qr.name.startsWith(`${parent}/queuedResources/`))
      .map((e) => e.qr)
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  get(name: string): QueuedResourceJson {
    this.tick();
    return this.entry(name).qr;
  }

  /** CreateQueuedResource: validates the request, accepts it and returns an operation that is already done. */
  create(parent: string, id: string | undefined, body: Record<string, unknown>, nodeInput: (raw: unknown) => CreateNodeInput): OperationJson {
    if (!id) throw new ApiError('INVALID_ARGUMENT', 'Request is missing required parameter "queuedResourceId".');
    if (!QR_ID_PATTERN.test(id)) {
      throw new ApiError('INVALID_ARGUMENT', `Invalid queued resource id "${id}": use 1-63 lowercase letters, digits and hyphens, starting with a letter.`);
    }
    const name = `${parent}/queuedResources/${id}`;
    if (this.entries.has(name)) throw new ApiError('ALREADY_EXISTS', `Resource '${name}' already exists`);
    const tpu = (body.tpu ?? {}) as { nodeSpec?: unknown };
    const specs = Array.isArray(tpu.nodeSpec) ? (tpu.nodeSpec as Record<string, unknown>[]) : [];
    if (specs.length !== 1) throw new ApiError('INVALID_ARGUMENT', `A queued resource needs exactly one tpu.nodeSpec (got ${specs.length}); for several slices use its multisliceParams.nodeCount.`);
    const spec = specs[0];
    if (spec.parent !== parent) throw new ApiError('INVALID_ARGUMENT', `tpu.nodeSpec[0].parent must be "${parent}" (got "${String(spec.parent)}").`);
    const multi = multisliceOf(spec.multisliceParams, id);
    const nodeId = typeof spec.nodeId === 'string' && spec.nodeId !== '' ? spec.nodeId : undefined;
    if (multi && nodeId) throw new ApiError('INVALID_ARGUMENT', 'tpu.nodeSpec[0] sets both nodeId and multisliceParams: a multislice request names its nodes with multisliceParams.nodeIdPrefix.');
    const node = nodeInput(spec.node ?? {});
    const spot = body.spot !== undefined && body.spot !== null;
    const guaranteed = body.guaranteed !== undefined && body.guaranteed !== null;
    if (spot && guaranteed) throw new ApiError('INVALID_ARGUMENT', 'A queued resource is either spot or guaranteed, not both.');
    if (spot) node.schedulingConfig = { ...node.schedulingConfig, spot: true };
    // The nodes' own checks (id, type, runtime, no clash) happen now, so a bad request fails at once.
    const ids = multi ? Array.from({ length: multi.nodeCount }, (_, i) => `${multi.nodeIdPrefix}-${i}`) : [nodeId];
    const checked = ids.map((n) => this.state.validateCreate(parent, n, node).nodeId);
    const taken = new Set([...this.entries.values()].filter((e) => e.qr.state.state !== 'FAILED').flatMap((e) => nodeIdsOf(e.qr.tpu.nodeSpec[0])));
    const clash = checked.find((n) => taken.has(n));
    if (clash) throw new ApiError('ALREADY_EXISTS', `Another queued resource already creates node "${clash}".`);
    const specJson: NodeSpecJson = multi ? { parent, multisliceParams: multi, node } : { parent, nodeId: checked[0], node };
    const now = Date.now();
    const policy = parsePolicy(body.queueingPolicy, now);
    const qr: QueuedResourceJson = {
      name,
      createTime: new Date(now).toISOString(),
      tpu: { nodeSpec: [specJson] },
      ...(spot ? { spot: {} } : { guaranteed: {} }),
      ...(policy.json ? { queueingPolicy: policy.json } : {}),
      state: { state: 'ACCEPTED', stateInitiator: 'USER' },
    };
    this.entries.set(name, { qr, since: now, ...(policy.deadline !== undefined ? { validUntil: policy.deadline } : {}) });
    const op = this.state.startOperation(parent, name, 'create');
    this.state.finishOperation(op, { response: { '@type': QUEUED_RESOURCE_TYPE_URL, ...qr } });
    this.log(`queued resource ${name} accepted (${multi ? `${multi.nodeCount} × ` : ''}${node.acceleratorType}, ${spot ? 'spot' : 'guaranteed'})`);
    return op;
  }

  /** DeleteQueuedResource: refused while it has a node unless `force`; the operation ends when it is gone. */
  delete(name: string, force: boolean): OperationJson {
    this.tick();
    const e = this.entry(name);
    if (e.qr.state.state === 'DELETING') throw new ApiError('FAILED_PRECONDITION', `Queued resource '${name}' is already being deleted.`);
    const nodes = this.nodesOf(e);
    if (nodes.length > 0 && !force) {
      throw new ApiError(
        'FAILED_PRECONDITION',
        `Queued resource '${name}' in state ${e.qr.state.state} has node '${nodes[0].name}': delete the node first or delete with force=true.`,
      );
    }
    for (const node of nodes) if (node.state !== 'DELETING') this.state.beginDelete(node.name);
    const parent = name.slice(0, name.indexOf('/queuedResources/'));
    const op = this.state.startOperation(parent, name, 'delete');
    e.deleteOp = op.name;
    this.move(e, 'DELETING', 'USER');
    this.tick();
    return op;
  }

  /**
   * ResetQueuedResource: a FAILED or SUSPENDED resource is queued again (its preempted node is deleted and
   * created anew); a relative valid-until window starts over. Its operation is done at once, as create's is.
   */
  reset(name: string): OperationJson {
    this.tick();
    const e = this.entry(name);
    const s = e.qr.state.state;
    if (s !== 'FAILED' && s !== 'SUSPENDED') {
      throw new ApiError('FAILED_PRECONDITION', `Queued resource '${name}' is ${s}; only a FAILED or SUSPENDED queued resource can be reset.`);
    }
    for (const node of this.nodesOf(e)) if (node.state !== 'DELETING') this.state.beginDelete(node.name);
    const now = Date.now();
    const policy = parsePolicy(e.qr.queueingPolicy, now);
    if (e.qr.queueingPolicy?.validUntilDuration !== undefined) e.validUntil = policy.deadline;
    this.move(e, 'ACCEPTED', 'USER');
    const parent = name.slice(0, name.indexOf('/queuedResources/'));
    const op = this.state.startOperation(parent, name, 'reset');
    this.state.finishOperation(op, { response: { '@type': QUEUED_RESOURCE_TYPE_URL, ...e.qr } });
    this.log(`queued resource ${name} reset`);
    return op;
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Advances every queued resource as far as its state, the clock and the nodes allow. */
  tick(): void {
    const now = Date.now();
    let changed = false;
    for (const e of [...this.entries.values()]) changed = this.step(e, now) || changed;
    if (changed) this.state.save();
  }

  private step(e: Entry, now: number): boolean {
    const s = e.qr.state.state;
    const waited = now - e.since >= this.stepMs;
    const spec = e.qr.tpu.nodeSpec[0];
    const zone = spec.parent.slice(spec.parent.lastIndexOf('/') + 1);
    const ids = nodeIdsOf(spec);
    const nodes = this.nodesOf(e);
    switch (s) {
      case 'ACCEPTED':
      case 'WAITING_FOR_RESOURCES': {
        if (e.validUntil !== undefined && now >= e.validUntil) {
          return this.fail(e, GOOGLE_STATUS.DEADLINE_EXCEEDED.grpc, `The queued resource's valid-until time passed before ${spec.node.acceleratorType} capacity was available in ${zone}.`);
        }
        // After a reset, the old nodes must be gone before their successors can take their names.
        if (!waited || nodes.some((n) => n.state === 'DELETING')) return false;
        if (this.opts.capacityExhausted(zone, spec.node.acceleratorType ?? '')) {
          return s === 'ACCEPTED' ? this.move(e, 'WAITING_FOR_RESOURCES', 'SERVICE') : false;
        }
        for (const id of ids) {
          try {
            this.state.beginCreate(spec.parent, id, { ...spec.node, queuedResource: e.qr.name, ...(spec.multisliceParams ? { multisliceNode: true } : {}) });
          } catch (err) {
            // All or nothing: the slices made so far go again.
            for (const n of this.nodesOf(e)) if (n.state !== 'DELETING') this.state.beginDelete(n.name);
            return this.fail(e, GOOGLE_STATUS[(err as ApiError).status ?? 'INTERNAL']?.grpc ?? 13, `Could not create node "${id}": ${(err as Error).message}`);
          }
        }
        return this.move(e, 'PROVISIONING', 'SERVICE');
      }
      case 'PROVISIONING':
        if (nodes.length < ids.length) return this.fail(e, GOOGLE_STATUS.INTERNAL.grpc, `Node "${ids.find((id) => !nodes.some((n) => n.name.endsWith(`/nodes/${id}`)))}" could not be created.`);
        return nodes.every((n) => n.state === 'READY') ? this.move(e, 'ACTIVE', 'SERVICE') : false;
      case 'ACTIVE':
        return nodes.length < ids.length || nodes.some((n) => n.state === 'PREEMPTED' || n.state === 'DELETING') ? this.move(e, 'SUSPENDING', 'SERVICE') : false;
      case 'SUSPENDING':
        return waited ? this.move(e, 'SUSPENDED', 'SERVICE') : false;
      case 'DELETING':
        if (nodes.length > 0) return false;
        this.entries.delete(e.qr.name);
        if (e.deleteOp) {
          try {
            this.state.finishOperation(this.state.getOperation(e.deleteOp), { response: { '@type': EMPTY_TYPE_URL } });
          } catch {
            // Pruned or lost in a restart: nobody is waiting for it any more.
          }
        }
        this.log(`queued resource ${e.qr.name} deleted`);
        return true;
      default:
        return false;
    }
  }

  private move(e: Entry, to: QueuedResourceStateName, by: 'USER' | 'SERVICE'): boolean {
    this.log(`queued resource ${e.qr.name}: ${e.qr.state.state} -> ${to}`);
    e.qr.state = { state: to, stateInitiator: by };
    e.since = Date.now();
    return true;
  }

  private fail(e: Entry, code: number, message: string): boolean {
    this.move(e, 'FAILED', 'SERVICE');
    e.qr.state.failedData = { error: { code, message } };
    return true;
  }

  private entry(name: string): Entry {
    const e = this.entries.get(name);
    if (!e) throw new ApiError('NOT_FOUND', `Resource '${name}' was not found`);
    return e;
  }

  /** The nodes of this queued resource that exist now, in slice order. */
  private nodesOf(e: Entry): ReturnType<EmulatorState['allNodes']> {
    const spec = e.qr.tpu.nodeSpec[0];
    const names = nodeIdsOf(spec).map((id) => `${spec.parent}/nodes/${id}`);
    const all = this.state.allNodes();
    return names.flatMap((n) => all.filter((x) => x.name === n));
  }
}

/** The node ids a spec makes: its nodeId, or `<prefix>-<i>` for each of a multislice spec's nodes. */
function nodeIdsOf(spec: NodeSpecJson | undefined): string[] {
  if (!spec) return [];
  const m = spec.multisliceParams;
  if (m) return Array.from({ length: m.nodeCount }, (_, i) => `${m.nodeIdPrefix}-${i}`);
  return spec.nodeId ? [spec.nodeId] : [];
}

/** multisliceParams as the API takes it: nodeCount > 1 (an int64, so JSON may carry it as a string). */
function multisliceOf(raw: unknown, qrId: string): { nodeCount: number; nodeIdPrefix: string } | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'object') throw new ApiError('INVALID_ARGUMENT', 'tpu.nodeSpec[0].multisliceParams must be an object.');
  const p = raw as Record<string, unknown>;
  const count = typeof p.nodeCount === 'string' ? Number(p.nodeCount) : p.nodeCount;
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 2) {
    throw new ApiError('INVALID_ARGUMENT', `multisliceParams.nodeCount must be a whole number greater than 1 (got ${JSON.stringify(p.nodeCount)}).`);
  }
  const prefix = p.nodeIdPrefix === undefined || p.nodeIdPrefix === '' ? qrId : p.nodeIdPrefix;
  if (typeof prefix !== 'string' || !/^[A-Za-z0-9_.~+%-]+$/.test(prefix)) {
    throw new ApiError('INVALID_ARGUMENT', `multisliceParams.nodeIdPrefix "${String(prefix)}" must match ^[A-Za-z0-9_.~+%-]+$.`);
  }
  return { nodeCount: count, nodeIdPrefix: prefix };
}

/** queueingPolicy → its JSON as stored, and the deadline it sets (validUntilTime or createTime + duration). */
function parsePolicy(raw: unknown, now: number): { json?: QueuedResourceJson['queueingPolicy']; deadline?: number } {
  if (!raw || typeof raw !== 'object') return {};
  const p = raw as Record<string, unknown>;
  if (typeof p.validUntilTime === 'string') {
    const t = Date.parse(p.validUntilTime);
    if (Number.isNaN(t)) throw new ApiError('INVALID_ARGUMENT', `Invalid queueingPolicy.validUntilTime "${p.validUntilTime}".`);
    return { json: { validUntilTime: new Date(t).toISOString() }, deadline: t };
  }
  if (typeof p.validUntilDuration === 'string') {
    const m = /^(\d+(?:\.\d+)?)s$/.exec(p.validUntilDuration);
    if (!m) throw new ApiError('INVALID_ARGUMENT', `Invalid queueingPolicy.validUntilDuration "${p.validUntilDuration}" (expected e.g. "3600s").`);
    return { json: { validUntilDuration: p.validUntilDuration }, deadline: now + Number(m[1]) * 1000 };
  }
  const other = Object.keys(p).filter((k) => k !== 'validUntilTime' && k !== 'validUntilDuration');
  if (other.length > 0) throw new ApiError('INVALID_ARGUMENT', `queueingPolicy.${other[0]} is not supported by the local emulator.`);
  return {};
}
