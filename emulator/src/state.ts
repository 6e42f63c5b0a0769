import * as crypto from 'node:crypto';
import { checkLabels, checkMetadataMap } from './labels-metadata';
import { nodeNameParts, type NodeState } from './names';
import { readStateFile, STATE_VERSION, writeStateFile, type StateFile } from './state-file';
import type { AcceleratorInfo } from './catalog';
import { withNodeConfigs } from './node-config';
import { checkNodeSpec, newNode } from './node-spec';
import {
  ApiError,
  EMPTY_TYPE_URL,
  GOOGLE_STATUS,
  NODE_TYPE_URL,
  OPERATION_METADATA_TYPE_URL,
  type CreateNodeInput,
  type NodeJson,
  type OperationJson,
  type OperationVerb,
} from './types';

// Re-exported: callers imported these from here before types.ts existed.
export * from './types';
export { previousStateFile, stateFile } from './state-file';

/**
 * The emulator's whole state — nodes in their REST JSON shape, long-running operations and the loopback
 * addresses given to workers — kept in one JSON file (`<dir>/state.json`) so that a restarted emulator keeps
 * its VMs. This module also holds the API semantics (validation, with a new node's own checks in node-spec.ts;
 * state transitions; operation completion), so the HTTP layer in rest.ts only routes and encodes.
 */

export type NodeDownReason = 'stop' | 'delete' | 'preempt' | 'failed';

/**
 * What the emulator does to the world around a transition: bring SSH workers up before a node is reported
 * READY (so a client that sees READY can connect at once) and down before it is reported STOPPED or gone.
 */
export interface StateHooks {
  nodeUp?(node: NodeJson): Promise<void>;
  /** The node's metadata changed (UpdateNode): e.g. new `ssh-keys` for its workers. */
  metadataChanged?(node: NodeJson): void;
  nodeDown?(node: NodeJson, reason: NodeDownReason): Promise<void>;
}

export interface EmulatorStateOptions {
  dir: string;
  /** Time an operation takes; one number for all verbs, or per verb. */
  opDelayMs?: number | Partial<Record<OperationVerb, number>>;
  /** First three octets of worker addresses, e.g. "127.0.1" → 127.0.1.1 … 127.0.1.254. */
  addressPrefix?: string;
  hooks?: StateHooks;
  log?: (msg: string) => void;
}


const DEFAULT_DELAYS: Record<OperationVerb, number> = { create: 1500, start: 1000, stop: 800, delete: 800 };
/** Done operations kept for GetOperation; older ones are dropped so the file stays small. */
const MAX_DONE_OPERATIONS = 200;
const SETTLED: Partial<Record<NodeState, NodeState>> = { CREATING: 'READY', STARTING: 'READY', RESTARTING: 'READY', STOPPING: 'STOPPED' };

export class EmulatorState {
  private readonly nodes = new Map<string, NodeJson>();
  private readonly operations = new Map<string, OperationJson>();
  private readonly addresses = new Map<string, string>();
  private sshPortValue: number | undefined;
  private loadedQueued: unknown[] = [];
  private queuedSource: (() => unknown[]) | undefined;
  private loadedCompute: unknown = undefined;
  private computeSource: (() => unknown) | undefined;
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** Per-node chain so that transitions of one node never interleave (e.g. delete during create's nodeUp). */
  private readonly nodeLocks = new Map<string, Promise<unknown>>();
  private hooks: StateHooks;
  private readonly delays: Record<OperationVerb, number>;
  private readonly prefix: string;
  private readonly log: (msg: string) => void;
  private closed = false;

  private constructor(private readonly opts: EmulatorStateOptions) {
    this.hooks = opts.hooks ?? {};
    const d = opts.opDelayMs;
    this.delays = typeof d === 'number' ? { create: d, start: d, stop: d, delete: d } : { ...DEFAULT_DELAYS, ...d };
    this.prefix = opts.addressPrefix ?? '127.0.1';
    this.log = opts.log ?? (() => undefined);
  }

  /**
   * Reads `<dir>/state.json` (or starts empty) and settles what the previous emulator left mid-transition:
   * its timers died with it, so the transitions finish now and their operations complete. A file that is
   * unreadable or inconsistent throws (state-file.ts names it and the fix) before anything is written.
   */
  static load(opts: EmulatorStateOptions): EmulatorState {
    const data = readStateFile(opts.dir);
    const s = new EmulatorState(opts);
    if (data !== undefined) {
      s.sshPortValue = data.sshPort;
      for (const n of data.nodes) s.nodes.set(n.name, withNodeConfigs(n));
      s.loadedQueued = data.queuedResources ?? [];
      s.loadedCompute = data.compute;
      for (const o of data.operations) s.operations.set(o.name, o);
      for (const [addr, owner] of Object.entries(data.addresses)) s.addresses.set(addr, owner);
      s.settle();
    }
    s.save();
    return s;
  }

  setHooks(hooks: StateHooks): void {
    this.hooks = hooks;
  }

  get sshPort(): number | undefined {
    return this.sshPortValue;
  }

  set sshPort(port: number | undefined) {
    this.sshPortValue = port;
    this.save();
  }

  /** Nodes in one zone (`projects/p/locations/z`), sorted by name as the API lists them. */
  listNodes(parent: string): NodeJson[] {
    return [...this.nodes.values()].filter((n) => n.name.startsWith(`${parent}/nodes/`)).sort((a, b) => a.name.localeCompare(b.name));
  }

  allNodes(): NodeJson[] {
    return [...this.nodes.values()];
  }

  getNode(name: string): NodeJson {
    const n = this.nodes.get(name);
    if (!n) throw new ApiError('NOT_FOUND', `Resource '${name}' was not found`);
    return n;
  }

  getOperation(name: string): OperationJson {
    const o = this.operations.get(name);
    if (!o) throw new ApiError('NOT_FOUND', `Operation '${name}' was not found`);
    return o;
  }

  /** Operations in `parent` (projects/p/locations/z), oldest first. */
  operationsIn(parent: string): OperationJson[] {
    return [...this.operations.values()].filter((o) => o.name.startsWith(`${parent}/operations/`));
  }

  /** DeleteOperation: the client no longer wants the result; the work it tracks goes on. */
  forgetOperation(name: string): void {
    if (this.operations.delete(this.getOperation(name).name)) this.save();
  }

  /** CancelOperation, best effort: recorded in the metadata; the emulator's short transitions run to the end. */
  requestCancel(name: string): void {
    const op = this.getOperation(name);
    if (op.done) return;
    op.metadata.cancelRequested = true;
    this.save();
  }

  /** Worker addresses of a node, in worker order. */
  addressesOf(nodeName: string): string[] {
    return this.getNode(nodeName).networkEndpoints.map((e) => e.ipAddress);
  }

  /**
   * Checks a node spec as CreateNode does (id, type, runtime, scheduling, no clash); queued resources check
   * theirs when they are created, not only when their node is.
   */
  validateCreate(parent: string, nodeIdArg: string | undefined, input: CreateNodeInput): { name: string; nodeId: string; accel: AcceleratorInfo } {
    const { nodeId, accel } = checkNodeSpec(nodeIdArg, input);
    const name = `${parent}/nodes/${nodeId}`;
    // A node id is unique within its zone only (names.ts tpuNodeKey keeps two zones' workers apart).
    if (this.nodes.has(name)) throw new ApiError('ALREADY_EXISTS', `Resource '${name}' already exists`);
    return { name, nodeId, accel };
  }

  beginCreate(parent: string, nodeIdArg: string | undefined, input: CreateNodeInput): OperationJson {
    const { name, accel } = this.validateCreate(parent, nodeIdArg, input);
    const addresses = this.allocate(name, accel.workers);
    const node = newNode(name, parent, accel, input, addresses);
    this.nodes.set(name, node);
    // A create that cannot be recorded (a full disk) leaves nothing behind: no CREATING node, no addresses.
    return this.beginOperation('create', node, () => {
      this.nodes.delete(name);
      this.releaseAddresses(name);
    });
  }

  beginStop(name: string): OperationJson {
    const node = this.getNode(name);
    this.requireState(node, ['READY'], 'stop');
    node.state = 'STOPPING';
    return this.beginOperation('stop', node, () => void (node.state = 'READY'));
  }

  beginStart(name: string): OperationJson {
    const node = this.getNode(name);
    this.requireState(node, ['STOPPED'], 'start');
    node.state = 'STARTING';
    return this.beginOperation('start', node, () => void (node.state = 'STOPPED'));
  }

  beginDelete(name: string): OperationJson {
    const node = this.getNode(name);
    if (node.state === 'DELETING') throw new ApiError('FAILED_PRECONDITION', `Node '${name}' is already being deleted.`);
    // A delete supersedes whatever the node was doing; that operation ends with ABORTED.
    for (const op of this.operations.values()) {
      if (!op.done && op.metadata.target === name) {
        const t = this.timers.get(op.name);
        if (t) clearTimeout(t);
        this.timers.delete(op.name);
        this.finish(op, { error: { code: GOOGLE_STATUS.ABORTED.grpc, message: `Node '${name}' was deleted before the ${op.metadata.verb} operation finished.` } });
      }
    }
    node.state = 'DELETING';
    delete node.health;
    return this.beginOperation('delete', node);
  }

  /** UpdateNode (PATCH, updateMask among metadata/labels/description): applied at once, its operation done. */
  updateNode(name: string, patch: Partial<NodeJson>, updateMask: string[]): OperationJson {
    const node = this.getNode(name);
    const allowed = new Set(['metadata', 'labels', 'description']);
    const bad = updateMask.filter((f) => !allowed.has(f));
    if (updateMask.length === 0 || bad.length > 0) {
      throw new ApiError('INVALID_ARGUMENT', `updateMask must name fields among metadata, labels, description (got ${updateMask.join(',') || 'none'}).`);
    }
    if (updateMask.includes('metadata')) node.metadata = checkMetadataMap(patch.metadata, 'metadata');
    if (updateMask.includes('labels')) node.labels = checkLabels(patch.labels, 'labels');
    if (updateMask.includes('description')) node.description = patch.description;
    if (updateMask.includes('metadata')) this.hooks.metadataChanged?.(node);
    const op = this.newOperation('update', node);
    this.finish(op, { response: { '@type': NODE_TYPE_URL, ...node } });
    this.log(`update ${node.name}: ${updateMask.join(',')}`);
    return op;
  }

  /** Test hook: the node is preempted now (its workers vanish), as a spot VM is; on-demand VMs are not. */
  async preempt(name: string): Promise<NodeJson> {
    const target = this.getNode(name);
    if (!target.schedulingConfig.spot && !target.schedulingConfig.preemptible) {
      throw new ApiError('FAILED_PRECONDITION', `Node '${name}' is not spot or preemptible; only those are preempted.`);
    }
    this.requireState(target, ['READY'], 'preempt');
    return this.withNodeLock(name, async () => {
      const node = this.getNode(name);
      this.requireState(node, ['READY'], 'preempt');
      await this.hooks.nodeDown?.(node, 'preempt');
      node.state = 'PREEMPTED';
      delete node.health;
      this.save();
      this.log(`node ${name} preempted`);
      return node;
    });
  }

  /** Stops the timers; operations still running are settled by the next load, as after a crash. */
  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    await Promise.allSettled([...this.nodeLocks.values()]);
    this.save();
  }

  save(): void {
    const data: StateFile = {
      version: STATE_VERSION,
      ...(this.sshPortValue !== undefined ? { sshPort: this.sshPortValue } : {}),
      nodes: [...this.nodes.values()],
      queuedResources: this.queuedSource ? this.queuedSource() : this.loadedQueued,
      ...((this.computeSource ? this.computeSource() : this.loadedCompute) !== undefined
        ? { compute: this.computeSource ? this.computeSource() : this.loadedCompute }
        : {}),
      operations: [...this.operations.values()],
      addresses: Object.fromEntries(this.addresses),
    };
    try {
      writeStateFile(this.opts.dir, data);
    } catch (e) {
      // The file on disk is the last complete generation (writes are atomic); the caller answers with this.
      const code = (e as NodeJS.ErrnoException).code;
      throw new ApiError('UNAVAILABLE', `The local emulator cannot write its state in ${this.opts.dir} (${code === 'ENOSPC' ? 'no space left on the device' : (e as Error).message}); nothing was changed. Free some space and retry.`);
    }
  }

  private requireState(node: NodeJson, allowed: NodeState[], verb: string): void {
    if (!allowed.includes(node.state)) {
      throw new ApiError(
        'FAILED_PRECONDITION',
        `Cannot ${verb} node '${node.name}' in state ${node.state}; it must be ${allowed.join(' or ')}.`,
      );
    }
  }

  /** Queued resources as the last save left them (queued.ts reads them once at start). */
  get savedQueuedResources(): unknown[] {
    return this.loadedQueued;
  }

  /** Compute Engine resources as the last save left them (compute-state.ts reads them once at start). */
  get savedCompute(): unknown {
    return this.loadedCompute;
  }

  /** From now on save() writes what `source` returns as the file's Compute Engine resources. */
  setComputeSource(source: () => unknown): void {
    this.computeSource = source;
  }

  /** Loopback addresses for `count` workers of `owner` (a Compute Engine instance), from the pool nodes use. */
  allocateAddresses(owner: string, count: number): string[] {
    return this.allocate(owner, count);
  }

  /** Gives back the addresses of `owner`. */
  releaseAddresses(owner: string): void {
    for (const [addr, o] of [...this.addresses]) if (o.startsWith(`${owner}#`)) this.addresses.delete(addr);
  }

  /** From now on save() writes what `source` returns as the file's queued resources. */
  setQueuedResourceSource(source: () => unknown[]): void {
    this.queuedSource = source;
  }

  /** An operation on something other than a node (a queued resource), in `parent` (projects/p/locations/z). */
  startOperation(parent: string, target: string, verb: 'create' | 'delete' | 'reset'): OperationJson {
    const op = this.operationIn(parent, target, verb);
    this.save();
    return op;
  }

  finishOperation(op: OperationJson, result: Pick<OperationJson, 'error' | 'response'>): void {
    if (!op.done) this.finish(op, result);
  }

  private newOperation(verb: OperationVerb | 'update', node: NodeJson): OperationJson {
    const { project, zone } = nodeNameParts(node.name);
    return this.operationIn(`projects/${project}/locations/${zone}`, node.name, verb);
  }

  private operationIn(parent: string, target: string, verb: OperationJson['metadata']['verb']): OperationJson {
    const op: OperationJson = {
      name: `${parent}/operations/operation-${Date.now()}-${crypto.randomBytes(6).toString('hex')}`,
      metadata: { '@type': OPERATION_METADATA_TYPE_URL, createTime: new Date().toISOString(), target, verb, cancelRequested: false, apiVersion: 'v2' },
      done: false,
    };
    this.operations.set(op.name, op);
    return op;
  }

  /** Records the operation (and the change the caller made) before it is answered; `undo` takes that change back when it cannot be. */
  private beginOperation(verb: OperationVerb, node: NodeJson, undo?: () => void): OperationJson {
    const op = this.newOperation(verb, node);
    try {
      this.save();
    } catch (e) {
      this.operations.delete(op.name);
      undo?.();
      throw e;
    }
    this.log(`${verb} ${node.name}: ${op.name}`);
    const timer = setTimeout(() => {
      this.timers.delete(op.name);
      // Nothing a transition throws (a full disk while it records its end) may reach the event loop.
      this.withNodeLock(node.name, () => this.complete(op)).catch((e: Error) => this.log(`${verb} ${node.name}: ${e.message}`));
    }, this.delays[verb]);
    this.timers.set(op.name, timer);
    return op;
  }

  private withNodeLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.nodeLocks.get(name) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.nodeLocks.set(name, tail);
    void tail.then(() => {
      if (this.nodeLocks.get(name) === tail) this.nodeLocks.delete(name);
    });
    return next;
  }

  /** Ends an operation's transition, running the hooks first; a failing hook fails the operation. */
  private async complete(op: OperationJson): Promise<void> {
    if (op.done) return;
    if (op.metadata.verb === 'update' || op.metadata.verb === 'reset') return;
    const verb = op.metadata.verb;
    const node = this.nodes.get(op.metadata.target);
    const expected: Record<OperationVerb, NodeState> = { create: 'CREATING', start: 'STARTING', stop: 'STOPPING', delete: 'DELETING' };
    if (!node || node.state !== expected[verb]) {
      this.finish(op, { error: { code: GOOGLE_STATUS.ABORTED.grpc, message: `Node '${op.metadata.target}' changed state before the ${verb} operation finished.` } });
      return;
    }
    try {
      if (verb === 'create' || verb === 'start') {
        await this.hooks.nodeUp?.(node);
        // A delete may have superseded this operation while the workers came up (it then takes them down);
        // when shutting down, the next load settles the node.
        if (op.done || node.state !== expected[verb] || this.closed) return;
        node.state = 'READY';
        node.health = 'HEALTHY';
        this.finish(op, { response: { '@type': NODE_TYPE_URL, ...node } });
      } else if (verb === 'stop') {
        await this.hooks.nodeDown?.(node, 'stop');
        if (op.done || node.state !== expected[verb]) return;
        node.state = 'STOPPED';
        delete node.health;
        this.finish(op, { response: { '@type': NODE_TYPE_URL, ...node } });
      } else {
        await this.hooks.nodeDown?.(node, 'delete');
        this.removeNode(node.name);
        this.finish(op, { response: { '@type': EMPTY_TYPE_URL } });
      }
    } catch (e) {
      this.log(`${verb} ${node.name} failed: ${(e as Error).message}`);
      // A node that cannot come up is left stopped (start) or removed (create), as a failed create leaves nothing.
      await this.hooks.nodeDown?.(node, 'failed').catch(() => undefined);
      if (verb === 'create') this.removeNode(node.name);
      else if (verb === 'start') node.state = 'STOPPED';
      this.finish(op, { error: { code: GOOGLE_STATUS.INTERNAL.grpc, message: `Failed to ${verb} node '${node.name}': ${(e as Error).message}` } });
    }
  }

  private finish(op: OperationJson, result: Pick<OperationJson, 'error' | 'response'>): void {
    op.done = true;
    op.metadata.endTime = new Date().toISOString();
    if (result.error) op.error = result.error;
    if (result.response) op.response = result.response;
    this.pruneOperations();
    this.save();
    this.log(`${op.metadata.verb} ${op.metadata.target}: ${result.error ? `failed: ${result.error.message}` : 'done'}`);
  }

  private settle(): void {
    for (const node of [...this.nodes.values()]) {
      const to = SETTLED[node.state];
      if (to) {
        node.state = to;
        if (to === 'READY') node.health = 'HEALTHY';
        else delete node.health;
      } else if (node.state === 'DELETING') {
        this.removeNode(node.name);
      }
    }
    for (const op of this.operations.values()) {
      if (op.done) continue;
      const node = this.nodes.get(op.metadata.target);
      if (op.metadata.verb === 'delete' && !node) this.finish(op, { response: { '@type': EMPTY_TYPE_URL } });
      else if (node && op.metadata.verb !== 'delete') this.finish(op, { response: { '@type': NODE_TYPE_URL, ...node } });
      else this.finish(op, { error: { code: GOOGLE_STATUS.ABORTED.grpc, message: `The emulator restarted during the ${op.metadata.verb} of '${op.metadata.target}'.` } });
    }
  }

  private removeNode(name: string): void {
    this.nodes.delete(name);
    for (const [addr, owner] of [...this.addresses]) if (owner.startsWith(`${name}#`)) this.addresses.delete(addr);
  }

  private allocate(nodeName: string, count: number): string[] {
    const out: string[] = [];
    for (let x = 1; x <= 254 && out.length < count; x++) {
      const addr = `${this.prefix}.${x}`;
      if (!this.addresses.has(addr)) out.push(addr);
    }
    if (out.length < count) {
      throw new ApiError('RESOURCE_EXHAUSTED', `The local emulator has no free worker addresses in ${this.prefix}.0/24 for ${count} workers; delete some nodes.`);
    }
    out.forEach((addr, i) => this.addresses.set(addr, `${nodeName}#${i}`));
    return out;
  }

  private pruneOperations(): void {
    const done = [...this.operations.values()].filter((o) => o.done);
    for (const o of done.slice(0, Math.max(0, done.length - MAX_DONE_OPERATIONS))) this.operations.delete(o.name);
  }
}
