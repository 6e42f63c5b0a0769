import * as fs from 'node:fs';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { serveLog } from './container-log';
import { informer, KubeError, type KubeClient, type KubeObject } from './kube-client';
import { PodRunner, type Pod, type PodHost } from './pod-runner';
import { devicePluginEnv, TPU_LABELS, TPU_RESOURCE, tpuNodeLabels, type NodePoolSlice } from './tpu-shapes';

/**
 * What GKE's machines give a cluster: one Node per TPU VM host of each node pool, and on each a kubelet
 * stand-in. The stand-in runs the pods the real scheduler binds to its node (pod-runner.ts), and serves the
 * kubelet's /containerLogs over TLS at the node's own address, where the API server goes for `kubectl logs`
 * (only the API server's client certificate is accepted).
 */

export interface EmulatedNode {
  name: string;
  address: string;
  pool: string;
  zone: string;
  /** The TPU slice the node belongs to; none on a CPU node pool (e2-standard-8 …). */
  slice: NodePoolSlice | undefined;
  /** The machine type (a CPU node's capacity is read from it). */
  machineType: string;
  spot: boolean;
  sandboxDir: string;
  labels?: Record<string, string>;
}

export interface KubeletsOptions {
  client: KubeClient;
  caPem: string;
  /** A serving certificate of the cluster CA for these addresses. */
  servingCert(name: string, ips: string[]): Promise<{ cert: string; key: string }>;
  /** The common name of the API server's kubelet client certificate. */
  apiserverClientName: string;
  launcher: string;
  /** The environment a container on the node at `address` starts from (as a VM worker's login: PATH with the venv, VM services). */
  baseEnv(address: string): Record<string, string>;
  /** A node's VM is up at `address` / gone: its VM services (metadata server, Cloud Storage) answer there only meanwhile. */
  nodeUp?(node: string, zone: string, address: string): Promise<void>;
  nodeDown?(node: string, zone: string): Promise<void>;
  kubeletVersion: string;
  project: string;
  log?: (msg: string) => void;
}

interface NodeRuntime {
  node: EmulatedNode;
  server: https.Server;
  port: number;
  ready: boolean;
}

const LEASE_RENEW_MS = 10_000;

/** What a node shutdown does to its pods (GKE's graceful node shutdown; a spot VM's preemption). */
export const NODE_SHUTDOWN = { reason: 'Terminated', message: 'Pod was terminated in response to imminent node shutdown.' };

export class Kubelets {
  private readonly nodes = new Map<string, NodeRuntime>();
  private readonly pods = new Map<string, { runner: PodRunner; nodeName: string; pod: Pod }>();
  /** hostname.subdomain.namespace → address, for the pods' /etc/hosts. */
  private readonly dns = new Map<string, { host: string; subdomain: string; ns: string; ip: string }>();
  private readonly abort = new AbortController();
  private readonly log: (msg: string) => void;
  private hostsTimer: NodeJS.Timeout | undefined;
  private leaseTimer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: KubeletsOptions) {
    this.log = opts.log ?? (() => undefined);
  }

  start(): void {
    this.leaseTimer = setInterval(() => void this.renewLeases(), LEASE_RENEW_MS);
    void informer(this.opts.client, '/api/v1/pods', {}, (e) => this.onPod(e.type, e.object as unknown as Pod), this.abort.signal, (e) => this.log(`kubelet pod watch: ${e.message}`));
  }

  nodeNames(): string[] {
    return [...this.nodes.keys()];
  }

  async addNode(node: EmulatedNode): Promise<void> {
    const cert = await this.opts.servingCert(`kubelet-${node.name}`, [node.address]);
    const server = https.createServer(
      { cert: fs.readFileSync(cert.cert), key: fs.readFileSync(cert.key), ca: this.opts.caPem, requestCert: true, rejectUnauthorized: true },
      (req, res) => void this.serve(req, res),
    );
    const port = await new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, node.address, () => resolve((server.address() as AddressInfo).port));
    });
    fs.mkdirSync(node.sandboxDir, { recursive: true, mode: 0o700 });
    await this.opts.nodeUp?.(node.name, node.zone, node.address);
    this.nodes.set(node.name, { node, server, port, ready: true });
    await this.opts.client.apply('/api/v1/nodes', this.nodeObject(node));
    await this.writeNodeStatus(node.name);
    await this.renewLease(node.name);
  }

  /** The kubelet's heartbeat: its node's Lease in kube-node-lease, renewed every 10 s (the node lifecycle controller reads it). */
  private async renewLeases(): Promise<void> {
    await Promise.all([...this.nodes.keys()].map((n) => this.renewLease(n).catch((e: Error) => this.log(`lease of ${n}: ${e.message}`))));
  }

  private async renewLease(name: string): Promise<void> {
    const now = new Date().toISOString().replace('Z', '000Z');
    const lease = {
      apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, namespace: 'kube-node-lease' },
      spec: { holderIdentity: name, leaseDurationSeconds: 40, renewTime: now },
    };
    await this.opts.client.patch(`/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${name}`, lease, 'merge').catch(async (e: unknown) => {
      if (!(e instanceof KubeError && e.code === 404)) throw e;
      await this.opts.client.create('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', lease);
    });
  }

  /** Stops the node's pods as a shutdown would, closes its kubelet, and deletes the Node. */
  async removeNode(name: string): Promise<void> {
    const rt = this.nodes.get(name);
    if (!rt) return;
    await this.shutDownPods(name, 5);
    this.nodes.delete(name);
    await closeServer(rt.server);
    await this.opts.nodeDown?.(name, rt.node.zone);
    for (const p of [`/api/v1/nodes/${name}`, `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${name}`]) {
      await this.opts.client.delete(p).catch((e: unknown) => {
        if (!(e instanceof KubeError && e.code === 404)) throw e;
      });
    }
  }

  /** The node's VM went away (spot preemption): its pods end as in a node shutdown, the node is NotReady. */
  async preempt(name: string): Promise<void> {
    const rt = this.nodes.get(name);
    if (!rt) return;
    rt.ready = false;
    await this.writeNodeStatus(name);
    await this.shutDownPods(name, 0);
  }

  /** The VM is back: the node is Ready again. */
  async recover(name: string): Promise<void> {
    const rt = this.nodes.get(name);
    if (!rt) return;
    rt.ready = true;
    await this.writeNodeStatus(name);
  }

  /** Ends every pod (as a node shutdown: the emulator is stopping) and closes every kubelet. */
  async stop(): Promise<void> {
    this.abort.abort();
    if (this.hostsTimer) clearTimeout(this.hostsTimer);
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    await Promise.all([...this.nodes.keys()].map((n) => this.shutDownPods(n, 5).catch(() => undefined)));
    await Promise.all([...this.nodes.values()].map((rt) => closeServer(rt.server)));
    this.nodes.clear();
  }

  private async shutDownPods(nodeName: string, graceSeconds: number): Promise<void> {
    const entries = [...this.pods.values()].filter((e) => e.nodeName === nodeName);
    await Promise.all(entries.map((e) => e.runner.terminate(graceSeconds, NODE_SHUTDOWN)));
  }

  private onPod(type: string, pod: Pod): void {
    const uid = pod.metadata.uid;
    const nodeName = pod.spec.nodeName;
    const rt = nodeName ? this.nodes.get(nodeName) : undefined;
    this.trackDns(type, pod, rt?.node.address);
    const entry = this.pods.get(uid);
    if (type === 'DELETED') {
      if (entry) void entry.runner.terminate(0, undefined).then(() => this.pods.delete(uid));
      return;
    }
    if (!rt) return;
    if (entry) {
      entry.pod = pod;
      entry.runner.update(pod);
      if (pod.metadata.deletionTimestamp) void entry.runner.terminate(pod.metadata.deletionGracePeriodSeconds ?? 30, undefined).then(() => this.forget(pod));
      return;
    }
    const phase = pod.status?.phase;
    if (pod.metadata.deletionTimestamp) {
      void this.forget(pod);
      return;
    }
    if (phase === 'Succeeded' || phase === 'Failed') return;
    const started = (pod.status as { containerStatuses?: unknown[] } | undefined)?.containerStatuses?.length;
    if (started) {
      // A pod that ran here before the emulator stopped: its processes went with the node.
      void this.writeTerminal(pod);
      return;
    }
    if (!rt.ready) return;
    const runner = new PodRunner(pod, this.podHost(rt));
    this.pods.set(uid, { runner, nodeName: rt.node.name, pod });
    void runner.start().catch((e: Error) => this.log(`pod ${pod.metadata.namespace}/${pod.metadata.name}: ${e.message}`));
  }

  /** Deletes the pod object once its containers are gone (what the kubelet does at the end of a graceful delete). */
  private async forget(pod: Pod): Promise<void> {
    await this.opts.client
      .delete(`/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}`, { gracePeriodSeconds: 0, preconditions: { uid: pod.metadata.uid } })
      .catch((e: unknown) => {
        if (!(e instanceof KubeError && (e.code === 404 || e.code === 409))) this.log(`deleting pod ${pod.metadata.name}: ${(e as Error).message}`);
      });
    this.pods.delete(pod.metadata.uid);
  }

  private async writeTerminal(pod: Pod): Promise<void> {
    const now = new Date().toISOString();
    const statuses = ((pod.status as { containerStatuses?: { name: string; state?: { running?: { startedAt: string } } }[] }).containerStatuses ?? []).map((c) => ({
      ...c,
      ready: false,
      started: false,
      state: { terminated: { exitCode: 137, reason: 'Error', startedAt: c.state?.running?.startedAt ?? now, finishedAt: now } },
    }));
    await this.opts.client
      .patch(`/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}/status`, {
        status: {
          phase: 'Failed', ...NODE_SHUTDOWN, containerStatuses: statuses,
          conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'TerminationByKubelet', message: NODE_SHUTDOWN.message, lastTransitionTime: now }],
        },
      }, 'strategic')
      .catch((e: Error) => this.log(`status of pod ${pod.metadata.name}: ${e.message}`));
  }

  private podHost(rt: NodeRuntime): PodHost {
    const { node } = rt;
    const client = this.opts.client;
    const get = async (kind: 'Secret' | 'ConfigMap', ns: string, name: string) => {
      try {
        return await client.get<{ data?: Record<string, string>; binaryData?: Record<string, string> }>(`/api/v1/namespaces/${ns}/${kind === 'Secret' ? 'secrets' : 'configmaps'}/${name}`);
      } catch (e) {
        if (e instanceof KubeError && e.code === 404) return undefined;
        throw e;
      }
    };
    return {
      nodeName: node.name,
      address: node.address,
      sandboxDir: node.sandboxDir,
      launcher: this.opts.launcher,
      baseEnv: () => this.opts.baseEnv(node.address),
      tpuEnv: node.slice ? devicePluginEnv(node.slice) : {},
      log: this.log,
      sources: (ns, sa) => ({
        data: async (kind, name) => {
          const o = await get(kind, ns, name);
          if (!o) return undefined;
          const out: Record<string, Buffer> = {};
          for (const [k, v] of Object.entries(o.data ?? {})) out[k] = kind === 'Secret' ? Buffer.from(v, 'base64') : Buffer.from(v);
          for (const [k, v] of Object.entries(o.binaryData ?? {})) out[k] = Buffer.from(v, 'base64');
          return out;
        },
        env: async (kind, name) => {
          const o = await get(kind, ns, name);
          if (!o) return undefined;
          return Object.fromEntries(Object.entries(o.data ?? {}).map(([k, v]) => [k, kind === 'Secret' ? Buffer.from(v, 'base64').toString('utf8') : v]));
        },
        token: async (audience, expirationSeconds) => {
          const tr = await client.create<{ status: { token: string } }>(`/api/v1/namespaces/${ns}/serviceaccounts/${sa}/token`, {
            apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { audiences: audience ? [audience] : [], expirationSeconds: expirationSeconds ?? 3607 },
          });
          return tr.status.token;
        },
      }),
      writeStatus: async (pod, status) => {
        await client.patch(`/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}/status`, { metadata: { uid: pod.metadata.uid }, status }, 'merge');
      },
      hostsFile: (pod, podDir) => {
        const file = path.join(podDir, 'hosts');
        fs.writeFileSync(file, this.hostsFor(pod, node.address));
        return file;
      },
    };
  }

  /** The kubelet's /etc/hosts for a pod, plus every pod of its subdomain (the headless Service's DNS names). */
  private hostsFor(pod: Pod, address: string): string {
    const lines = ['# Kubernetes-managed hosts file (TPU Workbench emulator).', '127.0.0.1\tlocalhost', '::1\tlocalhost ip6-localhost ip6-loopback'];
    const ns = pod.metadata.namespace;
    const own = pod.spec.hostname ?? pod.metadata.name;
    const sub = pod.spec.subdomain;
    lines.push(sub ? `${address}\t${own}.${sub}.${ns}.svc.cluster.local\t${own}` : `${address}\t${own}`);
    if (sub) {
      for (const d of this.dns.values()) {
        if (d.ns === ns && d.subdomain === sub && d.host !== own) lines.push(`${d.ip}\t${d.host}.${sub}.${ns}.svc.cluster.local\t${d.host}.${sub}.${ns}.svc\t${d.host}.${sub}.${ns}\t${d.host}.${sub}`);
      }
      lines.push(`${address}\t${own}.${sub}.${ns}.svc\t${own}.${sub}.${ns}\t${own}.${sub}`);
    }
    return `${lines.join('\n')}\n`;
  }

  private trackDns(type: string, pod: Pod, ip: string | undefined): void {
    const key = pod.metadata.uid;
    const had = this.dns.get(key);
    const host = pod.spec.hostname;
    const sub = pod.spec.subdomain;
    const gone = type === 'DELETED' || !ip || !host || !sub || pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
    if (gone) {
      if (had) this.dns.delete(key);
    } else if (!had || had.ip !== ip) {
      this.dns.set(key, { host, subdomain: sub, ns: pod.metadata.namespace, ip });
    } else return;
    if (had || !gone) this.scheduleHostsRewrite();
  }

  /** Rewrites the hosts file of every pod in place (their containers have it bind-mounted as /etc/hosts). */
  private scheduleHostsRewrite(): void {
    if (this.hostsTimer) return;
    this.hostsTimer = setTimeout(() => {
      this.hostsTimer = undefined;
      for (const { runner, nodeName, pod } of this.pods.values()) {
        const rt = this.nodes.get(nodeName);
        const file = path.join(runner.dir, 'hosts');
        if (rt && fs.existsSync(file)) fs.writeFileSync(file, this.hostsFor(pod, rt.node.address));
      }
    }, 200);
  }

  private async serve(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse): Promise<void> {
    const peer = (req.socket as TLSSocket).getPeerCertificate();
    if (peer?.subject?.CN !== this.opts.apiserverClientName) {
      res.writeHead(403, { 'content-type': 'text/plain' }).end('Forbidden: only the API server may call this kubelet\n');
      return;
    }
    const url = new URL(req.url ?? '/', 'https://kubelet');
    const m = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(url.pathname);
    if (url.pathname === '/healthz') return void res.writeHead(200).end('ok');
    if (!m || req.method !== 'GET') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`The emulator's kubelet serves only pod logs (/containerLogs), not ${url.pathname}\n`);
      return;
    }
    const [ns, podName, container] = m.slice(1).map(decodeURIComponent);
    const entry = [...this.pods.values()].find((e) => e.pod.metadata.namespace === ns && e.pod.metadata.name === podName);
    const q = url.searchParams;
    const file = entry?.runner.logFile(container, q.get('previous') === 'true');
    if (!entry || !file) {
      const what = !entry ? `pod "${podName}" is not on this node` : `container "${container}" in pod "${podName}" has no ${q.get('previous') === 'true' ? 'previous ' : ''}log`;
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`${what}\n`);
      return;
    }
    const num = (k: string) => (q.get(k) !== null ? Number(q.get(k)) : undefined);
    res.writeHead(200, { 'content-type': 'text/plain' });
    const ac = new AbortController();
    res.on('close', () => ac.abort());
    await serveLog(file, {
      follow: q.get('follow') === 'true', timestamps: q.get('timestamps') === 'true', tailLines: num('tailLines'), sinceSeconds: num('sinceSeconds'),
      sinceTime: q.get('sinceTime') ?? undefined, limitBytes: num('limitBytes'),
    }, res, () => entry.runner.isRunning(container), ac.signal);
    res.end();
  }

  private nodeObject(n: EmulatedNode): KubeObject {
    const region = n.zone.replace(/-[a-z]$/, '');
    return {
      apiVersion: 'v1', kind: 'Node',
      metadata: {
        name: n.name,
        labels: {
          'kubernetes.io/hostname': n.name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64',
          'topology.kubernetes.io/zone': n.zone, 'topology.kubernetes.io/region': region,
          [TPU_LABELS.nodePool]: n.pool, 'node.kubernetes.io/instance-type': n.machineType, ...(n.slice ? tpuNodeLabels(n.slice) : {}),
          ...(n.spot ? { [TPU_LABELS.spot]: 'true' } : {}), ...(n.labels ?? {}),
        },
      },
      spec: {
        providerID: `gce://${this.opts.project}/${n.zone}/${n.name}`,
        // GKE taints every TPU node pool so that only pods asking for TPUs land there.
        ...(n.slice ? { taints: [{ key: TPU_RESOURCE, value: 'present', effect: 'NoSchedule' }] } : {}),
      },
    };
  }

  private async writeNodeStatus(name: string): Promise<void> {
    const rt = this.nodes.get(name);
    if (!rt) return;
    const now = new Date().toISOString();
    // Nominal CPU and memory (nothing here is scheduled by them); a CPU machine type's vCPUs from its name.
    const vcpus = rt.node.slice ? 8 : Number(/-(\d+)$/.exec(rt.node.machineType)?.[1] ?? 2);
    const capacity: Record<string, string> = { cpu: String(vcpus), memory: `${vcpus * 4}Gi`, pods: '110', 'ephemeral-storage': '100Gi' };
    if (rt.node.slice) capacity[TPU_RESOURCE] = String(rt.node.slice.chipsPerNode);
    const cond = (type: string, status: boolean, reason: string, message: string) => ({ type, status: status ? 'True' : 'False', reason, message, lastHeartbeatTime: now, lastTransitionTime: now });
    await this.opts.client.patch(`/api/v1/nodes/${name}/status`, {
      status: {
        capacity, allocatable: capacity,
        conditions: [
          cond('MemoryPressure', false, 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
          cond('DiskPressure', false, 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
          cond('PIDPressure', false, 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
          rt.ready ? cond('Ready', true, 'KubeletReady', 'kubelet is posting ready status') : cond('Ready', false, 'KubeletNotReady', 'node is shutting down'),
        ],
        addresses: [{ type: 'InternalIP', address: rt.node.address }, { type: 'Hostname', address: name }],
        daemonEndpoints: { kubeletEndpoint: { Port: rt.port } },
        nodeInfo: {
          machineID: '', systemUUID: '', bootID: '', kernelVersion: '', osImage: 'TPU Workbench emulator', containerRuntimeVersion: 'tpw-emulator://1',
          kubeletVersion: this.opts.kubeletVersion, kubeProxyVersion: '', operatingSystem: 'linux', architecture: 'amd64',
        },
      },
    }, 'merge');
  }
}

function closeServer(server: https.Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
