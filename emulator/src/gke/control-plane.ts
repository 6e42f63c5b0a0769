import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { collectionOf, loadAddon } from './addons';
import type { K8sBinaries } from './k8s-binaries';
import { KubeClient, type KubeObject } from './kube-client';
import { ClusterPki } from './pki';
import { launchArgv, namespacesAvailable, writeLauncher } from './pod-sandbox';
import { PortPicker, portIsFree, ProcessGroup } from './processes';

/**
 * One emulated cluster's control plane, as real as it runs here: etcd, kube-apiserver, kube-controller-manager
 * (the Job controller, garbage collector, …), kube-scheduler, and the JobSet and Kueue controllers with their
 * webhooks, all on loopback, all from scripts/k8s-binaries.sh's build. Only the owner gets in: the API server
 * takes no anonymous request and one token from outside, the emulator's (RBAC binds it to cluster-admin); etcd
 * and the webhooks take only certificates of the cluster CA. Everything lives in the cluster's 0700 folder.
 */

export interface ControlPlaneOptions {
  /** The cluster's folder (PKI, etcd data, tokens, logs). */
  dir: string;
  /** The emulator's bearer token: the one credential a client outside the emulator holds. */
  ownerToken: string;
  /** Who that token is (the emulator's account, as GKE names a Google account). */
  ownerUser: string;
  binaries: K8sBinaries;
  /** The cluster's own loopback address: every listener of its control plane binds it. */
  host: string;
  /** The API server's port to keep across restarts (a kubeconfig names it); 0 or busy: a new one. */
  apiserverPort?: number;
  /** Objects applied after the add-ons' (e.g. the emulator's own webhook configuration). */
  extraObjects?: (ca: string) => KubeObject[];
  log?: (msg: string) => void;
  /** A component died while the cluster runs. */
  onFailure?: (component: string, how: string) => void;
}

/** Users of the internal tokens (RBAC's bootstrap roles and the add-ons' own bindings know them). */
const INTERNAL_USERS = {
  admin: { user: 'system:tpw-emulator', groups: ['system:masters'] },
  controllerManager: { user: 'system:kube-controller-manager', groups: [] as string[] },
  scheduler: { user: 'system:kube-scheduler', groups: [] as string[] },
  jobset: { user: 'system:serviceaccount:jobset-system:jobset-controller-manager', groups: ['system:serviceaccounts', 'system:serviceaccounts:jobset-system'] },
  kueue: { user: 'system:serviceaccount:kueue-system:kueue-controller-manager', groups: ['system:serviceaccounts', 'system:serviceaccounts:kueue-system'] },
};
type Internal = keyof typeof INTERNAL_USERS;

const READY_TIMEOUT_MS = 240_000;
const SERVICE_CIDR = '10.96.0.0/16';
const KUBERNETES_SERVICE_IP = '10.96.0.1';
const CONTROLLERS = [
  'job-controller', 'cronjob-controller', 'garbage-collector-controller', 'namespace-controller', 'serviceaccount-controller',
  'serviceaccount-token-controller', 'ttl-after-finished-controller', 'pod-garbage-collector-controller',
  'root-ca-certificate-publisher-controller', 'replicaset-controller', 'deployment-controller',
  // Keeps Node taints in step with their Ready condition and the kubelets' leases, as on GKE: a new node is
  // unschedulable until Ready, a NotReady (preempted) one again.
  'node-lifecycle-controller',
];

export class ControlPlane {
  readonly pki: ClusterPki;
  private readonly procs: ProcessGroup;
  private readonly log: (msg: string) => void;
  private tokens: Record<Internal, string> | undefined;
  private port = 0;
  private adminClient: KubeClient | undefined;
  private launcherPath = '';

  constructor(private readonly opts: ControlPlaneOptions) {
    this.log = opts.log ?? (() => undefined);
    this.pki = new ClusterPki(opts.dir);
    this.procs = new ProcessGroup(opts.dir, this.log, (name, how) => opts.onFailure?.(name, how));
  }

  /** https://<host>:<port> */
  get server(): string {
    return `https://${this.opts.host}:${this.port}`;
  }

  get apiserverPort(): number {
    return this.port;
  }

  caPem(): string {
    return this.pki.caPem();
  }

  /** The script that gives a process its container view of the machine (pod-sandbox.ts). */
  get launcher(): string {
    return this.launcherPath;
  }

  /** A client with the emulator's internal admin identity (system:masters): for the emulator only. */
  get admin(): KubeClient {
    if (!this.adminClient) throw new Error('control plane not started');
    return this.adminClient;
  }

  /** The kubelet stand-ins' and the webhook servers' certificates come from the same CA. */
  issueServing(name: string, ips: string[]): Promise<{ cert: string; key: string }> {
    return this.pki.issue({ name, commonName: name, ips, dns: ['localhost'], usage: 'server' });
  }

  /** The API server's client certificate to kubelets (the kubelet stand-ins accept only it). */
  kubeletClientCommonName(): string {
    return 'kube-apiserver-kubelet-client';
  }

  memory(): { name: string; pid: number; rssBytes: number }[] {
    return this.procs.memory();
  }

  async start(): Promise<void> {
    const dir = this.opts.dir;
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    fs.chmodSync(dir, 0o700);
    this.procs.reapLeftovers();
    this.launcherPath = writeLauncher(dir);
    const b = this.opts.binaries;
    const pki = this.pki;
    const host = this.opts.host;
    const ports = new PortPicker(host);
    const ca = await pki.ensureCa();
    const apiCert = await pki.issue({
      name: 'apiserver', commonName: 'kube-apiserver', usage: 'server',
      ips: [...new Set([host, '127.0.0.1'])].concat(KUBERNETES_SERVICE_IP), dns: ['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local'],
    });
    const etcdCert = await pki.issue({ name: 'etcd', commonName: 'etcd', usage: 'both', ips: [host], dns: ['localhost'] });
    const etcdClient = await pki.issue({ name: 'apiserver-etcd-client', commonName: 'kube-apiserver-etcd-client', usage: 'client' });
    const kubeletClient = await pki.issue({ name: 'apiserver-kubelet-client', commonName: this.kubeletClientCommonName(), usage: 'client' });
    const webhookCert = await this.issueServing('webhooks', [host]);
    const sa = await pki.serviceAccountKey();

    // New internal tokens at each start, like the owner's: nothing from a previous run stays valid.
    const tokens = Object.fromEntries(Object.keys(INTERNAL_USERS).map((k) => [k, crypto.randomBytes(32).toString('base64url')])) as Record<Internal, string>;
    this.tokens = tokens;
    const rows = [
      `${this.opts.ownerToken},${this.opts.ownerUser},${this.opts.ownerUser},"system:authenticated"`,
      ...Object.entries(INTERNAL_USERS).map(([k, u]) => `${tokens[k as Internal]},${u.user},${u.user},"${u.groups.join(',')}"`),
    ];
    const tokenFile = path.join(dir, 'tokens.csv');
    fs.writeFileSync(tokenFile, `${rows.join('\n')}\n`, { mode: 0o600 });
    fs.chmodSync(tokenFile, 0o600);

    const etcdPort = await ports.pick();
    const peerPort = await ports.pick();
    const wanted = this.opts.apiserverPort ?? 0;
    this.port = wanted > 0 && (await portIsFree(wanted, host)) ? wanted : await ports.pick();
    const etcdData = path.join(dir, 'etcd');
    fs.mkdirSync(etcdData, { recursive: true, mode: 0o700 });
    fs.chmodSync(etcdData, 0o700);
    this.procs.start('etcd', b.etcd, [
      '--name=default', `--data-dir=${etcdData}`,
      `--listen-client-urls=https://${host}:${etcdPort}`, `--advertise-client-urls=https://${host}:${etcdPort}`,
      `--listen-peer-urls=https://${host}:${peerPort}`, `--initial-advertise-peer-urls=https://${host}:${peerPort}`,
      `--initial-cluster=default=https://${host}:${peerPort}`,
      '--client-cert-auth', `--trusted-ca-file=${ca.cert}`, `--cert-file=${etcdCert.cert}`, `--key-file=${etcdCert.key}`,
      '--peer-client-cert-auth', `--peer-trusted-ca-file=${ca.cert}`, `--peer-cert-file=${etcdCert.cert}`, `--peer-key-file=${etcdCert.key}`,
      // A laptop's emulator, not a production store: no fsync per write (a shared, loaded disk made each write
      // wait tens of milliseconds), compaction every hour.
      '--unsafe-no-fsync', '--auto-compaction-retention=1', '--log-level=warn',
    ]);
    this.procs.start('kube-apiserver', b.kubeApiserver, [
      `--etcd-servers=https://${host}:${etcdPort}`, `--etcd-cafile=${ca.cert}`, `--etcd-certfile=${etcdClient.cert}`, `--etcd-keyfile=${etcdClient.key}`,
      `--bind-address=${host}`, `--secure-port=${this.port}`, `--advertise-address=${host}`,
      // No Service routes to the API server here; the `kubernetes` endpoints would name this loopback address.
      '--endpoint-reconciler-type=none',
      `--tls-cert-file=${apiCert.cert}`, `--tls-private-key-file=${apiCert.key}`, `--client-ca-file=${ca.cert}`,
      `--token-auth-file=${tokenFile}`, '--anonymous-auth=false', '--authorization-mode=RBAC',
      `--service-account-key-file=${sa.pub}`, `--service-account-signing-key-file=${sa.key}`,
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local', `--service-cluster-ip-range=${SERVICE_CIDR}`,
      `--kubelet-client-certificate=${kubeletClient.cert}`, `--kubelet-client-key=${kubeletClient.key}`,
      `--kubelet-certificate-authority=${ca.cert}`, '--kubelet-preferred-address-types=InternalIP',
      // GKE's: a pod requesting google.com/tpu tolerates the TPU node taint without saying so.
      '--enable-admission-plugins=ExtendedResourceToleration',
      '--allow-privileged=true', '--profiling=false', '--event-ttl=1h',
    ]);
    this.adminClient = new KubeClient({ server: this.server, token: tokens.admin, caPem: this.caPem() });
    await this.waitReady('kube-apiserver', () => this.admin.request('GET', '/readyz'));

    const webhooks = { jobset: await ports.pick(), kueue: await ports.pick() };
    const caBundle = Buffer.from(this.caPem()).toString('base64');
    const jobset = loadAddon(path.join(path.dirname(b.jobset), 'manifests.yaml'), `https://${host}:${webhooks.jobset}`, caBundle);
    const kueue = loadAddon(path.join(path.dirname(b.kueue), 'manifests.yaml'), `https://${host}:${webhooks.kueue}`, caBundle);
    const owner: KubeObject = {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'tpw-emulator-owner-cluster-admin' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: this.opts.ownerUser }],
    };
    for (const obj of [owner, ...jobset.objects, ...kueue.objects, ...(this.opts.extraObjects?.(caBundle) ?? [])]) {
      await this.admin.apply(collectionOf(obj), obj);
    }
    await this.waitCrdsEstablished([...jobset.objects, ...kueue.objects]);

    const kubeconfig = (who: Internal) => this.writeKubeconfig(who);
    this.procs.start('kube-controller-manager', b.kubeControllerManager, [
      `--kubeconfig=${kubeconfig('controllerManager')}`, `--controllers=${CONTROLLERS.join(',')}`, '--leader-elect=false',
      `--service-account-private-key-file=${sa.key}`, `--root-ca-file=${ca.cert}`, '--use-service-account-credentials=true',
      `--bind-address=${host}`, `--secure-port=${await ports.pick()}`, `--cert-dir=${path.join(dir, 'kcm-certs')}`,
      // Finished pods are the run's record (their logs): kept, as GKE keeps them, until their Job goes.
      '--terminated-pod-gc-threshold=12500',
    ]);
    this.procs.start('kube-scheduler', b.kubeScheduler, [
      `--kubeconfig=${kubeconfig('scheduler')}`, `--authentication-kubeconfig=${kubeconfig('scheduler')}`, `--authorization-kubeconfig=${kubeconfig('scheduler')}`,
      '--leader-elect=false', `--bind-address=${host}`, `--secure-port=${await ports.pick()}`, `--cert-dir=${path.join(dir, 'scheduler-certs')}`,
    ]);
    const webhookDir = path.join(dir, 'webhook-certs');
    fs.mkdirSync(webhookDir, { recursive: true, mode: 0o700 });
    fs.copyFileSync(webhookCert.cert, path.join(webhookDir, 'tls.crt'));
    fs.copyFileSync(webhookCert.key, path.join(webhookDir, 'tls.key'));
    const health = { jobset: await ports.pick(), kueue: await ports.pick() };
    const controllerConfig = (base: Record<string, unknown>, webhookPort: number, healthPort: number) => ({
      ...base,
      // The emulator's changes to the release's configuration: loopback ports, certificates of the cluster CA
      // (no internal cert rotation: it writes a Service's DNS name into them), one replica (no leader election),
      // no metrics server.
      webhook: { ...((base.webhook as object | undefined) ?? {}), port: webhookPort, host, certDir: webhookDir },
      health: { ...((base.health as object | undefined) ?? {}), healthProbeBindAddress: `${host}:${healthPort}` },
      metrics: { ...((base.metrics as object | undefined) ?? {}), bindAddress: '0' },
      leaderElection: { ...((base.leaderElection as object | undefined) ?? {}), leaderElect: false },
      internalCertManagement: { enable: false },
    });
    const jobsetConfig = this.writeConfig('jobset-config.yaml', controllerConfig(jobset.config, webhooks.jobset, health.jobset));
    const kueueConfig = this.writeConfig('kueue-config.yaml', controllerConfig(kueue.config, webhooks.kueue, health.kueue));
    this.procs.start('jobset-controller', b.jobset, [`--config=${jobsetConfig}`, '--zap-log-level=info'], { KUBECONFIG: kubeconfig('jobset') });
    // Without its internal cert rotation (which names a Service the API server cannot reach here) Kueue reads
    // its metrics certificate from /etc/kueue/metrics/certs, a path it does not let one change: it gets its own
    // view of the machine with a certificate of the cluster CA there, as its Deployment's volume would give it.
    if (!namespacesAvailable()) throw new Error('Kueue needs its certificates at /etc/kueue/metrics/certs, which the emulator mounts in a user namespace, and this machine does not allow those (`unshare --user --mount` fails)');
    const hosts = path.join(dir, 'kueue-hosts');
    fs.writeFileSync(hosts, '127.0.0.1\tlocalhost\n');
    const kueueArgv = launchArgv(this.launcherPath, {
      rootDir: path.join(dir, 'kueue-root'), hostsFile: hosts, hostname: 'kueue-controller-manager', workingDir: '/',
      mounts: [{ source: webhookDir, target: '/etc/kueue/metrics/certs', readOnly: true }],
      // The on-demand visibility API is an aggregated API served behind a Service, which nothing routes to here
      // (and its server wants in-cluster credentials): off. Pending workloads are on the Workload objects.
      argv: [b.kueue, `--config=${kueueConfig}`, '--zap-log-level=2', '--feature-gates=VisibilityOnDemand=false'],
    });
    this.procs.start('kueue', kueueArgv[0], kueueArgv.slice(1), { KUBECONFIG: kubeconfig('kueue') });
    await Promise.all([
      this.waitReady('jobset-controller', () => httpGetOk(`http://${host}:${health.jobset}/readyz`)),
      this.waitReady('kueue', () => httpGetOk(`http://${host}:${health.kueue}/readyz`)),
    ]);
  }

  async stop(): Promise<void> {
    this.adminClient?.close();
    this.adminClient = undefined;
    await this.procs.stop();
  }

  private writeKubeconfig(who: Internal): string {
    const file = path.join(this.opts.dir, `${who}.kubeconfig`);
    const cfg = {
      apiVersion: 'v1', kind: 'Config', 'current-context': 'emulator',
      clusters: [{ name: 'emulator', cluster: { server: this.server, 'certificate-authority': this.pki.ca.cert } }],
      users: [{ name: who, user: { token: this.tokens?.[who] } }],
      contexts: [{ name: 'emulator', context: { cluster: 'emulator', user: who } }],
    };
    fs.writeFileSync(file, JSON.stringify(cfg), { mode: 0o600 });
    return file;
  }

  private writeConfig(name: string, config: unknown): string {
    const file = path.join(this.opts.dir, name);
    fs.writeFileSync(file, JSON.stringify(config), { mode: 0o600 });
    return file;
  }

  private async waitCrdsEstablished(objects: KubeObject[]): Promise<void> {
    for (const crd of objects.filter((o) => o.kind === 'CustomResourceDefinition')) {
      await this.waitReady(`CRD ${crd.metadata.name}`, async () => {
        const got = await this.admin.get<{ status?: { conditions?: { type: string; status: string }[] } }>(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`);
        if (!got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) throw new Error('not established');
      });
    }
  }

  /** Polls `probe` until it succeeds; a component that exits meanwhile fails the wait with its log's tail. */
  private async waitReady(what: string, probe: () => Promise<unknown>): Promise<void> {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    let last = '';
    while (Date.now() < deadline) {
      const dead = this.procs.deadOne();
      if (dead) throw new Error(`${dead.name} exited (${dead.how}) while the cluster started: ${tail(dead.logFile)}`);
      try {
        await probe();
        return;
      } catch (e) {
        last = (e as Error).message;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`${what} was not ready after ${READY_TIMEOUT_MS / 1000} s (${last}); logs in ${path.join(this.opts.dir, 'logs')}`);
  }
}

function httpGetOk(url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        res.resume();
        if (res.statusCode === 200) resolve();
        else reject(new Error(`${url}: HTTP ${res.statusCode}`));
      })
      .on('error', reject);
  });
}

function tail(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').trim().split('\n').slice(-5).join(' | ');
  } catch {
    return '(no log)';
  }
}
