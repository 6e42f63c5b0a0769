import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { generateEd25519KeyPair } from '../../extension/src/core/ssh/keys';
import { SshWorkerPool } from '../../extension/src/core/emulator/ssh-workers';
import { isTpwError } from '../../extension/src/core/errors';
import { formatRunSummary, prefixLine, startRun } from '../../extension/src/core/run/runner';
import type { OutputStream, RunResult, RunSpec, WorkerResult } from '../../extension/src/core/run/types';
import { ConnectionManager } from '../../extension/src/core/ssh/connection';
import { LineSplitter, execCollect } from '../../extension/src/core/ssh/exec';
import type { WorkerTarget } from '../../extension/src/core/ssh/types';
import { freePort, startSshd, sshdAvailable, type SshdInstance } from '../helpers/sshd';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-fanout-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));
const username = os.userInfo().username;

/** Pids whose environment holds `needle` (e.g. TPW_RUN_ID=<id>): every process a run started carries it. */
function processesWithEnv(needle: string): number[] {
  const want = Buffer.from(`\0${needle}\0`);
  const pids: number[] = [];
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const env = Buffer.concat([Buffer.from([0]), fs.readFileSync(`/proc/${e}/environ`)]);
      if (env.includes(want)) pids.push(Number(e));
    } catch {
      // gone or unreadable
    }
  }
  return pids;
}

/**
 * True if the process group has a live (non-zombie) member. Zombies are dead: they only wait for init to
 * reap them, which in some containers never happens.
 */
function groupAlive(pgid: number): boolean {
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(pgrp) === pgid && state !== 'Z') return true;
    } catch {
      // gone
    }
  }
  return false;
}

async function waitFor(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface Collected {
  lines: Array<{ worker: number; stream: OutputStream; line: string }>;
  exits: WorkerResult[];
}

function collector(): Collected & { listener: { onLine(w: number, s: OutputStream, l: string): void; onWorkerExit(r: WorkerResult): void } } {
  const c: Collected = { lines: [], exits: [] };
  return {
    ...c,
    listener: {
      onLine: (worker, stream, line) => c.lines.push({ worker, stream, line }),
      onWorkerExit: (r) => c.exits.push(r),
    },
  };
}

function newRunId(tag: string): string {
  return `t-${tag}-${crypto.randomBytes(4).toString('hex')}`;
}

/** A fleet of 4 workers: real OpenSSH sshd instances or the emulator's ssh2 servers. */
interface Fleet {
  name: string;
  emulated: boolean;
  workers: WorkerTarget[];
  runsRoot?: (w: WorkerTarget) => string;
  /** Where a worker's run folder is on this machine (all "workers" are local). */
  runDir(index: number, runId: string): string;
  stop(): Promise<void>;
}

async function sshdFleet(): Promise<Fleet & { sshds: SshdInstance[] }> {
  const sshds = await Promise.all([1, 2, 3, 4].map((i) => startSshd({ host: `127.0.2.${i}` })));
  const root = (i: number) => path.join(tmp, `sshd-w${i}`, 'runs');
  return {
    name: 'OpenSSH sshd ×4 (127.0.2.x)',
    emulated: false,
    sshds,
    workers: sshds.map((s, index) => ({ host: s.host, port: s.port, username: s.username, privateKey: s.privateKey, index })),
    // Four "hosts" that share one filesystem (and root's $HOME) need one runs folder each.
    runsRoot: (w) => root(w.index),
    runDir: (i, runId) => path.join(root(i), runId),
    stop: async () => {
      await Promise.all(sshds.map((s) => s.stop()));
    },
  };
}

async function emulatorFleet(): Promise<Fleet & { pool: SshWorkerPool; port: number; clientKey: string }> {
  const hostKey = generateEd25519KeyPair();
  const clientKey = generateEd25519KeyPair();
  const addresses = [1, 2, 3, 4].map((i) => `127.0.3.${i}`);
  const port = await freePort(addresses[0]);
  const pool = new SshWorkerPool({ port, hostKey: hostKey.private, authorizedKey: clientKey.public, username });
  const sandbox = (i: number) => path.join(tmp, 'emu', `w${i}`);
  for (const [index, address] of addresses.entries()) {
    await pool.addWorker({ nodeId: 'node-a', index, address, hostnames: addresses, sandboxDir: sandbox(index), acceleratorType: 'v4-32' });
  }
  return {
    name: 'emulator SshWorkerPool ×4 (127.0.3.x)',
    emulated: true,
    pool,
    port,
    clientKey: clientKey.private,
    workers: addresses.map((host, index) => ({ host, port, username, privateKey: clientKey.private, index })),
    runDir: (i, runId) => path.join(sandbox(i), '.tpw', 'runs', runId),
    stop: () => pool.close(),
  };
}

function assertNothingSurvives(fleet: Fleet, runId: string): void {
  for (const w of fleet.workers) {
    const pidFile = path.join(fleet.runDir(w.index, runId), 'pid');
    if (!fs.existsSync(pidFile)) continue; // never started there
    const pgid = Number(fs.readFileSync(pidFile, 'utf8').trim());
    assert.ok(pgid > 1, `pid file of worker ${w.index} holds a pgid`);
    assert.equal(groupAlive(pgid), false, `process group ${pgid} of worker ${w.index} is gone`);
  }
  assert.deepEqual(processesWithEnv(`TPW_RUN_ID=${runId}`), [], 'no process of the run survives');
}

const SLEEPER = 'sleep 1000 & sleep 1000; wait';

for (const make of [sshdFleet, emulatorFleet]) {
  describe(`runner against ${make === sshdFleet ? 'real sshd' : 'the emulator'}`, () => {
    before(() => assert.ok(make !== sshdFleet || sshdAvailable(), 'OpenSSH sshd is missing at /usr/sbin/sshd: run bash scripts/setup.sh'));
    let fleet: Fleet;
    let conns: ConnectionManager;
    const spec = (runId: string, argv: string[], extra: Partial<RunSpec> = {}): RunSpec => ({
      runId,
      workers: fleet.workers,
      argv,
      cwd: tmp,
      env: {},
      stopGraceMs: 1000,
      ...extra,
    });

    before(async () => {
      fleet = await make();
      conns = new ConnectionManager({ knownHostsPath: path.join(tmp, `known_hosts-${fleet.emulated ? 'emu' : 'sshd'}`) });
    });
    after(async () => {
      conns?.dispose();
      await fleet?.stop();
    });

    it('streams every worker’s lines with its index; env reaches the program through a 0600 file, never argv', async () => {
      const runId = newRunId('ok');
      const secret = `hunter2-${crypto.randomBytes(8).toString('hex')}`;
      const hostile = ["it's", '$(touch /tmp/x)', '*', '', '-n'];
      const c = collector();
      const program = [
        'echo "hello from $TPW_WORKER_INDEX tpu=${TPU_WORKER_ID:-none} hosts=${TPU_WORKER_HOSTNAMES:-none}"',
        'echo "to stderr" >&2',
        'echo "env-mode=$(stat -c %a "$TPW_RUN_DIR/env")"',
        'echo "secret-sha=$(printf %s "$TPW_SECRET" | sha256sum | cut -d" " -f1)"',
        'echo "multi=[$MULTI]"',
        'printf "arg=<%s>\\n" "$@"',
        'echo ready; sleep 1.5',
      ].join('\n');
      const handle = startRun(spec(runId, ['bash', '-c', program, 'argv0', ...hostile], { env: { TPW_SECRET: secret, MULTI: "a'b\nc" } }), c.listener, conns, {
        runsRoot: fleet.runsRoot,
      });
      await waitFor(() => c.lines.filter((l) => l.line === 'ready').length === 4, 15_000, 'all workers ready');
      // While every program runs: the secret is in no process's argv on this machine.
      const ps = execFileSync('ps', ['-eww', '-o', 'args'], { encoding: 'utf8' });
      assert.ok(ps.includes('sleep 1.5'), 'the programs are running while we look');
      assert.equal(ps.includes(secret), false, 'secret not visible in ps');
      const result = await handle.result;

      assert.equal(result.ok, true, formatRunSummary(result));
      assert.deepEqual(result.workers.map((w) => [w.index, w.exitCode, w.stopped]), [0, 1, 2, 3].map((i) => [i, 0, false]));
      assert.match(formatRunSummary(result), new RegExp(`^run ${runId}: 4/4 workers ok in \\d+\\.\\ds — w0=0 w1=0 w2=0 w3=0$`));
      assert.equal(c.exits.length, 4);
      const sha = crypto.createHash('sha256').update(secret).digest('hex');
      for (const w of fleet.workers) {
        const mine = c.lines.filter((l) => l.worker === w.index);
        const tpu = fleet.emulated ? String(w.index) : 'none';
        const hosts = fleet.emulated ? fleet.workers.map((x) => x.host).join(',') : 'none';
        assert.deepEqual(
          mine.filter((l) => l.stream === 'stdout').map((l) => l.line),
          [`hello from ${w.index} tpu=${tpu} hosts=${hosts}`, 'env-mode=600', `secret-sha=${sha}`, 'multi=[a\'b', 'c]', ...hostile.map((h) => `arg=<${h}>`), 'ready'],
        );
        const stderr = mine.filter((l) => l.stream === 'stderr').map((l) => l.line);
        // A real login may add its own noise first (root's ~/.bashrc runs for ssh commands: here, pyenv
        // rehash racing with the other sessions); the program's line must be there, once, and last.
        if (fleet.emulated) assert.deepEqual(stderr, ['to stderr']);
        else assert.deepEqual([stderr.filter((l) => l === 'to stderr').length, stderr.at(-1)], [1, 'to stderr']);
        const dir = fleet.runDir(w.index, runId);
        assert.equal(fs.readFileSync(path.join(dir, 'exit_code'), 'utf8').trim(), '0');
        assert.equal(fs.statSync(path.join(dir, 'env')).mode & 0o777, 0o600);
        assert.match(fs.readFileSync(path.join(dir, 'log'), 'utf8'), new RegExp(`hello from ${w.index}`));
      }
      assert.equal(prefixLine(3, 'x'), '[w3] x');
      assert.equal(fs.existsSync('/tmp/x'), false);
    });

    it('fail-fast: the first failing worker stops the others and exit codes are reported', async () => {
      const runId = newRunId('ff');
      const c = collector();
      const program = `if [ "$TPW_WORKER_INDEX" = 2 ]; then sleep 0.5; echo failing >&2; exit 3; fi; ${SLEEPER}`;
      const t0 = Date.now();
      const result = await startRun(spec(runId, ['bash', '-c', program]), c.listener, conns, { runsRoot: fleet.runsRoot }).result;
      assert.equal(result.ok, false);
      assert.equal(result.cancelled, false);
      const w2 = result.workers[2];
      assert.deepEqual([w2.exitCode, w2.stopped], [3, false]);
      for (const i of [0, 1, 3]) assert.equal(result.workers[i].stopped, true, `worker ${i} was stopped`);
      assert.ok(Date.now() - t0 < 10_000, 'others did not run to completion');
      const summary = formatRunSummary(result);
      assert.match(summary, /0\/4 workers ok/);
      assert.match(summary, /w0=stopped w1=stopped w2=3 \(failed\) w3=stopped$/);
      assert.ok(c.lines.some((l) => l.worker === 2 && l.stream === 'stderr' && l.line === 'failing'));
      assertNothingSurvives(fleet, runId);
    });

    it('failFast: false lets the other workers finish', async () => {
      const runId = newRunId('nff');
      const program = 'if [ "$TPW_WORKER_INDEX" = 1 ]; then exit 7; fi; sleep 0.5; echo done';
      const result = await startRun(spec(runId, ['bash', '-c', program], { failFast: false }), {}, conns, { runsRoot: fleet.runsRoot }).result;
      assert.deepEqual(result.workers.map((w) => w.exitCode), [0, 7, 0, 0]);
      assert.equal(result.workers.some((w) => w.stopped), false);
      assert.equal(result.ok, false);
    });

    it('cancel kills the whole process group on every worker, escalating to SIGKILL', async () => {
      const runId = newRunId('cancel');
      const c = collector();
      // Ignores INT and TERM (and so do its children): only the SIGKILL at the end of the grace period works.
      const program = `trap "" INT TERM; echo started; ${SLEEPER}`;
      const handle = startRun(spec(runId, ['bash', '-c', program]), c.listener, conns, { runsRoot: fleet.runsRoot });
      await waitFor(() => c.lines.filter((l) => l.line === 'started').length === 4, 15_000, 'all workers started');
      await waitFor(() => processesWithEnv(`TPW_RUN_ID=${runId}`).length >= 12, 5000, 'sleep children running');
      const t0 = Date.now();
      await handle.cancel();
      const result = await handle.result;
      assert.ok(Date.now() - t0 >= 900, 'the grace period was honoured before SIGKILL');
      assert.equal(result.cancelled, true);
      assert.equal(result.ok, false);
      assert.ok(result.workers.every((w) => w.stopped && w.exitCode !== 0), JSON.stringify(result.workers));
      assert.match(formatRunSummary(result), /cancelled after .* w0=stopped w1=stopped w2=stopped w3=stopped$/);
      assertNothingSurvives(fleet, runId);
    });

    it('start failures are explained: a run id that already ran, a missing folder', async () => {
      const runId = newRunId('twice');
      const first = await startRun(spec(runId, ['true']), {}, conns, { runsRoot: fleet.runsRoot }).result;
      assert.equal(first.ok, true, formatRunSummary(first));
      const second = await startRun(spec(runId, ['true']), {}, conns, { runsRoot: fleet.runsRoot }).result;
      assert.equal(second.ok, false);
      for (const w of second.workers) {
        assert.equal(w.exitCode, 202);
        assert.match(w.error ?? '', new RegExp(`^worker ${w.index} \\(.*\\): run ${runId} was already started on this worker \\(.*/pid exists\\)$`));
      }
      const missing = path.join(tmp, "no such ' dir");
      const third = await startRun(spec(newRunId('cwd'), ['true'], { cwd: missing, failFast: false }), {}, conns, { runsRoot: fleet.runsRoot }).result;
      for (const w of third.workers) {
        assert.equal(w.exitCode, 203);
        assert.ok(w.error?.endsWith(`: cannot change to the folder ${missing} on this worker`), w.error);
      }
    });

    it('a dropped SSH connection does not kill the program: it finishes and records log and exit code', async () => {
      const runId = newRunId('drop');
      const w = fleet.workers[0];
      const c = collector();
      const handle = startRun(
        spec(runId, ['bash', '-c', 'echo begin; sleep 1; for i in 1 2 3; do echo "line $i"; done; echo finished'], { workers: [w], failFast: false }),
        c.listener,
        conns,
        { runsRoot: fleet.runsRoot },
      );
      await waitFor(() => c.lines.some((l) => l.line === 'begin'), 15_000, 'program started');
      (await conns.get(w)).client.destroy(); // the laptop's network goes away
      const result = await handle.result;
      assert.match(result.workers[0].error ?? '', /^worker 0 \(.*\): the SSH connection was lost before the program ended/);
      assert.equal(c.lines.some((l) => l.line === 'finished'), false, 'we did not see the end over SSH');
      const dir = fleet.runDir(0, runId);
      await waitFor(() => fs.existsSync(path.join(dir, 'exit_code')), 5000, 'exit_code on the worker');
      assert.equal(fs.readFileSync(path.join(dir, 'exit_code'), 'utf8'), '0\n');
      assert.equal(fs.readFileSync(path.join(dir, 'log'), 'utf8'), 'begin\nline 1\nline 2\nline 3\nfinished\n');
    });

    it('SSH refused on one worker: a clear error, and the others are stopped', async () => {
      const deadHost = fleet.emulated ? '127.0.3.9' : '127.0.2.9';
      const deadPort = await freePort(deadHost);
      const workers = [...fleet.workers.slice(0, 3), { ...fleet.workers[3], host: deadHost, port: deadPort }];
      const runId = newRunId('refused');
      const c = collector();
      const result = await startRun({ ...spec(runId, ['bash', '-c', SLEEPER]), workers }, c.listener, conns, { runsRoot: fleet.runsRoot }).result;
      const w3 = result.workers[3];
      assert.equal(w3.exitCode, null);
      assert.equal(w3.error, `worker 3 (${deadHost}:${deadPort}): connection refused (is the VM up and sshd listening?)`);
      assert.ok(c.lines.some((l) => l.worker === 3 && l.stream === 'stderr' && l.line === `tpw: ${w3.error}`));
      for (const i of [0, 1, 2]) assert.equal(result.workers[i].stopped, true);
      assert.match(formatRunSummary(result), /w3=error$/);
      assert.equal(result.ok, false);
      assertNothingSurvives(fleet, runId);
    });
  });
}

describe('connection manager against real sshd', () => {
  before(() => assert.ok(sshdAvailable(), 'OpenSSH sshd is missing at /usr/sbin/sshd: run bash scripts/setup.sh'));
  let sshd: SshdInstance;
  before(async () => {
    sshd = await startSshd({ host: '127.0.2.10' });
  });
  after(async () => sshd?.stop());
  const target = () => ({ host: sshd.host, port: sshd.port, username: sshd.username, privateKey: sshd.privateKey });

  it('N concurrent callers share one TCP connection', async () => {
    const conns = new ConnectionManager({ knownHostsPath: path.join(tmp, 'kh-share') });
    try {
      const before = sshd.acceptedLogins();
      const got = await Promise.all(Array.from({ length: 10 }, () => conns.get(target())));
      assert.ok(got.every((c) => c === got[0]), 'every caller got the same connection');
      const outs = await Promise.all(got.map((c, i) => execCollect(c, `echo ${i}`)));
      assert.deepEqual(outs.map((o) => o.stdout.trim()), Array.from({ length: 10 }, (_, i) => String(i)));
      assert.equal(conns.connectAttempts, 1);
      assert.equal(sshd.acceptedLogins() - before, 1, 'sshd saw exactly one login');
    } finally {
      conns.dispose();
    }
  });

  it('a dropped connection is forgotten and the next call reconnects', async () => {
    const conns = new ConnectionManager({ knownHostsPath: path.join(tmp, 'kh-drop') });
    try {
      const first = await conns.get(target());
      // Kill this session's sshd process: the TCP connection dies under us.
      const dead = await execCollect(first, 'kill -9 $PPID; sleep 5');
      assert.equal(dead.lost, true, 'the channel ended without an exit status');
      await waitFor(() => first.closed, 5000, 'connection marked closed');
      const second = await conns.get(target());
      assert.notEqual(second, first);
      assert.equal((await execCollect(second, 'echo again')).stdout, 'again\n');
      assert.equal(conns.connectAttempts, 2);
    } finally {
      conns.dispose();
    }
  });

  it('closes a connection after the idle time and reconnects on demand', async () => {
    const conns = new ConnectionManager({ knownHostsPath: path.join(tmp, 'kh-idle'), idleCloseMs: 300 });
    try {
      const first = await conns.get(target());
      await execCollect(first, 'true');
      assert.equal(first.closed, false);
      await waitFor(() => first.closed, 3000, 'idle close');
      const second = await conns.get(target());
      assert.notEqual(second, first);
      assert.equal((await execCollect(second, 'echo x')).code, 0);
    } finally {
      conns.dispose();
    }
  });

  it('queues channels beyond maxChannels instead of failing', async () => {
    const conns = new ConnectionManager({ knownHostsPath: path.join(tmp, 'kh-max'), maxChannels: 2 });
    try {
      const conn = await conns.get(target());
      const t0 = Date.now();
      const outs = await Promise.all(Array.from({ length: 6 }, (_, i) => execCollect(conn, `sleep 0.3; echo ${i}`)));
      assert.deepEqual(outs.map((o) => o.stdout.trim()), ['0', '1', '2', '3', '4', '5']);
      assert.ok(Date.now() - t0 >= 850, 'at most two ran at once (3 rounds of 0.3 s)');
    } finally {
      conns.dispose();
    }
  });

  it('auth failure is reported as such', async () => {
    const conns = new ConnectionManager({ knownHostsPath: path.join(tmp, 'kh-auth') });
    try {
      const wrongKey = generateEd25519KeyPair().private;
      await assert.rejects(conns.get({ ...target(), privateKey: wrongKey, index: 5 } as WorkerTarget), (e: unknown) =>
        isTpwError(e, 'SSH_CONNECT') && e.message === `worker 5 (${sshd.host}:${sshd.port}): authentication failed for user "${sshd.username}" (the server did not accept the SSH key)`,
      );
    } finally {
      conns.dispose();
    }
  });
});

describe('emulated workers (SshWorkerPool)', () => {
  it('refuses wrong keys and users, kills programs on removeNode, and leaves nothing behind on close', async () => {
    const fleet = await emulatorFleet();
    const conns = new ConnectionManager({ knownHostsPath: path.join(tmp, 'kh-pool') });
    try {
      const w0 = fleet.workers[0];
      const wrongKey = generateEd25519KeyPair().private;
      await assert.rejects(conns.get({ ...w0, privateKey: wrongKey }), /authentication failed/);
      await assert.rejects(conns.get({ ...w0, username: 'someone-else' }), /authentication failed/);

      // exit-signal travels back like OpenSSH's; stdin is wired.
      const conn = await conns.get(w0);
      const sig = await execCollect(conn, 'kill -TERM $$');
      assert.deepEqual([sig.code, sig.signal], [null, 'SIGTERM']);
      assert.equal((await execCollect(conn, 'tr a-z A-Z', { stdin: 'hello\n' })).stdout, 'HELLO\n');
      assert.equal((await execCollect(conn, 'pwd; echo $HOME')).stdout, `${path.join(tmp, 'emu', 'w0')}\n${path.join(tmp, 'emu', 'w0')}\n`);
      // `env` requests are honoured.
      const envCh = await conn.exec('echo "[$TPW_FROM_ENV_REQ]"', { env: { TPW_FROM_ENV_REQ: 'a b' } });
      let envOut = '';
      envCh.on('data', (b: Buffer) => (envOut += b.toString()));
      await new Promise((r) => envCh.once('close', r));
      assert.equal(envOut, '[a b]\n');
      // A shell with a pty (what a VS Code terminal opens) is a real tty of the requested size.
      const shellOut = await new Promise<string>((resolve, reject) => {
        conn.client.shell({ term: 'xterm', rows: 30, cols: 100 }, (err, ch) => {
          if (err) return reject(err);
          let out = '';
          ch.on('data', (b: Buffer) => (out += b.toString()));
          ch.once('close', () => resolve(out));
          ch.write('tty; stty size; echo "id=$TPU_WORKER_ID"; exit\n');
        });
      });
      assert.match(shellOut, /\/dev\/pts\/\d+\r\n30 100\r\nid=0\r\n/);

      // A detached run (its own process group, as the runner starts it) dies with its node.
      const runId = newRunId('rm');
      const handle = startRun({ runId, workers: fleet.workers, argv: ['bash', '-c', `echo up; ${SLEEPER}`], cwd: '.', env: {} }, {}, conns);
      await waitFor(() => processesWithEnv(`TPW_RUN_ID=${runId}`).length >= 12, 15_000, 'runs started');
      await fleet.pool.removeNode('node-a');
      const result = await handle.result;
      assert.equal(result.ok, false);
      assertNothingSurvives(fleet, runId);
      await assert.rejects(connectTcp(w0.host, fleet.port), /ECONNREFUSED/);
    } finally {
      conns.dispose();
      await fleet.pool.close();
    }
    for (const w of fleet.workers) await assert.rejects(connectTcp(w.host, fleet.port), /ECONNREFUSED/);
  });
});

function connectTcp(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host, port }, () => {
      s.destroy();
      resolve();
    });
    s.once('error', reject);
  });
}

describe('LineSplitter', () => {
  it('handles partial lines, CRLF and UTF-8 split across chunks', () => {
    const sp = new LineSplitter();
    const bytes = Buffer.from('héllo 🚀\r\nsecond', 'utf8');
    const out: string[] = [];
    for (let i = 0; i < bytes.length; i++) out.push(...sp.push(bytes.subarray(i, i + 1))); // one byte at a time
    assert.deepEqual(out, ['héllo 🚀']);
    assert.deepEqual(sp.push(Buffer.from(' half\n\nthird')), ['second half', '']);
    assert.deepEqual(sp.flush(), ['third']);
    assert.deepEqual(sp.flush(), []);
  });
});

describe('formatRunSummary', () => {
  it('names every worker’s outcome in one line', () => {
    const base: RunResult = { runId: 'r1', durationMs: 12_345, cancelled: false, ok: false, workers: [] };
    const w = (index: number, extra: Partial<WorkerResult>): WorkerResult => ({ index, host: 'h', exitCode: 0, stopped: false, ...extra });
    assert.equal(
      formatRunSummary({ ...base, ok: true, workers: [w(0, {}), w(1, {})] }),
      'run r1: 2/2 workers ok in 12.3s — w0=0 w1=0',
    );
    assert.equal(
      formatRunSummary({ ...base, workers: [w(0, {}), w(2, { exitCode: 1 }), w(1, { exitCode: null, signal: 'KILL' }), w(3, { exitCode: 130, stopped: true }), w(4, { exitCode: null, error: 'x' })] }),
      'run r1: 1/5 workers ok in 12.3s — w0=0 w1=KILL (failed) w2=1 (failed) w3=stopped w4=error',
    );
  });
});
