import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * Child processes of an e2e test, each started in its own process group so that stopping it also
 * stops everything it spawned (code-server's extension host, the emulator's worker shells, the
 * trainer). `sweep` then kills anything still carrying the test's unique TPW_HOME in its
 * environment: detached daemons (the emulator) and the runs they started escape the groups.
 */
export interface Tracked {
  name: string;
  child: ChildProcess;
  logFile: string;
  exited: Promise<number | null>;
}

export class ProcessTracker {
  private readonly procs: Tracked[] = [];

  constructor(private readonly logDir: string) {
    fs.mkdirSync(logDir, { recursive: true });
  }

  spawn(name: string, command: string, args: string[], opts: SpawnOptions = {}): Tracked {
    const logFile = path.join(this.logDir, `${name}.log`);
    const fd = fs.openSync(logFile, 'a');
    const child = spawn(command, args, { ...opts, detached: true, stdio: ['ignore', fd, fd] });
    fs.closeSync(fd);
    const exited = new Promise<number | null>((resolve) => {
      child.once('exit', (code) => resolve(code));
      child.once('error', () => resolve(null));
    });
    const t = { name, child, logFile, exited };
    this.procs.push(t);
    return t;
  }

  /** Runs a command to completion (e.g. `tpw emulator start`), failing with its output on a non-zero exit. */
  run(name: string, command: string, args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {}): string {
    const r = spawnSync(command, args, { env: opts.env, cwd: opts.cwd, encoding: 'utf8', timeout: opts.timeoutMs ?? 120_000 });
    const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
    fs.appendFileSync(path.join(this.logDir, `${name}.log`), `$ ${command} ${args.join(' ')}\n${out}\n`);
    if (r.status !== 0) throw new Error(`${name} failed (exit ${r.status ?? r.signal ?? r.error?.message}):\n${out}`);
    return out;
  }

  /** Stops every tracked process group: SIGTERM, then SIGKILL after `graceMs`. */
  async stopAll(graceMs = 5000): Promise<void> {
    const live = this.procs.filter((p) => p.child.exitCode === null && p.child.signalCode === null && p.child.pid !== undefined);
    for (const p of live) killGroup(p.child.pid!, 'SIGTERM');
    await Promise.race([Promise.all(live.map((p) => p.exited)), delay(graceMs)]);
    for (const p of live) killGroup(p.child.pid!, 'SIGKILL');
  }
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

/** Pids of processes (other than this one) whose environment contains `NAME=value`. */
export function pidsWithEnv(name: string, value: string): number[] {
  const needle = Buffer.from(`${name}=${value}\0`);
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    try {
      const env = fs.readFileSync(`/proc/${pid}/environ`);
      if (env.indexOf(needle) >= 0) pids.push(pid);
    } catch {
      // exited, or not ours to read
    }
  }
  return pids;
}

/** Kills every process carrying `NAME=value` (SIGTERM, then SIGKILL); returns how many were found. */
export async function sweep(name: string, value: string, graceMs = 3000): Promise<number> {
  const pids = pidsWithEnv(name, value);
  for (const pid of pids) killGroup(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && pidsWithEnv(name, value).length > 0) await delay(100);
  const left = pidsWithEnv(name, value);
  for (const pid of left) killGroup(pid, 'SIGKILL');
  return pids.length;
}

export function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
