import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { EmulatorError } from './errors';
import { freePort } from './free-port';
import { emulatorDir } from '../../protocol/node/emulator-endpoint';
import { generateEd25519KeyPair, parsesAsPublicKey } from '../../protocol/node/ssh-keys';
import { tpuNodeKey } from './names';
import { setOrphanSandboxesAside } from './sandboxes';
import { DEFAULT_ZONES } from './catalog';
import { ComputeState, type InstanceJson, type InstanceWorker } from './compute-state';
import { endpointFile, isAlive, isSameProcess, ownIdentity, type EmulatorEndpoint } from '../../protocol/node/emulator-endpoint';
import type { LibtpuFault } from './libtpu-metrics';
import { EMULATOR_ACCOUNT } from './os-login';
import { RestServer, type CapacityFault, type FaultSpec } from './rest';
import type { SshWorkerPoolOptions, WorkerSpec } from './ssh-workers';
import { VmServices } from './vm-services';
import { GkeService, gkeOptions } from './gke/gke-service';
import { EmulatorState, type NodeDownReason, type NodeJson, type OperationVerb } from './state';
import { resetState, restorePreviousState, type StateRecovery } from './state-file';

/** What the emulator needs of the SSH worker pool; ssh-workers.ts's SshWorkerPool is the real one. */
export interface WorkerPool {
  addWorker(spec: WorkerSpec): Promise<void>;
  removeNode(nodeId: string): Promise<void>;
  /** Keys from the node's metadata `ssh-keys` (optional: pools hosted elsewhere may not support it). */
  setNodeKeys?(nodeId: string, sshKeys: string): void;
  /** Tests: a worker's libtpu metrics service down, slow or answering garbage (optional, as above). */
  setLibtpuFault?(nodeId: string, index: number, fault: LibtpuFault | undefined): Promise<void>;
  close(): Promise<void>;
}
export type WorkerPoolFactory = (opts: SshWorkerPoolOptions) => WorkerPool | Promise<WorkerPool>;

export interface EmulatorOptions {
  /** State, keys, worker sandboxes and endpoint.json live here; default `<TPW_HOME>/emulator`. */
  dir?: string;
  host?: string;
  /** 0 (default) picks a free port. */
  restPort?: number;
  /** 0 (default) reuses the port of the previous run, or picks a free one and remembers it. */
  sshPort?: number;
  project?: string;
  zones?: string[];
  opDelayMs?: number | Partial<Record<OperationVerb, number>>;
  /** Worker addresses are `<addressPrefix>.1` … `.254`; default "127.0.1" (Linux routes all of 127/8 to lo). */
  addressPrefix?: string;
  latencyMs?: number;
  faults?: FaultSpec[];
  /** Accelerator types with no capacity in a zone from the start (CreateNode: 429; queued resources wait). */
  capacityFaults?: CapacityFault[];
  /** Zone → the accelerator types it offers, as Cloud TPU zones differ; a zone not named offers every type. */
  offerings?: Readonly<Record<string, readonly string[]>>;
  /** Least time a queued resource spends in each state (default 300 ms). */
  queuedStepMs?: number;
  log?: (msg: string) => void;
  /** Replaces the SSH worker pool (tests); default: ssh-workers.ts's SshWorkerPool. */
  workerPool?: WorkerPoolFactory;
  /** Port of every worker's libtpu metrics service, on the worker's own address (default 8431, as on a TPU VM; 0: none). */
  libtpuMetricsPort?: number;
  /** Folders first on the workers' PATH; default: the project's venv (`$TPW_VENV`, else ~/.cache/tpu-workbench/venv) if it exists. */
  workerPathPrefix?: string[];
}

/**
 * A prepared TPU VM has the trainer's Python environment installed; the emulated one borrows this machine's
 * (scripts/python-env.sh makes it). Without this, a VS Code started from the desktop hands the emulator a
 * login-shell PATH whose python3 lacks torch.
 */
export function defaultWorkerPathPrefix(env: NodeJS.ProcessEnv = process.env): string[] {
  const venv = env.TPW_VENV || path.join(os.homedir(), '.cache', 'tpu-workbench', 'venv');
  const bin = path.join(venv, 'bin');
  return fs.existsSync(path.join(bin, 'python3')) ? [bin] : [];
}

export interface EmulatorKeys {
  hostKey: string;
  hostPublicKey: string;
  clientKeyPath: string;
  clientPublicKey: string;
}

// Loaded on first use, so tests that bring their own pool (and code that never runs an emulator) skip it.
/** The emulator's Cloud Storage: one folder per bucket, each file an object (vm-services.ts). */
export function storageDir(emulatorDir: string): string {
  return path.join(emulatorDir, 'storage');
}

const defaultPool: WorkerPoolFactory = async (o) => new (await import('./ssh-workers.js')).SshWorkerPool(o);

/**
 * The local emulator: the state file, the REST API, the keys and the SSH workers, composed. A node's workers
 * are started before it is reported READY and stopped before it is reported STOPPED, PREEMPTED or gone.
 */
export class Emulator {
  readonly dir: string;
  private stateValue: EmulatorState | undefined;
  private computeValue: ComputeState | undefined;
  private restValue: RestServer | undefined;
  private servicesValue: VmServices | undefined;
  private gkeValue: GkeService | undefined;
  private pool: WorkerPool | undefined;
  private endpointValue: EmulatorEndpoint | undefined;
  private lockHeld = false;
  private readonly log: (msg: string) => void;

  constructor(private readonly opts: EmulatorOptions = {}) {
    this.dir = path.resolve(opts.dir ?? emulatorDir());
    this.log = opts.log ?? (() => undefined);
  }

  get endpoint(): EmulatorEndpoint | undefined {
    return this.endpointValue;
  }

  get state(): EmulatorState {
    if (!this.stateValue) throw new Error('emulator not started');
    return this.stateValue;
  }

  /** Compute Engine instances, MIGs, templates and policies. */
  get compute(): ComputeState {
    if (!this.computeValue) throw new Error('emulator not started');
    return this.computeValue;
  }

  /** GKE's clusters (their Kubernetes side runs only while a cluster exists). */
  get gke(): GkeService {
    if (!this.gkeValue) throw new Error('emulator not started');
    return this.gkeValue;
  }

  /** The REST server, for fault and latency injection in tests. */
  get rest(): RestServer {
    if (!this.restValue) throw new Error('emulator not started');
    return this.restValue;
  }

  /**
   * `--restore-previous` / `--reset-state`, under the emulator lock of `dir` (so never under a running
   * emulator's feet). Returns what was done, for the user.
   */
  static recoverState(dir: string, how: StateRecovery): string {
    const emu = new Emulator({ dir });
    makePrivateDir(emu.dir);
    emu.acquireLock();
    try {
      return how === 'restore-previous' ? restorePreviousState(emu.dir) : resetState(emu.dir);
    } finally {
      fs.rmSync(lockFile(emu.dir), { force: true });
    }
  }

  async start(): Promise<EmulatorEndpoint> {
    if (this.endpointValue) return this.endpointValue;
    makePrivateDir(this.dir);
    this.acquireLock();
    try {
      return await this.startLocked();
    } catch (e) {
      await this.stop().catch(() => undefined);
      throw e;
    }
  }

  private async startLocked(): Promise<EmulatorEndpoint> {
    const host = this.opts.host ?? '127.0.0.1';
    const project = this.opts.project ?? 'local-project';
    const zones = this.opts.zones ?? [...DEFAULT_ZONES];
    const state = EmulatorState.load({ dir: this.dir, opDelayMs: this.opts.opDelayMs, addressPrefix: this.opts.addressPrefix, log: this.log });
    this.stateValue = state;
    const keys = ensureKeys(this.dir);
    let sshPort = this.opts.sshPort ?? 0;
    if (sshPort === 0) sshPort = state.sshPort ?? (await freePort(host));
    if (state.sshPort !== sshPort) state.sshPort = sshPort;

    const username = os.userInfo().username;
    // Before the workers: their programs are told where it is.
    const services = new VmServices({ dir: storageDir(this.dir), project, host, log: this.log });
    await services.listen();
    this.servicesValue = services;
    this.pool = await (this.opts.workerPool ?? defaultPool)({
      vmEnv: (spec) => services.workerEnv(spec.address),
      port: sshPort,
      hostKey: keys.hostKey,
      authorizedKey: keys.clientPublicKey,
      username,
      log: this.log,
      pathPrefix: this.opts.workerPathPrefix ?? defaultWorkerPathPrefix(),
      libtpuMetricsPort: this.opts.libtpuMetricsPort,
      // A Compute Engine VM under OS Login lets in only the OS Login user with the keys imported through the API.
      osLogin: (nodeId) => this.computeValue?.osLoginFor(nodeId),
    });
    state.setHooks({
      nodeUp: (n) => this.nodeUp(n),
      nodeDown: (n, r) => this.nodeDown(n, r),
      // "Add my key to this VM": metadata ssh-keys reach every worker of the node, as the guest agent does.
      metadataChanged: (n) => this.pool?.setNodeKeys?.(tpuNodeKey(n.name), n.metadata?.['ssh-keys'] ?? ''),
    });
    const d = this.opts.opDelayMs;
    const compute = new ComputeState(
      {
        allocate: (owner, count) => state.allocateAddresses(owner, count),
        release: (owner) => state.releaseAddresses(owner),
        save: () => state.save(),
        capacityExhausted: (zone, type) => this.restValue?.faults.capacityExhausted(zone, type) ?? false,
        opDelayMs: typeof d === 'number' ? d : (d?.create ?? 1500),
        log: this.log,
      },
      state.savedCompute,
    );
    this.computeValue = compute;
    state.setComputeSource(() => compute.toJSON());
    compute.hooks = {
      instanceUp: (i, w) => this.instanceUp(i, w),
      instanceDown: (i, w, reason) => this.instanceDown(i, w, reason),
      metadataChanged: (i, w) => this.pool?.setNodeKeys?.(w.key, sshKeysOf(i, compute.projectMetadata)),
      projectMetadataChanged: () => {
        for (const i of compute.instances.values()) {
          const w = compute.workerOf(i);
          if (w) this.pool?.setNodeKeys?.(w.key, sshKeysOf(i, compute.projectMetadata));
        }
      },
    };
    this.setOrphanSandboxesAside(state.allNodes(), [...compute.workers.values()].map((w) => w.key));
    for (const node of state.allNodes().filter((n) => n.state === 'READY')) {
      // A VM that cannot get its workers back is still listed; the log says why it is unreachable.
      await this.nodeUp(node).catch((e: Error) => this.log(`workers of ${node.name} did not start: ${e.message}`));
    }
    for (const inst of [...compute.instances.values()].filter((i) => i.status === 'RUNNING')) {
      const w = compute.workerOf(inst);
      if (w) await this.instanceUp(inst, w).catch((e: Error) => this.log(`worker of ${inst.name} did not start: ${e.message}`));
    }
    compute.groups.resumeAll();
    compute.resumeInserts();

    const gke = new GkeService(gkeOptions({
      dir: this.dir, project, zones, account: EMULATOR_ACCOUNT, addresses: state,
      pathPrefix: this.opts.workerPathPrefix ?? defaultWorkerPathPrefix(), vmServices: services, log: this.log,
    }));
    this.gkeValue = gke;

    // A new token at each start: a client holding an old one (or a copy of an old endpoint file) is refused.
    const token = crypto.randomBytes(32).toString('base64url');
    this.restValue = new RestServer({
      state,
      project,
      zones,
      host,
      port: this.opts.restPort ?? 0,
      token,
      latencyMs: this.opts.latencyMs,
      faults: this.opts.faults,
      capacityFaults: this.opts.capacityFaults,
      offerings: this.opts.offerings,
      queuedStepMs: this.opts.queuedStepMs,
      hostPublicKey: keys.hostPublicKey,
      log: this.log,
      compute,
      gke,
      storage: (req, res, base) => services.serveOwner(req, res, base),
    });
    const restPort = await this.restValue.listen();
    gke.start(token);
    const endpoint: EmulatorEndpoint = {
      pid: process.pid,
      ...ownIdentity(),
      host,
      restPort,
      token,
      sshPort,
      project,
      zones,
      username,
      account: EMULATOR_ACCOUNT,
      clientKeyPath: keys.clientKeyPath,
      startedAt: new Date().toISOString(),
    };
    writeFileAtomic(endpointFile(this.dir), JSON.stringify(endpoint, null, 2));
    this.endpointValue = endpoint;
    this.log(`emulator listening: REST http://${host}:${restPort} (bearer token in ${endpointFile(this.dir)}), SSH port ${sshPort}, project ${project}, zones ${zones.join(', ')}`);
    return endpoint;
  }

  /** Closes the REST server, settles nothing (the next start does), closes the workers, removes endpoint.json. */
  async stop(): Promise<void> {
    const errors: unknown[] = [];
    const step = async (fn: () => Promise<void> | void) => {
      try {
        await fn();
      } catch (e) {
        errors.push(e);
      }
    };
    await step(() => this.restValue?.close());
    await step(() => this.gkeValue?.stop());
    await step(() => this.servicesValue?.close());
    await step(() => this.computeValue?.close());
    await step(() => this.stateValue?.close());
    await step(() => this.pool?.close());
    if (this.endpointValue) await step(() => fs.rmSync(endpointFile(this.dir), { force: true }));
    if (this.lockHeld) await step(() => fs.rmSync(lockFile(this.dir), { force: true }));
    this.restValue = undefined;
    this.gkeValue = undefined;
    this.servicesValue = undefined;
    this.stateValue = undefined;
    this.computeValue = undefined;
    this.pool = undefined;
    this.endpointValue = undefined;
    this.lockHeld = false;
    if (errors.length > 0) throw errors[0];
  }

  /**
   * Tests: worker `index` of TPU VM `nodeId` (its short name; `ce-<name>` for a Compute Engine instance) gets a
   * libtpu metrics service that is down, slow, or answers bytes that are no MetricResponse; undefined: well again.
   */
  async setLibtpuFault(nodeId: string, index: number, fault: LibtpuFault | undefined): Promise<void> {
    if (!this.pool?.setLibtpuFault) throw new EmulatorError('FAILED_PRECONDITION', 'This emulator\'s workers have no libtpu metrics services.');
    await this.pool.setLibtpuFault(this.workerKeyOf(nodeId), index, fault);
  }

  /** The workers' key (names.ts) of the one TPU VM named `name` (`ce-<name>`: the Compute Engine instance). */
  private workerKeyOf(name: string): string {
    const instance = name.startsWith('ce-') ? name.slice(3) : undefined;
    const keys = instance === undefined
      ? this.state.allNodes().map((n) => tpuNodeKey(n.name)).filter((k) => k.endsWith(`/${name}`))
      : [...(this.computeValue?.workers.values() ?? [])].map((w) => w.key).filter((k) => k.endsWith(`/${instance}`));
    const unique = [...new Set(keys)];
    if (unique.length === 1) return unique[0];
    throw new EmulatorError(unique.length ? 'FAILED_PRECONDITION' : 'NOT_FOUND', unique.length ? `More than one VM is named ${name}: ${unique.join(', ')}.` : `No TPU VM named ${name}.`);
  }

  /** Worker `index`'s sandbox (its HOME), of the VM with this workers' key (names.ts) or this short name (as setLibtpuFault). */
  sandboxDir(nodeKeyOrName: string, index: number): string {
    const key = nodeKeyOrName.includes('/') ? nodeKeyOrName : this.workerKeyOf(nodeKeyOrName);
    return path.join(this.dir, 'workers', key, `w${index}`);
  }

  private async nodeUp(node: NodeJson): Promise<void> {
    const pool = this.pool;
    if (!pool) throw new Error('emulator not started');
    const nodeId = tpuNodeKey(node.name);
    try {
      for (const [index, ep] of node.networkEndpoints.entries()) {
        const sandboxDir = this.sandboxDir(nodeId, index);
        fs.mkdirSync(sandboxDir, { recursive: true, mode: 0o700 });
        const spec: WorkerSpec = {
          nodeId,
          index,
          address: ep.ipAddress,
          // Every worker of the slice, in worker order: a real TPU VM exports them as TPU_WORKER_HOSTNAMES
          // (internal IPs), which multi-host runtimes use to find their peers.
          hostnames: node.networkEndpoints.map((e) => e.ipAddress),
          sandboxDir,
          acceleratorType: node.acceleratorType,
        };
        await this.servicesValue?.addWorker(nodeId, spec.address);
        await pool.addWorker(spec);
      }
      pool.setNodeKeys?.(nodeId, node.metadata?.['ssh-keys'] ?? '');
      this.log(`workers of ${node.name} up: ${node.networkEndpoints.map((e) => e.ipAddress).join(', ')}`);
    } catch (e) {
      await pool.removeNode(nodeId).catch(() => undefined);
      await this.servicesValue?.removeVm(nodeId).catch(() => undefined);
      throw e;
    }
  }

  /** A Compute Engine TPU VM's one worker (its place in its slice is `w.index`). */
  private async instanceUp(inst: InstanceJson, w: InstanceWorker): Promise<void> {
    const pool = this.pool;
    if (!pool) throw new Error('emulator not started');
    const sandboxDir = this.sandboxDir(w.key, w.index);
    fs.mkdirSync(sandboxDir, { recursive: true, mode: 0o700 });
    try {
      await this.servicesValue?.addWorker(w.key, w.address);
      await pool.addWorker({ nodeId: w.key, index: w.index, address: w.address, hostnames: w.hostnames, sandboxDir, acceleratorType: w.acceleratorType });
      pool.setNodeKeys?.(w.key, sshKeysOf(inst, this.computeValue?.projectMetadata));
    } catch (e) {
      await pool.removeNode(w.key).catch(() => undefined);
      await this.servicesValue?.removeVm(w.key).catch(() => undefined);
      throw e;
    }
    this.log(`worker ${w.index} of ${inst.name} up: ${w.address}`);
  }

  private async instanceDown(inst: InstanceJson, w: InstanceWorker, reason: 'stop' | 'delete' | 'preempt'): Promise<void> {
    await this.pool?.removeNode(w.key);
    await this.servicesValue?.removeVm(w.key);
    if (reason === 'delete') fs.rmSync(path.join(this.dir, 'workers', w.key), { recursive: true, force: true });
    this.log(`worker of ${inst.name} down (${reason})`);
  }

  private async nodeDown(node: NodeJson, reason: NodeDownReason): Promise<void> {
    const nodeId = tpuNodeKey(node.name);
    await this.pool?.removeNode(nodeId);
    await this.servicesValue?.removeVm(nodeId);
    // A deleted VM loses its disk; a stopped or preempted one keeps it.
    if (reason === 'delete') fs.rmSync(path.join(this.dir, 'workers', nodeId), { recursive: true, force: true });
    this.log(`workers of ${node.name} down (${reason})`);
  }

  /** Sandboxes the state does not know are set aside (sandboxes.ts). */
  private setOrphanSandboxesAside(nodes: NodeJson[], instanceKeys: string[] = []): void {
    setOrphanSandboxesAside(this.dir, nodes.map((n) => n.name), instanceKeys, this.log);
  }

  /**
   * One emulator per directory: a lock file naming the owner (pid, start time, argv); a lock whose owner is gone,
   * or whose pid now belongs to another process, is taken over.
   */
  private acquireLock(): void {
    const file = lockFile(this.dir);
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        fs.writeFileSync(file, JSON.stringify({ pid: process.pid, ...ownIdentity() }), { flag: 'wx', mode: 0o600 });
        this.lockHeld = true;
        return;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
        const pid = lockOwner(file);
        if (pid !== undefined) {
          throw new EmulatorError('FAILED_PRECONDITION', `The local emulator in ${this.dir} is already running (pid ${pid}); stop it with \`tpw emulator stop\`.`);
        }
        fs.rmSync(file, { force: true });
      }
    }
    throw new EmulatorError('FAILED_PRECONDITION', `Could not take the emulator lock ${file}.`);
  }
}

/**
 * The keys the guest agent of a Compute Engine VM installs: its own metadata's `ssh-keys`, and the project's (where
 * `gcloud compute ssh` puts its key) unless the VM's `block-project-ssh-keys` is true.
 */
function sshKeysOf(inst: InstanceJson, project: { items: { key: string; value: string }[] } | undefined): string {
  const item = (items: { key: string; value: string }[], key: string) => items.find((x) => x.key === key)?.value;
  const own = item(inst.metadata.items, 'ssh-keys') ?? '';
  const blocked = /^(true|1|yes|y|on)$/i.test(item(inst.metadata.items, 'block-project-ssh-keys') ?? '');
  const shared = blocked ? '' : (item(project?.items ?? [], 'ssh-keys') ?? '');
  return [own, shared].filter(Boolean).join('\n');
}

export function lockFile(dir: string): string {
  return path.join(dir, 'emulator.lock');
}

/**
 * The live emulator holding the lock in `file`, if any. A lock of an older version holds only the pid, and so
 * does one written where there is no /proc: such a live pid counts, unless `verifiedOnly` (before a signal).
 */
export function lockOwner(file: string, verifiedOnly = false): number | undefined {
  let owner: unknown;
  try {
    owner = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
  const o = (typeof owner === 'number' ? { pid: owner } : owner) as { pid?: unknown; procStart?: unknown; cmdline?: unknown } | null;
  const pid = o?.pid;
  if (typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 0) return undefined;
  const procStart = typeof o?.procStart === 'string' ? o.procStart : '';
  if (procStart === '') return verifiedOnly || !isAlive(pid) ? undefined : pid;
  const cmdline = Array.isArray(o?.cmdline) ? o.cmdline.map(String) : [];
  return isSameProcess(pid, procStart, cmdline) === 'same' ? pid : undefined;
}

/** The emulator's folder holds its keys, token and state: created 0700, and made so if it is ours and not. */
function makePrivateDir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = fs.statSync(dir);
  const uid = process.getuid?.();
  if (uid === undefined) return;
  if (st.uid !== uid) {
    throw new EmulatorError('PERMISSION_DENIED', `The emulator folder ${dir} belongs to uid ${st.uid}, not to you: its keys and token would not be private. Use a folder of your own (TPW_HOME).`);
  }
  if ((st.mode & 0o077) !== 0) fs.chmodSync(dir, 0o700);
}

/**
 * Host and client keys, generated once and reused so that a restarted emulator keeps its host identity
 * (known_hosts entries stay valid) and clients keep their key.
 */
export function ensureKeys(dir: string): EmulatorKeys {
  const keysDir = path.join(dir, 'keys');
  fs.mkdirSync(keysDir, { recursive: true, mode: 0o700 });
  fs.chmodSync(keysDir, 0o700);
  const pair = (base: string, comment: string) => {
    const priv = path.join(keysDir, base);
    const pub = `${priv}.pub`;
    // A pair with ssh2's malformed public half (written before generateEd25519KeyPair) never worked: replaced.
    if (!fs.existsSync(priv) || !fs.existsSync(pub) || !parsesAsPublicKey(fs.readFileSync(pub, 'utf8'))) {
      const k = generateEd25519KeyPair(comment);
      writeFileAtomic(priv, k.private);
      writeFileAtomic(pub, `${k.public.trim()}\n`);
    }
    // Whoever can read the client key is the emulator's user on every worker.
    fs.chmodSync(priv, 0o600);
    return { privateKey: fs.readFileSync(priv, 'utf8'), publicKey: fs.readFileSync(pub, 'utf8').trim(), privPath: priv };
  };
  const host = pair('ssh_host_ed25519_key', 'tpw-emulator-host');
  const client = pair('client_ed25519', 'tpw-emulator-client');
  return { hostKey: host.privateKey, hostPublicKey: host.publicKey, clientKeyPath: client.privPath, clientPublicKey: client.publicKey };
}

/** Written whole or not at all, mode 0600 from the first byte (a left-over temp file is replaced, not reused). */
function writeFileAtomic(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.rmSync(tmp, { force: true });
  fs.writeFileSync(tmp, text, { flag: 'wx', mode: 0o600 });
  fs.renameSync(tmp, file);
}
