import * as fs from 'node:fs';
import * as path from 'node:path';
import { collectionOf } from './addons';
import { ControlPlane } from './control-plane';
import type { K8sBinaries } from './k8s-binaries';
import { K8S_VERSIONS } from './k8s-binaries';
import { KubeError } from './kube-client';
import { Kubelets } from './kubelet';
import type { NodePoolSlice } from './tpu-shapes';
import { tpuWebhookConfiguration, TpuWebhookServer } from './tpu-webhook';
import { xpkKueueObjects } from './xpk-kueue';

/**
 * A running emulated cluster: its control plane, GKE's TPU webhook, and the nodes of its node pools with their
 * kubelet stand-ins. The GKE model (gke-state.ts) says what should exist; this makes it so.
 */

export interface PoolNodes {
  name: string;
  /** None on a CPU node pool. */
  slice: NodePoolSlice | undefined;
  machineType: string;
  spot: boolean;
  zone: string;
  /** The pool's `config.labels`, which GKE puts on its nodes. */
  labels: Record<string, string>;
  nodes: { name: string; address: string }[];
}

export interface ClusterRuntimeOptions {
  /** The cluster's folder: PKI, etcd data, logs, node sandboxes. */
  dir: string;
  project: string;
  ownerToken: string;
  ownerUser: string;
  binaries: K8sBinaries;
  /** The cluster's own loopback address (its control plane's listeners bind it). */
  host: string;
  apiserverPort?: number;
  /** The environment a container on the node at `address` starts from (as a VM worker's login: PATH with the venv, VM services). */
  baseEnv(address: string): Record<string, string>;
  /** A node's VM is up at `address` / gone: its VM services (metadata server, Cloud Storage) answer there only meanwhile. */
  nodeUp?(node: string, zone: string, address: string): Promise<void>;
  nodeDown?(node: string, zone: string): Promise<void>;
  log?: (msg: string) => void;
  onFailure?: (why: string) => void;
}

export class ClusterRuntime {
  readonly controlPlane: ControlPlane;
  private webhook: TpuWebhookServer | undefined;
  private kubeletsValue: Kubelets | undefined;
  private readonly pools = new Map<string, PoolNodes>();
  private readonly log: (msg: string) => void;
  private webhookPort = 0;

  constructor(private readonly opts: ClusterRuntimeOptions) {
    this.log = opts.log ?? (() => undefined);
    this.controlPlane = new ControlPlane({
      dir: opts.dir,
      ownerToken: opts.ownerToken,
      ownerUser: opts.ownerUser,
      binaries: opts.binaries,
      host: opts.host,
      apiserverPort: opts.apiserverPort,
      log: this.log,
      onFailure: (c, how) => opts.onFailure?.(`${c} exited (${how})`),
      extraObjects: (caBundle) => (this.webhookPort ? [tpuWebhookConfiguration(opts.host, this.webhookPort, caBundle)] : []),
    });
  }

  /** host:port of the API server, as GKE's `endpoint` (there: an IP, the port being 443). */
  get endpoint(): string {
    return `${this.opts.host}:${this.controlPlane.apiserverPort}`;
  }

  caPem(): string {
    return this.controlPlane.caPem();
  }

  get kubelets(): Kubelets {
    if (!this.kubeletsValue) throw new Error('cluster not started');
    return this.kubeletsValue;
  }

  async start(pools: PoolNodes[]): Promise<void> {
    const cp = this.controlPlane;
    fs.mkdirSync(this.opts.dir, { recursive: true, mode: 0o700 });
    const webhookCert = await cp.issueServing('webhooks', [this.opts.host]);
    this.webhook = new TpuWebhookServer(webhookCert);
    this.webhookPort = await this.webhook.listen(this.opts.host);
    await cp.start();
    this.kubeletsValue = new Kubelets({
      client: cp.admin,
      caPem: cp.caPem(),
      servingCert: (name, ips) => cp.issueServing(name, ips),
      apiserverClientName: cp.kubeletClientCommonName(),
      launcher: cp.launcher,
      baseEnv: (address) => this.opts.baseEnv(address),
      nodeUp: this.opts.nodeUp,
      nodeDown: this.opts.nodeDown,
      kubeletVersion: K8S_VERSIONS.kubernetes,
      project: this.opts.project,
      log: this.log,
    });
    // Nodes the cluster's etcd remembers but the model no longer has (a pool deleted while it was down) go.
    const wanted = new Set(pools.flatMap((p) => p.nodes.map((n) => n.name)));
    const known = await cp.admin.list<{ metadata: { name: string } }>('/api/v1/nodes');
    for (const n of known.items.filter((x) => !wanted.has(x.metadata.name))) await cp.admin.delete(`/api/v1/nodes/${n.metadata.name}`).catch(() => undefined);
    for (const p of pools) await this.addPool(p, false);
    await this.applyKueue();
    this.kubelets.start();
  }

  async addPool(pool: PoolNodes, reconcileKueue = true): Promise<void> {
    this.pools.set(pool.name, pool);
    for (const n of pool.nodes) {
      await this.kubelets.addNode({ name: n.name, address: n.address, pool: pool.name, zone: pool.zone, slice: pool.slice, machineType: pool.machineType, spot: pool.spot, labels: pool.labels, sandboxDir: path.join(this.opts.dir, 'nodes', n.name) });
    }
    if (reconcileKueue) await this.applyKueue();
  }

  async removePool(name: string): Promise<void> {
    const pool = this.pools.get(name);
    if (!pool) return;
    for (const n of pool.nodes) await this.kubelets.removeNode(n.name);
    this.pools.delete(name);
    for (const n of pool.nodes) fs.rmSync(path.join(this.opts.dir, 'nodes', n.name), { recursive: true, force: true });
    await this.applyKueue();
  }

  /** Every VM of the pool reclaimed at once (a spot preemption), and back after `downMs`. */
  async preemptPool(name: string, downMs: number): Promise<void> {
    const pool = this.pools.get(name);
    if (!pool) return;
    await Promise.all(pool.nodes.map((n) => this.kubelets.preempt(n.name)));
    setTimeout(() => {
      void Promise.all(pool.nodes.map((n) => this.kubelets.recover(n.name))).catch((e: Error) => this.log(`node pool ${name} did not come back: ${e.message}`));
    }, downMs).unref();
  }

  /** Resident memory of the control plane's processes. */
  memory(): { name: string; pid: number; rssBytes: number }[] {
    return this.controlPlane.memory();
  }

  async stop(): Promise<void> {
    await this.kubeletsValue?.stop().catch((e: Error) => this.log(`stopping the kubelets: ${e.message}`));
    await this.webhook?.close();
    await this.controlPlane.stop();
  }

  /** xpk's Kueue objects for the current TPU pools; flavors of an earlier set of pools are removed. */
  private async applyKueue(): Promise<void> {
    const admin = this.controlPlane.admin;
    const objects = xpkKueueObjects([...this.pools.values()].flatMap((p) => (p.slice ? Array(p.slice.nodes === 1 ? p.nodes.length : 1).fill(p.slice) : [])));
    for (const o of objects) await admin.apply(collectionOf(o), o);
    const keep = new Set(objects.filter((o) => o.kind === 'ResourceFlavor').map((o) => o.metadata.name));
    const flavors = await admin.list<{ metadata: { name: string } }>('/apis/kueue.x-k8s.io/v1beta2/resourceflavors');
    for (const f of flavors.items.filter((x) => /^\d+x/.test(x.metadata.name) && !keep.has(x.metadata.name))) {
      await admin.delete(`/apis/kueue.x-k8s.io/v1beta2/resourceflavors/${f.metadata.name}`).catch((e: unknown) => {
        if (!(e instanceof KubeError && e.code === 404)) throw e;
      });
    }
  }
}
