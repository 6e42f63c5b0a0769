import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { freePort } from '../free-port';

/**
 * The control plane's child processes (etcd, kube-apiserver, …): started with their output in a log file of
 * the cluster's folder, stopped with SIGTERM then SIGKILL, and remembered in a pid file so that the next start
 * ends any left running by an emulator that was killed (a SIGKILL gives a parent no chance to stop them).
 */

export interface ManagedProcess {
  name: string;
  child: ChildProcess;
  logFile: string;
  /** Resolves when it has exited (code, or the signal's name). */
  exited: Promise<string>;
}

const STOP_GRACE_MS = 5000;

export class ProcessGroup {
  private readonly procs: ManagedProcess[] = [];
  private stopping = false;

  constructor(
    private readonly dir: string,
    private readonly log: (msg: string) => void,
    /** Called when a process exits while the group is not being stopped. */
    private readonly onUnexpectedExit: (name: string, how: string) => void = () => undefined,
  ) {}

  get pidFile(): string {
    return path.join(this.dir, 'pids.json');
  }

  /** Ends processes a previous emulator left behind in this folder (pid, start time and binary all match). */
  reapLeftovers(): void {
    let recorded: { pid: number; exe: string; procStart: string }[] = [];
    try {
      recorded = JSON.parse(fs.readFileSync(this.pidFile, 'utf8')) as typeof recorded;
    } catch {
      return;
    }
    for (const r of recorded) {
      if (procStart(r.pid) !== r.procStart || !cmdline(r.pid).startsWith(r.exe)) continue;
      this.log(`ending ${path.basename(r.exe)} (pid ${r.pid}) left running by a previous emulator`);
      try {
        process.kill(r.pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    fs.rmSync(this.pidFile, { force: true });
  }

  start(name: string, exe: string, args: string[], env: NodeJS.ProcessEnv = {}): ManagedProcess {
    const logDir = path.join(this.dir, 'logs');
    fs.mkdirSync(logDir, { recursive: true, mode: 0o700 });
    const logFile = path.join(logDir, `${name}.log`);
    const fd = fs.openSync(logFile, 'a', 0o600);
    // The emulator's environment (a shell's HF_TOKEN, cloud credentials) is none of theirs.
    const child = spawn(exe, args, { stdio: ['ignore', fd, fd], env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: this.dir, ...env } });
    fs.closeSync(fd);
    const exited = new Promise<string>((resolve) => {
      child.once('error', (e) => resolve(`failed to start: ${e.message}`));
      child.once('exit', (code, signal) => resolve(signal ?? `exit code ${code}`));
    });
    const proc = { name, child, logFile, exited };
    this.procs.push(proc);
    void exited.then((how) => {
      if (!this.stopping) {
        this.log(`${name} exited unexpectedly (${how}); its log: ${logFile}`);
        this.onUnexpectedExit(name, how);
      }
    });
    this.writePidFile();
    return proc;
  }

  /** A process that has exited (while the group was not stopping), with how. */
  deadOne(): { name: string; how: string; logFile: string } | undefined {
    const p = this.procs.find((x) => x.child.exitCode !== null || x.child.signalCode !== null);
    return p ? { name: p.name, how: p.child.signalCode ?? `exit code ${p.child.exitCode}`, logFile: p.logFile } : undefined;
  }

  /** Pid and resident memory (bytes) of each process, from /proc. */
  memory(): { name: string; pid: number; rssBytes: number }[] {
    return this.procs
      .filter((p) => p.child.pid !== undefined && p.child.exitCode === null)
      .map((p) => ({ name: p.name, pid: p.child.pid ?? 0, rssBytes: rssOf(p.child.pid ?? 0) }));
  }

  /** Stops every process, last started first (the API server before etcd). */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const p of [...this.procs].reverse()) {
      if (p.child.exitCode !== null || p.child.signalCode !== null) continue;
      p.child.kill('SIGTERM');
      const timer = setTimeout(() => p.child.kill('SIGKILL'), STOP_GRACE_MS);
      await p.exited;
      clearTimeout(timer);
    }
    this.procs.length = 0;
    fs.rmSync(this.pidFile, { force: true });
  }

  private writePidFile(): void {
    const rows = this.procs
      .filter((p) => p.child.pid !== undefined)
      .map((p) => ({ pid: p.child.pid ?? 0, exe: p.child.spawnfile, procStart: procStart(p.child.pid ?? 0) }));
    fs.writeFileSync(this.pidFile, JSON.stringify(rows), { mode: 0o600 });
  }
}

/**
 * Ports for one start's listeners, each free on `host` when picked and never handed out twice (the kernel may
 * give a just-closed port again). Listeners bind the cluster's own loopback address, where no other program's
 * outgoing connections or wildcard-free listeners can take the port between the pick and the bind.
 */
export class PortPicker {
  private readonly given = new Set<number>();

  constructor(readonly host: string) {}

  async pick(): Promise<number> {
    for (;;) {
      const p = await freePort(this.host);
      if (!this.given.has(p)) {
        this.given.add(p);
        return p;
      }
    }
  }
}

/** Whether `port` on `host` can be bound now (to keep a cluster's endpoint across restarts). */
export function portIsFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

function procStart(pid: number): string {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
  } catch {
    return '';
  }
}

function cmdline(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '';
  } catch {
    return '';
  }
}

function rssOf(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}
