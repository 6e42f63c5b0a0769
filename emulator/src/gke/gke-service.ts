import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ApiError } from '../types';
import { ClusterRuntime, type PoolNodes } from './cluster-runtime';
import {
  checkName, clusterJson, clusterPath, isTpuMachine, nodeNames, nodePoolFrom, operationJson, poolJson,
  type ClusterRecord, type NodePoolRecord, type OperationRecord, type OperationType,
} from './gke-model';
import { K8S_VERSIONS, requireK8sBinaries } from './k8s-binaries';
import { nodePoolSlice } from './tpu-shapes';

/**
 * The emulator's GKE: the model of clusters, node pools and operations (saved in `<dir>/state.json`, so a
 * restarted emulator keeps its clusters), and a running cluster (cluster-runtime.ts) for each cluster that
 * exists, started on demand: nothing of Kubernetes runs until a cluster is created, or one exists at start.
 */

export interface GkeServiceOptions {
  /** `<emulator dir>/gke`: the model, and each cluster's folder. */
  dir: string;
  project: string;
  zones: readonly string[];
  /** Who the emulator's token stands for. */
  account: string;
  allocate(owner: string, count: number): string[];
  release(owner: string): void;
  /** The environment a container on the node at `address` starts from (as a VM worker's login: PATH with the venv, VM services). */
  baseEnv(address: string): Record<string, string>;
  /** A node's VM is up at `address` / gone: its VM services (metadata server, Cloud Storage) answer there only meanwhile. */
  nodeUp?(node: string, zone: string, address: string): Promise<void>;
  nodeDown?(node: string, zone: string): Promise<void>;
  log?: (msg: string) => void;
}

/** The service's options from the emulator's parts: its folder, its address table, the VM workers' environment. */
export function gkeOptions(o: {
  dir: string;
  project: string;
  zones: readonly string[];
  account: string;
  addresses: { allocateAddresses(owner: string, count: number): string[]; releaseAddresses(owner: string): void; save(): void };
  pathPrefix: string[];
  /** The emulator's VM services: a GKE node is a VM of them, as on GCE (its pods reach its metadata server). */
  vmServices: { addWorker(vmId: string, address: string): Promise<void>; removeVm(vmId: string): Promise<void>; workerEnv(address: string): Record<string, string> };
  log?: (msg: string) => void;
}): GkeServiceOptions {
  return {
    dir: path.join(o.dir, 'gke'),
    project: o.project,
    zones: o.zones,
    account: o.account,
    allocate: (owner, count) => {
      const got = o.addresses.allocateAddresses(owner, count);
      o.addresses.save();
      return got;
    },
    release: (owner) => {
      o.addresses.releaseAddresses(owner);
      o.addresses.save();
    },
    // A GKE node's pods start from what a VM worker's login has (the "installed software" and the VM services).
    baseEnv: (address) => ({ PATH: [...o.pathPrefix, process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin'].join(':'), LANG: 'C.UTF-8', ...o.vmServices.workerEnv(address) }),
    nodeUp: (node, zone, address) => o.vmServices.addWorker(gkeNodeVmId(o.project, zone, node), address),
    nodeDown: (node, zone) => o.vmServices.removeVm(gkeNodeVmId(o.project, zone, node)),
    log: o.log,
  };
}

/** A GKE node's key among the VM services' VMs (TPU VMs' are tpu/<project>/<zone>/<node>). */
const gkeNodeVmId = (project: string, zone: string, node: string) => `gke/${project}/${zone}/${node}`;

interface Saved {
  clusters: ClusterRecord[];
  operations: OperationRecord[];
}

/** GKE's versions look like 1.33.5-gke.1162000; the emulator's is its kube-apiserver's. */
export const GKE_VERSION = `${K8S_VERSIONS.kubernetes.replace(/^v/, '')}-gke.0`;
const MAX_OPERATIONS = 500;

export class GkeService {
  private readonly clusters: ClusterRecord[] = [];
  private readonly operations: OperationRecord[] = [];
  private readonly runtimes = new Map<string, ClusterRuntime>();
  private readonly starting = new Map<string, Promise<void>>();
  private token = '';
  private readonly log: (msg: string) => void;

  constructor(private readonly opts: GkeServiceOptions) {
    this.log = opts.log ?? (() => undefined);
    fs.mkdirSync(opts.dir, { recursive: true, mode: 0o700 });
    try {
      const saved = JSON.parse(fs.readFileSync(this.file, 'utf8')) as Saved;
      this.clusters.push(...saved.clusters);
      this.operations.push(...saved.operations);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`The emulator's GKE state ${this.file} is not readable (${(e as Error).message}): move it aside to start without its clusters.`);
    }
  }

  private get file(): string {
    return path.join(this.opts.dir, 'state.json');
  }

  /** Starts the control plane of every cluster that exists (in the background: they answer RECONCILING meanwhile). */
  start(token: string): void {
    this.token = token;
    for (const c of this.clusters) {
      if (c.status === 'STOPPING') {
        void this.finishDelete(c);
        continue;
      }
      c.status = 'RECONCILING';
      this.track(c, this.bringUp(c));
    }
    this.save();
  }

  async stop(): Promise<void> {
    await Promise.allSettled([...this.starting.values()]);
    await Promise.all([...this.runtimes.values()].map((r) => r.stop().catch((e: Error) => this.log(`stopping a cluster: ${e.message}`))));
    this.runtimes.clear();
    this.save();
  }

  /** The running cluster (tests reach its Kubernetes side through it). */
  runtime(project: string, location: string, name: string): ClusterRuntime | undefined {
    return this.runtimes.get(clusterPath({ project, location, name }));
  }

  /** Waits for a cluster's control plane (after a create, or a restart of the emulator). */
  async ready(project: string, location: string, name: string): Promise<void> {
    await this.starting.get(clusterPath({ project, location, name }));
  }

  listClusters(project: string, location: string): Record<string, unknown> {
    this.checkLocation(project, location, true);
    const list = this.clusters.filter((c) => location === '-' || c.location === location);
    return { clusters: list.map((c) => this.clusterJson(c)), missingZones: [] };
  }

  getCluster(project: string, location: string, name: string): Record<string, unknown> {
    return this.clusterJson(this.find(project, location, name));
  }

  createCluster(project: string, location: string, body: Record<string, unknown>): Record<string, unknown> {
    this.checkLocation(project, location, false);
    const spec = (body.cluster ?? {}) as Record<string, unknown>;
    const name = checkName('cluster', spec.name);
    if (this.clusters.some((c) => c.project === project && c.location === location && c.name === name)) {
      throw new ApiError('ALREADY_EXISTS', `Already exists: projects/${project}/locations/${location}/clusters/${name}.`);
    }
    const zone = this.zoneFor(location);
    const poolBodies = Array.isArray(spec.nodePools) ? (spec.nodePools as Record<string, unknown>[]) : [];
    if (poolBodies.length === 0 && Number(spec.initialNodeCount ?? 0) > 0) {
      poolBodies.push({ name: 'default-pool', initialNodeCount: spec.initialNodeCount, config: spec.nodeConfig ?? {} });
    }
    const pools = poolBodies.map((b) => nodePoolFrom(b, zone).pool);
    const c: ClusterRecord = {
      name, project, location, id: crypto.randomBytes(16).toString('hex'), address: this.opts.allocate(this.controlPlaneOwner({ location, name }), 1)[0], description: typeof spec.description === 'string' ? spec.description : undefined,
      resourceLabels: (spec.resourceLabels ?? {}) as Record<string, string>, status: 'PROVISIONING', createTime: new Date().toISOString(), nodePools: pools,
    };
    for (const p of pools) this.assignNodes(c, p);
    this.clusters.push(c);
    const op = this.newOperation(c, 'CREATE_CLUSTER', clusterPath(c));
    this.track(c, this.runOperation(op, () => this.bringUp(c)));
    return operationJson(op);
  }

  deleteCluster(project: string, location: string, name: string): Record<string, unknown> {
    const c = this.find(project, location, name);
    if (c.status === 'STOPPING') throw new ApiError('FAILED_PRECONDITION', `Cluster ${name} is already being deleted.`);
    c.status = 'STOPPING';
    const op = this.newOperation(c, 'DELETE_CLUSTER', clusterPath(c));
    void this.runOperation(op, () => this.finishDelete(c));
    return operationJson(op);
  }

  listNodePools(project: string, location: string, cluster: string): Record<string, unknown> {
    const c = this.find(project, location, cluster);
    return { nodePools: c.nodePools.map((p) => poolJson(c, p, GKE_VERSION)) };
  }

  getNodePool(project: string, location: string, cluster: string, pool: string): Record<string, unknown> {
    const c = this.find(project, location, cluster);
    return poolJson(c, this.findPool(c, pool), GKE_VERSION);
  }

  createNodePool(project: string, location: string, cluster: string, body: Record<string, unknown>): Record<string, unknown> {
    const c = this.find(project, location, cluster);
    this.checkRunning(c);
    const { pool } = nodePoolFrom((body.nodePool ?? {}) as Record<string, unknown>, this.zoneFor(location));
    if (c.nodePools.some((p) => p.name === pool.name)) throw new ApiError('ALREADY_EXISTS', `Already exists: ${clusterPath(c)}/nodePools/${pool.name}.`);
    this.assignNodes(c, pool);
    c.nodePools.push(pool);
    const op = this.newOperation(c, 'CREATE_NODE_POOL', `${clusterPath(c)}/nodePools/${pool.name}`);
    void this.runOperation(op, async () => {
      const rt = this.runtimes.get(clusterPath(c));
      if (!rt) throw new Error(`cluster ${c.name} is not running`);
      await rt.addPool(this.poolNodes(pool));
      pool.status = 'RUNNING';
    }, () => {
      pool.status = 'ERROR';
    });
    return operationJson(op);
  }

  deleteNodePool(project: string, location: string, cluster: string, name: string): Record<string, unknown> {
    const c = this.find(project, location, cluster);
    const pool = this.findPool(c, name);
    this.checkRunning(c);
    pool.status = 'STOPPING';
    const op = this.newOperation(c, 'DELETE_NODE_POOL', `${clusterPath(c)}/nodePools/${name}`);
    void this.runOperation(op, async () => {
      await this.runtimes.get(clusterPath(c))?.removePool(name);
      c.nodePools = c.nodePools.filter((p) => p !== pool);
      this.opts.release(this.owner(c, pool));
    });
    return operationJson(op);
  }

  /** Test-only: every node of the pool preempted at once (a spot reclaim), back after `downMs`. */
  async preemptNodePool(project: string, location: string, cluster: string, name: string, downMs: number): Promise<Record<string, unknown>> {
    const c = this.find(project, location, cluster);
    this.findPool(c, name);
    const rt = this.runtimes.get(clusterPath(c));
    if (!rt) throw new ApiError('FAILED_PRECONDITION', `Cluster ${cluster} is not running.`);
    await rt.preemptPool(name, downMs);
    return {};
  }

  getOperation(project: string, location: string, name: string): Record<string, unknown> {
    this.checkLocation(project, location, false);
    const op = this.operations.find((o) => o.project === project && o.name === name && (o.location === location || location === '-'));
    if (!op) throw new ApiError('NOT_FOUND', `Not found: projects/${project}/locations/${location}/operations/${name}.`);
    return operationJson(op);
  }

  listOperations(project: string, location: string): Record<string, unknown> {
    this.checkLocation(project, location, true);
    return { operations: this.operations.filter((o) => o.project === project && (location === '-' || o.location === location)).map(operationJson), missingZones: [] };
  }

  private clusterJson(c: ClusterRecord): Record<string, unknown> {
    const rt = this.runtimes.get(clusterPath(c));
    let caPem: string | undefined;
    try {
      caPem = rt?.caPem();
    } catch {
      caPem = undefined;
    }
    return clusterJson(c, { endpoint: rt && c.apiserverPort ? `${c.address}:${c.apiserverPort}` : undefined, caPem, version: GKE_VERSION });
  }

  private async bringUp(c: ClusterRecord): Promise<void> {
    const key = clusterPath(c);
    try {
      const binaries = requireK8sBinaries();
      const rt = new ClusterRuntime({
        dir: this.clusterDir(c), project: c.project, ownerToken: this.token, ownerUser: this.opts.account, binaries, host: c.address, apiserverPort: c.apiserverPort,
        baseEnv: (address) => this.opts.baseEnv(address), nodeUp: this.opts.nodeUp, nodeDown: this.opts.nodeDown, log: (m) => this.log(`[gke ${c.name}] ${m}`),
        onFailure: (why) => {
          c.status = 'ERROR';
          c.statusMessage = `The cluster's control plane failed: ${why}.`;
          this.save();
        },
      });
      this.runtimes.set(key, rt);
      await rt.start(c.nodePools.filter((p) => p.status !== 'STOPPING').map((p) => this.poolNodes(p)));
      c.apiserverPort = Number(rt.endpoint.split(':')[1]);
      for (const p of c.nodePools) if (p.status === 'PROVISIONING' || p.status === 'RECONCILING') p.status = 'RUNNING';
      c.status = 'RUNNING';
      c.statusMessage = undefined;
      this.log(`cluster ${c.name} running: API server https://${rt.endpoint}`);
    } catch (e) {
      c.status = 'ERROR';
      c.statusMessage = (e as Error).message;
      const rt = this.runtimes.get(key);
      this.runtimes.delete(key);
      await rt?.stop().catch(() => undefined);
      throw e;
    } finally {
      this.save();
    }
  }

  private async finishDelete(c: ClusterRecord): Promise<void> {
    const key = clusterPath(c);
    await this.starting.get(key)?.catch(() => undefined);
    await this.runtimes.get(key)?.stop();
    this.runtimes.delete(key);
    for (const p of c.nodePools) this.opts.release(this.owner(c, p));
    this.opts.release(this.controlPlaneOwner(c));
    fs.rmSync(this.clusterDir(c), { recursive: true, force: true });
    const i = this.clusters.indexOf(c);
    if (i >= 0) this.clusters.splice(i, 1);
  }

  private track(c: ClusterRecord, p: Promise<void>): void {
    const key = clusterPath(c);
    const guarded = p.catch((e: Error) => this.log(`cluster ${c.name}: ${e.message}`));
    this.starting.set(key, guarded);
    void guarded.finally(() => {
      if (this.starting.get(key) === guarded) this.starting.delete(key);
    });
  }

  private newOperation(c: ClusterRecord, type: OperationType, target: string): OperationRecord {
    const op: OperationRecord = {
      name: `operation-${Date.now()}-${crypto.randomBytes(4).toString('hex')}`, project: c.project, location: c.location, operationType: type,
      status: 'RUNNING', targetLink: `https://container.googleapis.com/v1/${target}`, startTime: new Date().toISOString(),
    };
    this.operations.push(op);
    if (this.operations.length > MAX_OPERATIONS) this.operations.splice(0, this.operations.length - MAX_OPERATIONS);
    this.save();
    return op;
  }

  private async runOperation(op: OperationRecord, work: () => Promise<void>, onError?: () => void): Promise<void> {
    try {
      await work();
    } catch (e) {
      op.error = { code: 13, message: (e as Error).message };
      op.statusMessage = (e as Error).message;
      onError?.();
      throw e;
    } finally {
      op.status = 'DONE';
      op.endTime = new Date().toISOString();
      this.save();
    }
  }

  private assignNodes(c: ClusterRecord, p: NodePoolRecord): void {
    const names = nodeNames(c.name, p.name, p.initialNodeCount);
    const addresses = this.opts.allocate(this.owner(c, p), names.length);
    p.nodes = names.map((name, i) => ({ name, address: addresses[i] }));
  }

  private poolNodes(p: NodePoolRecord): PoolNodes {
    return { name: p.name, slice: isTpuMachine(p.machineType) ? nodePoolSlice(p.machineType, p.topology) : undefined, machineType: p.machineType, spot: p.spot, zone: p.zone, labels: p.labels, nodes: p.nodes };
  }

  private controlPlaneOwner(c: { location: string; name: string }): string {
    return `gke/${c.location}/${c.name}`;
  }

  private owner(c: ClusterRecord, p: NodePoolRecord): string {
    return `gke/${c.location}/${c.name}/${p.name}`;
  }

  private clusterDir(c: ClusterRecord): string {
    return path.join(this.opts.dir, 'clusters', c.location, c.name);
  }

  private find(project: string, location: string, name: string): ClusterRecord {
    this.checkLocation(project, location, false);
    const c = this.clusters.find((x) => x.project === project && x.location === location && x.name === name);
    if (!c) throw new ApiError('NOT_FOUND', `Not found: projects/${project}/locations/${location}/clusters/${name}.`);
    return c;
  }

  private findPool(c: ClusterRecord, name: string): NodePoolRecord {
    const p = c.nodePools.find((x) => x.name === name);
    if (!p) throw new ApiError('NOT_FOUND', `Not found: ${clusterPath(c)}/nodePools/${name}.`);
    return p;
  }

  private checkRunning(c: ClusterRecord): void {
    if (c.status !== 'RUNNING') throw new ApiError('FAILED_PRECONDITION', `Cluster ${c.name} is ${c.status}: a node pool can be changed only while it is RUNNING.`);
  }

  private checkLocation(project: string, location: string, allowAll: boolean): void {
    if (project !== this.opts.project) throw new ApiError('PERMISSION_DENIED', `Permission denied on resource project ${project}: the local emulator serves only project "${this.opts.project}".`);
    if (allowAll && location === '-') return;
    const regions = new Set(this.opts.zones.map((z) => z.replace(/-[a-z]$/, '')));
    if (!this.opts.zones.includes(location) && !regions.has(location)) {
      throw new ApiError('NOT_FOUND', `Location "${location}" is not a zone or region of the local emulator (zones: ${this.opts.zones.join(', ')}).`);
    }
  }

  private zoneFor(location: string): string {
    return this.opts.zones.includes(location) ? location : (this.opts.zones.find((z) => z.startsWith(`${location}-`)) ?? location);
  }

  private save(): void {
    const saved: Saved = { clusters: this.clusters, operations: this.operations };
    const tmp = `${this.file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(saved, null, 2), { mode: 0o600 });
    fs.renameSync(tmp, this.file);
  }
}
