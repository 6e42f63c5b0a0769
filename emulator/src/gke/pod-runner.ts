import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { LogWriter } from './container-log';
import { containerEnv, EnvError, type ContainerSpec, type PodView } from './pod-env';
import { launchArgv, materializeVolumes, namespacesAvailable, VolumeError, type Mount, type VolumeSources, type VolumeSpec } from './pod-sandbox';

/**
 * One pod on an emulated node, run as the kubelet runs it: volumes, then each init container to completion in
 * order, then the containers together, each as a process (its command and args, in the pod's view of the
 * machine: pod-sandbox.ts), restarted as `restartPolicy` says; its status written back to the API server as
 * the kubelet reports it (phase, conditions, each container's state, exit code, restarts); its output kept in
 * the kubelet's log format (container-log.ts). Deletion: SIGTERM to each container's first process, SIGKILL to
 * all of it after the grace period.
 */

export interface PodSpecView {
  nodeName?: string;
  hostname?: string;
  subdomain?: string;
  restartPolicy?: 'Always' | 'OnFailure' | 'Never';
  terminationGracePeriodSeconds?: number;
  initContainers?: ContainerSpec[];
  containers: ContainerSpec[];
  volumes?: VolumeSpec[];
  serviceAccountName?: string;
}
export interface Pod extends PodView {
  metadata: PodView['metadata'] & { deletionTimestamp?: string; deletionGracePeriodSeconds?: number; resourceVersion?: string };
  spec: PodSpecView;
  status?: PodView['status'] & { phase?: string; startTime?: string; conditions?: Condition[] };
}
interface Condition {
  type: string;
  status: 'True' | 'False';
  lastTransitionTime: string;
  reason?: string;
  message?: string;
}
type ContainerState =
  | { waiting: { reason: string; message?: string } }
  | { running: { startedAt: string } }
  | { terminated: { exitCode: number; signal?: number; reason: string; message?: string; startedAt: string; finishedAt: string } };

interface ContainerRun {
  spec: ContainerSpec;
  init: boolean;
  state: ContainerState;
  lastState: ContainerState | Record<string, never>;
  restartCount: number;
  proc?: ChildProcess;
  logs?: LogWriter;
}

export interface PodHost {
  nodeName: string;
  address: string;
  /** The node's sandbox: HOME of its processes, root of its hostPaths. */
  sandboxDir: string;
  launcher: string;
  /** VM-like environment every container starts from (PATH with the project venv, locale, VM services). */
  baseEnv(): Record<string, string>;
  /** GKE's device plugin's variables for a container requesting google.com/tpu. */
  tpuEnv: Record<string, string>;
  sources(namespace: string, serviceAccount: string): VolumeSources & { env: (kind: 'Secret' | 'ConfigMap', name: string) => Promise<Record<string, string> | undefined> };
  writeStatus(pod: Pod, status: Record<string, unknown>): Promise<void>;
  /** The pod's /etc/hosts (the kubelet's, plus the other pods of its subdomain). */
  hostsFile(pod: Pod, podDir: string): string;
  log(msg: string): void;
}

const RESTART_BASE_MS = 1000;
const RESTART_MAX_MS = 30_000;

export class PodRunner {
  readonly dir: string;
  private pod: Pod;
  private readonly runs: ContainerRun[];
  private phase = 'Pending';
  private readonly conditions = new Map<string, Condition>();
  private startTime = new Date().toISOString();
  private stopping: Promise<void> | undefined;
  private terminalReason: { reason: string; message: string } | undefined;
  private writing: Promise<void> = Promise.resolve();
  private volumes = new Map<string, string>();
  private done = false;
  private initDone = false;

  constructor(pod: Pod, private readonly host: PodHost) {
    this.pod = pod;
    this.dir = path.join(host.sandboxDir, 'pods', `${pod.metadata.namespace}_${pod.metadata.name}_${pod.metadata.uid}`);
    const run = (spec: ContainerSpec, init: boolean): ContainerRun => ({ spec, init, state: { waiting: { reason: init ? 'PodInitializing' : 'ContainerCreating' } }, lastState: {}, restartCount: 0 });
    this.runs = [...(pod.spec.initContainers ?? []).map((c) => run(c, true)), ...pod.spec.containers.map((c) => run(c, false))];
  }

  get uid(): string {
    return this.pod.metadata.uid;
  }

  /** Whether a container of this pod is still running (for following its log). */
  isRunning(container: string): boolean {
    const r = this.runs.find((x) => x.spec.name === container);
    return !!r && 'running' in r.state;
  }

  /** The log file of a container's current (or, with `previous`, last) start. */
  logFile(container: string, previous: boolean): string | undefined {
    const r = this.runs.find((x) => x.spec.name === container);
    if (!r) return undefined;
    const n = previous ? r.restartCount - 1 : r.restartCount;
    if (n < 0) return undefined;
    const f = path.join(this.dir, 'logs', container, `${n}.log`);
    return fs.existsSync(f) ? f : undefined;
  }

  containerNames(): string[] {
    return this.runs.map((r) => r.spec.name);
  }

  update(pod: Pod): void {
    this.pod = pod;
    if (pod.metadata.deletionTimestamp) void this.terminate(pod.metadata.deletionGracePeriodSeconds ?? pod.spec.terminationGracePeriodSeconds ?? 30, undefined);
  }

  async start(): Promise<void> {
    fs.mkdirSync(path.join(this.dir, 'logs'), { recursive: true });
    this.setCondition('PodReadyToStartContainers', false);
    this.setCondition('Initialized', false, 'ContainersNotInitialized');
    this.setCondition('ContainersReady', false, 'ContainersNotReady');
    this.setCondition('Ready', false, 'ContainersNotReady');
    this.report();
    const src = this.host.sources(this.pod.metadata.namespace, this.pod.spec.serviceAccountName ?? 'default');
    // A missing ConfigMap or Secret is waited for, as the kubelet does, until it appears or the pod goes.
    while (!this.stopping) {
      try {
        this.volumes = await materializeVolumes(this.pod, this.pod.spec.volumes ?? [], this.dir, path.join(this.host.sandboxDir, 'hostpath'), src);
        break;
      } catch (e) {
        if (!(e instanceof VolumeError)) throw e;
        this.waitAll('ContainerCreating', `MountVolume.SetUp failed: ${e.message}`);
        await sleep(2000);
      }
    }
    if (this.stopping) return;
    this.setCondition('PodReadyToStartContainers', true);
    for (const r of this.runs.filter((x) => x.init)) {
      while (!this.stopping) {
        const code = await this.runContainer(r);
        if (code === 0) break;
        if (this.restartPolicy() === 'Never') return this.finish('Failed');
        await this.backoff(r);
      }
      if (this.stopping) return;
    }
    this.initDone = true;
    this.setCondition('Initialized', true);
    await Promise.all(this.runs.filter((x) => !x.init).map((r) => this.keepRunning(r)));
    if (this.stopping) return;
    const failed = this.runs.some((r) => !r.init && 'terminated' in r.state && r.state.terminated.exitCode !== 0);
    this.finish(failed ? 'Failed' : 'Succeeded');
  }

  /**
   * Stops every container (SIGTERM, then SIGKILL after `graceSeconds`). With `reason`, the pod ends Failed with
   * it (a node shutdown); without, it is being deleted and only its containers' ends are reported.
   */
  terminate(graceSeconds: number, reason: { reason: string; message: string } | undefined): Promise<void> {
    if (reason) this.terminalReason = reason;
    if (!this.stopping) {
      this.stopping = (async () => {
        const live = this.runs.filter((r) => r.proc && r.proc.exitCode === null && r.proc.signalCode === null);
        // As the kubelet: SIGTERM to the container's first process only (what it started is its business), and
        // SIGKILL to everything of the container once the grace period is over.
        for (const r of live) signalProcess(r.proc, 'SIGTERM');
        const deadline = Date.now() + graceSeconds * 1000;
        while (live.some((r) => r.proc?.exitCode === null && r.proc.signalCode === null) && Date.now() < deadline) await sleep(50);
        for (const r of live) signalGroup(r.proc, 'SIGKILL');
        await Promise.all(live.map((r) => new Promise<void>((res) => (r.proc?.exitCode !== null || r.proc.signalCode !== null ? res() : r.proc.once('close', () => res())))));
        if (this.terminalReason) this.finish('Failed');
        else this.report();
        await this.writing;
      })();
    }
    return this.stopping;
  }

  /** Runs `r` once; resolves with its exit code. */
  private runContainer(r: ContainerRun): Promise<number> {
    const c = r.spec;
    let env: Record<string, string>;
    const argv = [...(c.command ?? []), ...(c.args ?? [])];
    return (async () => {
      const src = this.host.sources(this.pod.metadata.namespace, this.pod.spec.serviceAccountName ?? 'default');
      const data = new Map<string, Record<string, string> | undefined>();
      for (const from of c.envFrom ?? []) {
        const ref = from.secretRef ?? from.configMapRef;
        if (ref) data.set(`${from.secretRef ? 'Secret' : 'ConfigMap'}/${ref.name}`, await src.env(from.secretRef ? 'Secret' : 'ConfigMap', ref.name));
      }
      for (const e of c.env ?? []) {
        const ref = e.valueFrom?.secretKeyRef ?? e.valueFrom?.configMapKeyRef;
        if (ref) data.set(`${e.valueFrom?.secretKeyRef ? 'Secret' : 'ConfigMap'}/${ref.name}`, await src.env(e.valueFrom?.secretKeyRef ? 'Secret' : 'ConfigMap', ref.name));
      }
      try {
        const wantsTpu = 'google.com/tpu' in (c.resources?.limits ?? {}) || 'google.com/tpu' in (c.resources?.requests ?? {});
        env = { ...this.host.baseEnv(), HOME: this.host.sandboxDir, HOSTNAME: this.hostname(), ...(wantsTpu ? this.host.tpuEnv : {}), ...containerEnv(this.pod, c, (kind, name) => data.get(`${kind}/${name}`)) };
      } catch (e) {
        if (!(e instanceof EnvError)) throw e;
        r.state = { waiting: { reason: 'CreateContainerConfigError', message: e.message } };
        this.report();
        await sleep(2000);
        return this.stopping ? 1 : this.runContainer(r);
      }
      if (!namespacesAvailable()) {
        r.state = { waiting: { reason: 'CreateContainerError', message: 'this machine does not let a process make user namespaces (`unshare --user --mount` fails), which the emulator\'s nodes need to give a container its volumes, /tmp and hostname' } };
        this.report();
        return 128;
      }
      if (argv.length === 0) {
        r.state = { waiting: { reason: 'CreateContainerError', message: `the emulator runs no images: container "${c.name}" needs a command` } };
        this.report();
        return 128;
      }
      const mounts: Mount[] = [];
      for (const m of c.volumeMounts ?? []) {
        const src = this.volumes.get(m.name);
        if (src) mounts.push({ source: m.subPath ? path.join(src, m.subPath) : src, target: m.mountPath, readOnly: !!m.readOnly });
      }
      const logDir = path.join(this.dir, 'logs', c.name);
      fs.mkdirSync(logDir, { recursive: true });
      const logs = new LogWriter(path.join(logDir, `${r.restartCount}.log`));
      const launch = launchArgv(this.host.launcher, {
        rootDir: path.join(this.dir, 'roots', `${c.name}-${r.restartCount}`),
        mounts,
        hostsFile: this.host.hostsFile(this.pod, this.dir),
        hostname: this.hostname(),
        workingDir: c.workingDir ?? '/',
        argv,
      });
      const startedAt = new Date().toISOString();
      const child = spawn(launch[0], launch.slice(1), { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'], cwd: this.host.sandboxDir });
      r.proc = child;
      r.logs = logs;
      if (child.stdout) logs.attach(child.stdout, 'stdout');
      if (child.stderr) logs.attach(child.stderr, 'stderr');
      r.state = { running: { startedAt } };
      this.refreshReady();
      this.report();
      const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((res) => {
        child.once('error', (e) => {
          res([127, null]);
          this.host.log(`pod ${this.pod.metadata.name}: cannot start ${c.name}: ${e.message}`);
        });
        // The container ends with its first process, as when PID 1 of a container exits: what it left running
        // in its group goes too, so the output pipes close.
        child.once('exit', (cd, sig) => {
          signalGroup(child, 'SIGKILL');
          child.once('close', () => res([cd, sig]));
        });
      });
      logs.close();
      const exitCode = code ?? 128 + signalNumber(signal);
      r.state = {
        terminated: { exitCode, ...(signal ? { signal: signalNumber(signal) } : {}), reason: exitCode === 0 ? 'Completed' : 'Error', startedAt, finishedAt: new Date().toISOString() },
      };
      r.proc = undefined;
      this.refreshReady();
      this.report();
      return exitCode;
    })();
  }

  /** A container under its restart policy: restarted until the policy says it is done. */
  private async keepRunning(r: ContainerRun): Promise<void> {
    while (!this.stopping) {
      const code = await this.runContainer(r);
      const policy = this.restartPolicy();
      if (this.stopping || policy === 'Never' || (policy === 'OnFailure' && code === 0)) return;
      await this.backoff(r);
    }
  }

  private async backoff(r: ContainerRun): Promise<void> {
    const wait = Math.min(RESTART_MAX_MS, RESTART_BASE_MS * 2 ** r.restartCount);
    r.lastState = r.state;
    r.restartCount += 1;
    r.state = { waiting: { reason: 'CrashLoopBackOff', message: `back-off ${Math.round(wait / 1000)}s restarting failed container=${r.spec.name} pod=${this.pod.metadata.name}` } };
    this.report();
    const until = Date.now() + wait;
    while (!this.stopping && Date.now() < until) await sleep(50);
  }

  private restartPolicy(): 'Always' | 'OnFailure' | 'Never' {
    return this.pod.spec.restartPolicy ?? 'Always';
  }

  private hostname(): string {
    return this.pod.spec.hostname ?? this.pod.metadata.name;
  }

  private finish(phase: 'Succeeded' | 'Failed'): void {
    if (this.done) return;
    this.done = true;
    this.phase = phase;
    for (const r of this.runs) {
      if ('running' in r.state || 'waiting' in r.state) {
        const now = new Date().toISOString();
        const startedAt = 'running' in r.state ? r.state.running.startedAt : now;
        r.state = { terminated: { exitCode: 137, reason: 'Error', startedAt, finishedAt: now } };
      }
    }
    this.setCondition('Ready', false, 'PodCompleted');
    this.setCondition('ContainersReady', false, 'PodCompleted');
    if (this.terminalReason) this.setCondition('DisruptionTarget', true, 'TerminationByKubelet', this.terminalReason.message);
    this.setCondition('PodReadyToStartContainers', false);
    this.report();
  }

  private waitAll(reason: string, message: string): void {
    for (const r of this.runs) if ('waiting' in r.state) r.state = { waiting: { reason, message } };
    this.report();
  }

  private refreshReady(): void {
    const ready = this.initDone && this.runs.filter((r) => !r.init).every((r) => 'running' in r.state);
    if (ready) this.phase = 'Running';
    this.setCondition('ContainersReady', ready, ready ? undefined : 'ContainersNotReady');
    this.setCondition('Ready', ready, ready ? undefined : 'ContainersNotReady');
  }

  private setCondition(type: string, value: boolean, reason?: string, message?: string): void {
    const status = value ? 'True' : 'False';
    const old = this.conditions.get(type);
    if (old && old.status === status && old.reason === reason) return;
    this.conditions.set(type, { type, status, lastTransitionTime: new Date().toISOString(), ...(reason ? { reason } : {}), ...(message ? { message } : {}) });
  }

  /** The status as the kubelet reports it; writes are serialised, the latest wins. */
  private report(): void {
    const status = (r: ContainerRun) => ({
      name: r.spec.name,
      image: r.spec.image ?? '',
      imageID: '',
      ready: 'running' in r.state && !r.init,
      started: 'running' in r.state,
      restartCount: r.restartCount,
      state: r.state,
      lastState: r.lastState,
      containerID: r.proc?.pid ? `tpw-emulator://${r.proc.pid}` : undefined,
    });
    const scheduled = (this.pod.status?.conditions ?? []).find((c) => c.type === 'PodScheduled');
    const body: Record<string, unknown> = {
      phase: this.phase,
      conditions: [...(scheduled ? [scheduled] : []), ...this.conditions.values()],
      hostIP: this.host.address,
      hostIPs: [{ ip: this.host.address }],
      podIP: this.host.address,
      podIPs: [{ ip: this.host.address }],
      startTime: this.startTime,
      initContainerStatuses: this.runs.filter((r) => r.init).map(status),
      containerStatuses: this.runs.filter((r) => !r.init).map(status),
      qosClass: 'BestEffort',
      ...(this.terminalReason && this.done ? { reason: this.terminalReason.reason, message: this.terminalReason.message } : {}),
    };
    const pod = this.pod;
    this.writing = this.writing.then(() => this.host.writeStatus(pod, body)).catch((e: Error) => this.host.log(`status of pod ${pod.metadata.name}: ${e.message}`));
  }
}

function signalProcess(p: ChildProcess | undefined, sig: NodeJS.Signals): void {
  try {
    if (p?.pid) process.kill(p.pid, sig);
  } catch {
    // gone
  }
}

function signalGroup(p: ChildProcess | undefined, sig: NodeJS.Signals): void {
  if (!p?.pid) return;
  try {
    process.kill(-p.pid, sig);
  } catch {
    // the group is gone
  }
}

const SIGNALS: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGABRT: 6, SIGKILL: 9, SIGSEGV: 11, SIGPIPE: 13, SIGTERM: 15 };
function signalNumber(sig: NodeJS.Signals | null): number {
  return sig ? (SIGNALS[sig] ?? 0) : 0;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
