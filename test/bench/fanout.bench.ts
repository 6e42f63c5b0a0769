/**
 * Fan-out benchmark: what it costs to reach 4 workers at once, ours against the OpenSSH tools measured in
 * the same process, on the same servers, interleaved rep by rep (so load on the machine hits both alike).
 *
 *   1. Run fan-out: start → all exited for `true` on 4 workers, through the run engine users run
 *      (core/run/engine.ts: startDetached, then attachRun following every worker's log to its exit code, as
 *      `tpw run` and "Run on TPU" do after the sync) over one ConnectionManager, the process's connection owner
 *      (cold: a new owner per rep, as a fresh `tpw run`; warm: one owner, already connected, as the extension
 *      host keeps it), against 4 real OpenSSH sshd (127.0.4.x) and the emulator's SshWorkerPool (127.0.5.x,
 *      hosted in a child process as `tpw emulator start` would). Peers: the OpenSSH client, `ssh ... host true`
 *      ×4 in parallel: cold with its defaults, cold with the algorithms ssh2 negotiates, and warm through a
 *      ControlMaster. Diagnostic rows: one bare exec per worker over our ConnectionManager (no run folder, no
 *      process group), to split SSH cost from the engine's.
 *   2. Workspace sync: the pipeline's sync step, deltaSync (core/sync/delta.ts: manifest, then one tar stream
 *      per worker of what differs) for a synthetic 500-file, ~18 MiB workspace to the 4 sshd workers, into an
 *      empty destination and again with nothing changed. Peers: `tar -cf - | ssh host 'tar -xf -'` ×4 and
 *      `rsync -a -e ssh` ×4 (into an empty destination, and again with nothing changed).
 *
 *   node --import tsx test/bench/fanout.bench.ts    (or: bash scripts/bench.sh fanout)
 *   env: BENCH_REPS (15), BENCH_SYNC_REPS (7), BENCH_LOGIN_RC=1 (keep ~/.bashrc in sshd sessions),
 *        BENCH_VERBOSE=1 (every sample on stderr)
 *
 * Prints markdown tables; writes every sample to test-artifacts/bench/fanout.json.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { buffer } from 'node:stream/consumers';
import { attachRun, startDetached } from '../../extension/src/core/run/engine';
import { ConnectionManager } from '../../extension/src/core/ssh/connection';
import { execCollect } from '../../extension/src/core/ssh/exec';
import type { WorkerTarget } from '../../extension/src/core/ssh/types';
import { runProgram } from '../helpers/process';
import { deltaSync } from '../../extension/src/core/sync/delta';
import { tarStream } from '../../extension/src/core/sync/tar';
import { listWorkspaceFiles } from '../../extension/src/core/sync/workspace-files';
import type { HostConfig } from './emulator-workers-host';
import { markdown, measure, measureSync, report, type Ratio, type Row, type Variant } from './interleaved-timing';
import { descendants, freePort, makeKeyPair, sshdAvailable, startSshd, type SshdInstance } from '../helpers/sshd';

const REPS = Number(process.env.BENCH_REPS ?? 15);
const SYNC_REPS = Number(process.env.BENCH_SYNC_REPS ?? 7);
const KEEP_LOGIN_RC = process.env.BENCH_LOGIN_RC === '1';
const WORKERS = 4;
const WS_FILES = 500;
const OUT_FILE = path.resolve(__dirname, '..', '..', 'test-artifacts', 'bench', 'fanout.json');

// ---------------------------------------------------------------------------------------------- helpers

/** Fixed options of every `ssh` call: key only, no config file, no host-key prompts (throwaway servers). */
function sshOpts(keyFile: string, port: number, extra: string[] = []): string[] {
  return ['-F', '/dev/null', '-i', keyFile, '-o', 'IdentitiesOnly=yes', '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR', '-p', String(port), ...extra];
}

function machine(): Record<string, string | number> {
  let model = os.cpus()[0]?.model ?? 'unknown';
  try {
    const m = /Model name:\s*(.+)/.exec(execFileSync('lscpu', { encoding: 'utf8' }));
    if (m) model = m[1].trim();
  } catch {
    // no lscpu
  }
  // `ssh -V` answers on stderr, `rsync --version` on stdout.
  const ver = (cmd: string, args: string[]) => {
    const r = spawnSync(cmd, args, { encoding: 'utf8' });
    if (r.error) return 'unavailable';
    return `${r.stdout ?? ''}${r.stderr ?? ''}`.split('\n')[0].replace(/\s+/g, ' ').trim();
  };
  return {
    cpus: Number(execFileSync('nproc', { encoding: 'utf8' }).trim()),
    cpuModel: model,
    memGiB: Math.round(os.totalmem() / 2 ** 30),
    kernel: os.release(),
    node: process.version,
    openssh: ver('ssh', ['-V']),
    rsync: ver('rsync', ['--version']),
  };
}

// ---------------------------------------------------------------------------------------------- targets

interface Target {
  name: string;
  workers: WorkerTarget[];
  keyFile: string;
  /** Run folder root per worker (sshd workers share one filesystem); undefined: the default under $HOME. */
  runsRoot?: (w: WorkerTarget) => string;
  cwd: string;
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-bench-'));
const knownHostsPath = path.join(tmp, 'known_hosts');
const cleanups: Array<() => Promise<void> | void> = [];
const managers: ConnectionManager[] = [];

function manager(): ConnectionManager {
  // As the pipeline makes it (accept-new), with its own known_hosts so the user's is never touched.
  const m = new ConnectionManager({ hostKeyPolicy: 'accept-new', knownHostsPath });
  managers.push(m);
  return m;
}

async function sshdTarget(): Promise<Target> {
  const keyFile = path.join(tmp, 'client_key');
  makeKeyPair(keyFile, 'tpw-bench');
  const sshds: SshdInstance[] = [];
  cleanups.push(() => Promise.all(sshds.map((s) => s.stop())).then(() => undefined));
  // sshd runs every exec as `$SHELL -c CMD`, and Debian's bash then sources ~/.bashrc (it sees SSH_CLIENT). On
  // a dev box that rc may be slow (here: `pyenv init`, ~0.5 s of CPU per session) and would swamp what we
  // measure, for ours and the peer alike. SHLVL=1 makes that bash a nested shell, which skips the rc.
  // BENCH_LOGIN_RC=1 keeps the login user's rc, to see what a heavy rc costs.
  const extraConfig = KEEP_LOGIN_RC ? [] : ['SetEnv SHLVL=1'];
  for (let i = 1; i <= WORKERS; i++) sshds.push(await startSshd({ host: `127.0.4.${i}`, clientKeyFile: keyFile, extraConfig }));
  const privateKey = fs.readFileSync(keyFile, 'utf8');
  return {
    name: `OpenSSH sshd ×${WORKERS}`,
    workers: sshds.map((s, index) => ({ host: s.host, port: s.port, username: s.username, privateKey, index })),
    keyFile,
    runsRoot: (w) => path.join(tmp, `sshd-w${w.index}`, 'runs'),
    cwd: tmp,
  };
}

async function emulatorTarget(): Promise<Target> {
  const hostKeyFile = path.join(tmp, 'emu_host_key');
  const keyFile = path.join(tmp, 'emu_client_key');
  makeKeyPair(hostKeyFile, 'tpw-bench-emu-host');
  makeKeyPair(keyFile, 'tpw-bench-emu-client');
  const username = os.userInfo().username;
  const addresses = Array.from({ length: WORKERS }, (_, i) => `127.0.5.${i + 1}`);
  const port = await freePort(addresses[0]);
  const cfg: HostConfig = { port, hostKeyFile, authorizedKeyFile: `${keyFile}.pub`, username, addresses, sandboxRoot: path.join(tmp, 'emu') };
  // In a process of its own, as `tpw emulator start` runs it: not on the event loop of the client we time.
  const child = spawn(process.execPath, [...process.execArgv, path.join(__dirname, 'emulator-workers-host.ts'), JSON.stringify(cfg)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  cleanups.push(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.includes('ready\n')) resolve();
    });
    void exited.then(() => reject(new Error(`the emulator host exited before it was ready: ${out}`)));
  });
  const privateKey = fs.readFileSync(keyFile, 'utf8');
  return { name: `emulator SshWorkerPool ×${WORKERS}`, workers: addresses.map((host, index) => ({ host, port, username, privateKey, index })), keyFile, cwd: '.' };
}

// ---------------------------------------------------------------------------------------------- 1. fan-out

let runSeq = 0;

/** What `tpw run` does once the workspace is synced: start on every worker, follow every log to its exit code. */
async function ourRun(t: Target, conns: ConnectionManager): Promise<void> {
  const runId = `bench-${process.pid}-${++runSeq}-${crypto.randomBytes(2).toString('hex')}`;
  await startDetached({ runId, workers: t.workers, argv: ['true'], cwd: t.cwd, env: {} }, conns, { runsRoot: t.runsRoot });
  const r = await attachRun(runId, t.workers, conns, {}, { runsRoot: t.runsRoot }).result;
  if (!r.ok) throw new Error(`run ${runId} on ${t.name} failed: ${JSON.stringify(r.workers)}`);
}

/**
 * One exec per worker and nothing else (no run folder, no process group): what the SSH layer alone costs.
 * The command waits for our stdin EOF before it exits: for a bare `true`, ssh2 can deliver the exit status in
 * the same tick as the exec reply, before execCollect listens (about 1 exec in 30 here comes back as "lost").
 */
const BARE = 'read -r _; true';

async function ourBareExec(t: Target, conns: ConnectionManager): Promise<void> {
  await Promise.all(
    t.workers.map(async (w) => {
      const out = await execCollect(await conns.get(w), BARE);
      if (out.code !== 0) throw new Error(`true on ${w.host} → ${out.code}: ${out.stderr}`);
    }),
  );
}

/**
 * OpenSSH's defaults (sntrup761x25519 key exchange, chacha20-poly1305) are not what ssh2 negotiates with the
 * same server (curve25519-sha256, aes128-gcm): this peer uses ssh2's choice, to compare implementations alone.
 */
const SAME_ALGOS = ['-o', 'KexAlgorithms=curve25519-sha256@libssh.org', '-o', 'Ciphers=aes128-gcm@openssh.com'];

function sshAll(t: Target, extra: string[] = []): Promise<void> {
  return Promise.all(t.workers.map((w) => runProgram('ssh', [...sshOpts(t.keyFile, w.port, extra), `${w.username}@${w.host}`, 'true']))).then(() => undefined);
}

function fanoutVariants(t: Target): Variant[] {
  const warm = manager();
  const cm = path.join(tmp, `cm-%C`);
  const cmOpts = ['-o', 'ControlMaster=auto', '-o', `ControlPath=${cm}`, '-o', 'ControlPersist=300'];
  cleanups.push(async () => {
    await Promise.all(t.workers.map((w) => runProgram('ssh', [...sshOpts(t.keyFile, w.port, cmOpts), '-O', 'exit', `${w.username}@${w.host}`]).catch(() => undefined)));
  });
  const cold = async (fn: (c: ConnectionManager) => Promise<void>) => {
    const c = manager();
    try {
      await fn(c);
    } finally {
      c.dispose();
    }
  };
  return [
    { name: 'ours: run (start + follow), cold connections', kind: 'ours', vs: 'peer: ssh ×4, cold', once: () => cold((c) => ourRun(t, c)), samples: [] },
    { name: 'ours: run (start + follow), warm connections', kind: 'ours', vs: 'peer: ssh ×4, ControlMaster (warm)', once: () => ourRun(t, warm), samples: [] },
    { name: 'peer: ssh ×4, cold', kind: 'peer', once: () => sshAll(t), samples: [] },
    { name: 'peer: ssh ×4, ControlMaster (warm)', kind: 'peer', once: () => sshAll(t, cmOpts), samples: [] },
    { name: 'peer: ssh ×4, cold, ssh2’s algorithms', kind: 'peer', once: () => sshAll(t, SAME_ALGOS), samples: [] },
    { name: 'diag: bare exec (`read -r _; true`), cold connections', kind: 'diagnostic', vs: 'peer: ssh ×4, cold', once: () => cold((c) => ourBareExec(t, c)), samples: [] },
    { name: 'diag: bare exec (`read -r _; true`), warm connections', kind: 'diagnostic', vs: 'peer: ssh ×4, ControlMaster (warm)', once: () => ourBareExec(t, warm), samples: [] },
  ];
}

// ---------------------------------------------------------------------------------------------- 2. sync

/** Deterministic bytes: text-like for sources, incompressible for data (nothing here compresses anyway). */
function makeWorkspace(root: string): { files: number; bytes: number } {
  let seed = 0x5eed;
  const rand = () => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return seed / 2 ** 32;
  };
  const line = 'def step(batch, state):  # synthetic source line for the sync benchmark\n';
  const text = (n: number) => Buffer.from(line.repeat(Math.ceil(n / line.length)).slice(0, n));
  const plan: Array<[string, number, 'text' | 'bin']> = [];
  for (let i = 0; i < 380; i++) plan.push([`src/pkg${i % 19}/mod_${i}.py`, 1024 + Math.floor(rand() * 11 * 1024), 'text']);
  for (let i = 0; i < 100; i++) plan.push([`configs/group${i % 10}/c_${i}.yaml`, 512 + Math.floor(rand() * 3584), 'text']);
  for (let i = 0; i < 16; i++) plan.push([`data/shard_${i}.bin`, 200 * 1024 + Math.floor(rand() * 400 * 1024), 'bin']);
  for (let i = 0; i < 4; i++) plan.push([`checkpoints/init_${i}.pt`, 2560 * 1024, 'bin']);
  let bytes = 0;
  for (const [rel, size, kind] of plan) {
    const abs = path.join(root, rel);
    fs.mkdirSync(path.dirname(abs), { recursive: true });
    fs.writeFileSync(abs, kind === 'text' ? text(size) : crypto.randomBytes(size));
    bytes += size;
  }
  return { files: plan.length, bytes };
}

function countFiles(dir: string): number {
  let n = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) if (e.isFile()) n++;
  return n;
}

function syncVariants(t: Target, ws: string, rsyncOk: boolean): { variants: Variant[]; check: () => void } {
  const dest = (tag: string, w: WorkerTarget) => path.join(tmp, 'sync', tag, `w${w.index}`, 'ws');
  const sshCmd = (w: WorkerTarget, extra: string[] = []) => ['ssh', ...sshOpts(t.keyFile, w.port, extra)].join(' ');
  const tarSsh = (tag: string, extra: string[] = []) =>
    Promise.all(
      t.workers.map((w) => {
        const d = dest(tag, w);
        return runProgram('bash', ['-c', `set -o pipefail; tar -cf - -C ${ws} . | ${sshCmd(w, extra)} ${w.username}@${w.host} 'mkdir -p ${d} && tar -xf - -C ${d}'`]);
      }),
    ).then(() => undefined);
  const rsyncTo = (tag: string) => Promise.all(t.workers.map((w) => runProgram('rsync', ['-a', '-e', sshCmd(w), `${ws}/`, `${w.username}@${w.host}:${dest(tag, w)}/`]))).then(() => undefined);
  // The pipeline's sync step, as runRecipe calls it, over a new owner (a fresh `tpw run`: cold connections).
  const ourSync = (tag: string) => async () => {
    const conns = manager();
    try {
      await deltaSync({ root: ws, files: listWorkspaceFiles(ws).files, dest: (w) => dest(tag, w), workers: t.workers, conns, home: path.join(tmp, 'tpw-home') });
    } finally {
      conns.dispose();
    }
  };
  const variants: Variant[] = [
    { name: 'ours: deltaSync ×4, into empty dest', kind: 'ours', vs: 'peer: tar | ssh tar -x ×4', once: ourSync('ours-full'), samples: [] },
    { name: 'ours: deltaSync ×4, nothing changed', kind: 'ours', once: ourSync('ours-same'), samples: [] },
    { name: 'peer: tar | ssh tar -x ×4', kind: 'peer', once: () => tarSsh('tar'), samples: [] },
    { name: 'peer: tar | ssh tar -x ×4, ssh2’s algorithms', kind: 'peer', once: () => tarSsh('tar-same', SAME_ALGOS), samples: [] },
  ];
  if (rsyncOk) {
    variants.push(
      // A first sync: the destination is emptied (untimed) before each rep.
      { name: 'peer: rsync -a -e ssh ×4, into empty dest', kind: 'peer', once: () => rsyncTo('rsync-full'), samples: [] },
      // The common case of "Run" pressed again: nothing changed since the last sync.
      { name: 'peer: rsync -a -e ssh ×4, nothing changed', kind: 'peer', once: () => rsyncTo('rsync-same'), samples: [] },
    );
  }
  const check = () => {
    for (const tag of ['ours-full', 'ours-same', 'tar', 'tar-same', ...(rsyncOk ? ['rsync-full', 'rsync-same'] : [])]) {
      for (const w of t.workers) {
        const n = countFiles(dest(tag, w));
        if (n !== WS_FILES) throw new Error(`sync check: ${tag} put ${n} files on worker ${w.index}, expected ${WS_FILES}`);
      }
    }
  };
  return { variants, check };
}

// ---------------------------------------------------------------------------------------------- main

async function main(): Promise<void> {
  if (!sshdAvailable()) throw new Error('This benchmark needs OpenSSH sshd at /usr/sbin/sshd (apt-get install openssh-server).');
  const rsyncOk = (() => {
    try {
      execFileSync('rsync', ['--version'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  })();
  const t0 = performance.now();
  const rows: Row[] = [];
  const ratios: Ratio[] = [];
  const info = machine();
  const loadBefore = os.loadavg().map((x) => Math.round(x * 100) / 100);
  const log = (m: string) => process.stderr.write(`[bench ${((performance.now() - t0) / 1000).toFixed(1)}s] ${m}\n`);

  const sshd = await sshdTarget();
  const emu = await emulatorTarget();
  log(`servers up: ${sshd.workers.map((w) => `${w.host}:${w.port}`).join(' ')} | emulator ${emu.workers.map((w) => w.host).join(' ')}:${emu.workers[0].port}`);

  for (const t of [sshd, emu]) {
    const variants = fanoutVariants(t);
    await measure(variants, REPS);
    report('fan-out `true`', t.name, variants, [['ours: run (start + follow), cold connections', 'peer: ssh ×4, cold, ssh2’s algorithms'], ['ours: run (start + follow), warm connections', 'peer: ssh ×4, cold']], rows, ratios);
    log(`fan-out on ${t.name} done`);
  }

  const ws = path.join(tmp, 'workspace');
  const shape = makeWorkspace(ws);
  const listed = listWorkspaceFiles(ws).files.length;
  if (listed !== WS_FILES || shape.files !== WS_FILES) throw new Error(`workspace: made ${shape.files}, listed ${listed}, expected ${WS_FILES}`);
  const archiveBytes = (await buffer(tarStream(listWorkspaceFiles(ws).files))).length;
  const sync = syncVariants(sshd, ws, rsyncOk);
  // rsync -a creates the last folder of the destination, not its parents (as on a fresh VM: home exists).
  for (const w of sshd.workers) for (const tag of ['rsync-full', 'rsync-same']) fs.mkdirSync(path.join(tmp, 'sync', tag, `w${w.index}`), { recursive: true });
  const emptyFull = async (v: Variant) => {
    // deltaSync keeps its record of the copy beside it (`<dest>.manifest`): a fresh worker has neither.
    const [tag, names] = v.kind === 'ours' ? ['ours-full', ['ws', 'ws.manifest']] : ['rsync-full', ['ws']];
    for (const w of sshd.workers) for (const f of names) fs.rmSync(path.join(tmp, 'sync', tag, `w${w.index}`, f), { recursive: true, force: true });
  };
  await measureSync(sync.variants, SYNC_REPS, emptyFull);
  sync.check();
  const syncTarget = `${sshd.name}; ${shape.files} files, ${(shape.bytes / 2 ** 20).toFixed(1)} MiB`;
  const [ours, oursSame] = sync.variants.map((v) => v.name);
  report('workspace sync', syncTarget, sync.variants, [[ours, 'peer: tar | ssh tar -x ×4, ssh2’s algorithms'], ...(rsyncOk ? ([[ours, 'peer: rsync -a -e ssh ×4, into empty dest'], [oursSame, 'peer: rsync -a -e ssh ×4, nothing changed']] as Array<[string, string]>) : [])], rows, ratios);
  log('sync done');

  const md = markdown(rows, ratios);
  const loadAfter = os.loadavg().map((x) => Math.round(x * 100) / 100);
  process.stdout.write(`\n${md}\n\n`);
  process.stdout.write(`machine: ${info.cpus} CPUs, ${info.cpuModel}, ${info.memGiB} GiB, Linux ${info.kernel}, Node ${info.node}, ${info.openssh}, ${info.rsync}\n`);
  process.stdout.write(`load average (1/5/15 min): before ${loadBefore.join(' ')}, after ${loadAfter.join(' ')}\n`);
  process.stdout.write(`workspace: ${shape.files} files, ${shape.bytes} bytes (our tar: ${archiveBytes} bytes); reps: fan-out ${REPS}, sync ${SYNC_REPS}; total ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
  fs.mkdirSync(path.dirname(OUT_FILE), { recursive: true });
  fs.writeFileSync(
    OUT_FILE,
    JSON.stringify(
      {
        bench: 'fanout',
        date: new Date().toISOString(),
        command: 'node --import tsx test/bench/fanout.bench.ts',
        machine: { ...info, loadBefore, loadAfter },
        config: { workers: WORKERS, reps: REPS, syncReps: SYNC_REPS, loginRc: KEEP_LOGIN_RC, workspace: { ...shape, tarBytes: archiveBytes }, rsync: rsyncOk },
        rows,
        ratios,
        markdown: md,
        totalSeconds: Math.round((performance.now() - t0) / 100) / 10,
      },
      null,
      2,
    ) + '\n',
  );
  process.stdout.write(`wrote ${path.relative(process.cwd(), OUT_FILE)}\n`);
}

async function cleanup(): Promise<void> {
  for (const m of managers) m.dispose();
  for (const c of cleanups.reverse()) {
    try {
      await c();
    } catch (e) {
      process.stderr.write(`cleanup: ${(e as Error).message}\n`);
    }
  }
  // Anything we spawned that is still around (an ssh ControlMaster that ignored -O exit) goes too.
  for (const pid of descendants(process.pid)) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // gone
    }
  }
  fs.rmSync(tmp, { recursive: true, force: true });
}

let cleaning: Promise<void> | undefined;
const once = () => (cleaning ??= cleanup());
process.once('SIGINT', () => void once().then(() => process.exit(130)));
process.once('SIGTERM', () => void once().then(() => process.exit(143)));

main().then(
  () => once(),
  async (e: unknown) => {
    process.stderr.write(`bench failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    await once();
    process.exitCode = 1;
  },
);
