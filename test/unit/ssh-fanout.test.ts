/**
 * Fan-out through the run engine users run (core/run/engine.ts: detached start, tail, stop) against 4 real
 * OpenSSH sshd and 4 emulated workers: every worker's lines arrive with its index, user strings and env
 * values arrive literally (env through a 0600 file, never argv), fail-fast, exit codes, stop escalating to
 * SIGKILL on the whole process group, start failures explained; then the connection manager (sharing,
 * drops, idle close, channel cap, shells) and the emulator's SSH workers.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { generateEd25519KeyPair } from '../../extension/src/core/ssh/keys';
import { SshWorkerPool } from '../../emulator/src/ssh-workers';
import { isTpwError } from '../../extension/src/core/errors';
import { attachRun, formatRunSummary, prefixLine, startDetached, type AttachHandle, type OutputStream, type RunListener, type RunSpec, type WorkerResult } from '../../extension/src/core/run/engine';
import { ConnectionManager } from '../../extension/src/core/ssh/connection';
import { LineSplitter, execCollect } from '../../extension/src/core/ssh/exec';
import type { WorkerTarget } from '../../extension/src/core/ssh/types';
import { groupAlive, processesWithEnv, recordedGroup, waitFor } from '../helpers/process';
import { freePort, startSshd, sshdAvailable, type SshdInstance } from '../helpers/sshd';
import { testAddressPrefix } from '../helpers/loopback';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-fanout-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));
const username = os.userInfo().username;

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
    const pgid = recordedGroup(fleet.runDir(w.index, runId));
    assert.ok(pgid > 1, `pid file of worker ${w.index} holds a pgid`);
    assert.equal(groupAlive(pgid), false, `process group ${pgid} of worker ${w.index} is gone`);
  }
  assert.deepEqual(processesWithEnv(`TPW_RUN_ID=${runId}`), [], 'no process of the run survives');
}

const SLEEPER = 'sleep 1000 & sleep 1000; wait';

for (const make of [sshdFleet, emulatorFleet]) {
  describe(`run engine fan-out against ${make === sshdFleet ? 'real sshd' : 'the emulator'}`, () => {
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
    /** What `tpw run` does through the engine: start on every worker, then follow until every worker ended. */
    const run = async (s: RunSpec, listener: RunListener): Promise<AttachHandle> => {
      await startDetached(s, conns, { runsRoot: fleet.runsRoot });
      return attachRun(s.runId, s.workers, conns, listener, { runsRoot: fleet.runsRoot, failFast: s.failFast, graceMs: s.stopGraceMs });
    };

    before(async () => {
      fleet = await make();
      conns = new ConnectionManager({ knownHostsPath: path.join(tmp, `known_hosts-${fleet.emulated ? 'emu' : 'sshd'}`) });
    });
    after(async () => {
      conns?.dispose();
      await fleet?.stop();
    });

    it('streams every worker’s lines with its index; hostile argv arrives literally; env reaches the program through a private file, never argv, and leaves nothing on the worker', async () => {
      const runId = newRunId('ok');
      const secret = `hunter2-${crypto.randomBytes(8).toString('hex')}`;
      const pwned = path.join(tmp, `pwned-${runId}`);
      const hostile = ["it's", `$(touch ${pwned})`, `\`touch ${pwned}\``, '*', '', '-n', 'a\nb', '~root', 'x=y', 'ünï€ 🚀'];
      const c = collector();
      const program = [
        'echo "hello from $TPW_WORKER_INDEX tpu=${TPU_WORKER_ID:-none} hosts=${TPU_WORKER_HOSTNAMES:-none}"',
        'echo "to stderr" >&2',
        // The env file is gone once the wrapper has sourced it; the run folder holding it meanwhile is private.
        'echo "env-left=$([ -e "$TPW_RUN_DIR/env" ] && echo yes || echo no) dir-mode=$(stat -c %a "$TPW_RUN_DIR")"',
        'echo "secret-sha=$(printf %s "$TPW_SECRET" | sha256sum | cut -d" " -f1)"',
        'echo "multi=[$MULTI]"',
        'printf "arg=<%s>\\n" "$@"',
        // Stays until the test has looked at every process on this machine.
        'echo ready; for i in $(seq 1 300); do [ -e "$TPW_RUN_DIR/seen" ] && break; sleep 0.1; done',
      ].join('\n');
      const handle = await run(spec(runId, ['bash', '-c', program, 'argv0', ...hostile], { env: { TPW_SECRET: secret, MULTI: "a'b\nc" } }), c.listener);
      await waitFor(() => c.lines.filter((l) => l.line === 'ready').length === 4, 15_000, 'all workers ready');
      // While every program runs: the secret is in no process's argv on this machine.
      assert.ok(processesWithEnv(`TPW_RUN_ID=${runId}`).length >= 4, 'the programs are running while we look');
      const ps = execFileSync('ps', ['-eww', '-o', 'args'], { encoding: 'utf8' });
      assert.equal(ps.includes(secret), false, 'secret not visible in ps');
      for (const w of fleet.workers) fs.writeFileSync(path.join(fleet.runDir(w.index, runId), 'seen'), '');
      const result = await handle.result;

      assert.equal(result.ok, true, formatRunSummary(result));
      assert.deepEqual(result.workers.map((w) => [w.index, w.exitCode, w.stopped]), [0, 1, 2, 3].map((i) => [i, 0, false]));
      assert.match(formatRunSummary(result), new RegExp(`^run ${runId}: 4/4 workers ok in \\d+\\.\\ds — w0=0 w1=0 w2=0 w3=0$`));
      assert.equal(c.exits.length, 4);
      const sha = crypto.createHash('sha256').update(secret).digest('hex');
      for (const w of fleet.workers) {
        const tpu = fleet.emulated ? String(w.index) : 'none';
        const hosts = fleet.emulated ? fleet.workers.map((x) => x.host).join(',') : 'none';
        // stdout and stderr share the worker's log, in the order written.
        assert.deepEqual(
          c.lines.filter((l) => l.worker === w.index).map((l) => l.line),
          [`hello from ${w.index} tpu=${tpu} hosts=${hosts}`, 'to stderr', 'env-left=no dir-mode=700', `secret-sha=${sha}`, 'multi=[a\'b', 'c]', ...hostile.flatMap((h) => `arg=<${h}>`.split('\n')), 'ready'],
        );
        const dir = fleet.runDir(w.index, runId);
        assert.equal(fs.readFileSync(path.join(dir, 'exit_code'), 'utf8').trim(), '0');
        assert.equal(fs.existsSync(path.join(dir, 'env')), false, `worker ${w.index} keeps no env file`);
        for (const f of fs.readdirSync(dir)) assert.equal(fs.readFileSync(path.join(dir, f), 'latin1').includes(secret), false, `the secret is not in ${f}`);
      }
      assert.equal(prefixLine(3, 'x'), '[w3] x');
      assert.equal(fs.existsSync(pwned), false, 'no argument was run as a command');
    });

    it('fail-fast: the first failing worker stops the others and exit codes are reported', async () => {
      const runId = newRunId('ff');
      const c = collector();
      const program = `if [ "$TPW_WORKER_INDEX" = 2 ]; then sleep 0.5; echo failing >&2; exit 3; fi; ${SLEEPER}`;
      const result = await (await run(spec(runId, ['bash', '-c', program]), c.listener)).result;
      assert.equal(result.ok, false);
      assert.equal(result.cancelled, false);
      const w2 = result.workers[2];
      assert.deepEqual([w2.exitCode, w2.stopped], [3, false]);
      assert.equal(result.firstFailed, 2);
      // Stopped, not run to completion: the others sleep 1000 s.
      for (const i of [0, 1, 3]) assert.equal(result.workers[i].stopped, true, `worker ${i} was stopped`);
      const summary = formatRunSummary(result);
      assert.match(summary, /0\/4 workers ok/);
      assert.match(summary, /w0=stopped w1=stopped w2=3 \(failed\) w3=stopped$/);
      assert.ok(c.lines.some((l) => l.worker === 2 && l.line === 'failing'));
      assertNothingSurvives(fleet, runId);
    });

    it('failFast: false lets the other workers finish', async () => {
      const runId = newRunId('nff');
      const program = 'if [ "$TPW_WORKER_INDEX" = 1 ]; then exit 7; fi; sleep 0.5; echo done';
      const result = await (await run(spec(runId, ['bash', '-c', program], { failFast: false }), {})).result;
      assert.deepEqual(result.workers.map((w) => w.exitCode), [0, 7, 0, 0]);
      assert.equal(result.workers.some((w) => w.stopped), false);
      assert.equal(result.ok, false);
    });

    it('cancel kills the whole process group on every worker, escalating to SIGKILL', async () => {
      const runId = newRunId('cancel');
      const c = collector();
      // Ignores INT and TERM (and so do its children): only the SIGKILL at the end of the grace period works.
      const program = `trap "" INT TERM; echo started; ${SLEEPER}`;
      const handle = await run(spec(runId, ['bash', '-c', program]), c.listener);
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

    it('start failures are explained: a run id that already ran, a missing folder (its name quoted literally)', async () => {
      const runId = newRunId('twice');
      const first = await (await run(spec(runId, ['true']), {})).result;
      assert.equal(first.ok, true, formatRunSummary(first));
      await assert.rejects(startDetached(spec(runId, ['true']), conns, { runsRoot: fleet.runsRoot }), (e: unknown) => {
        assert.ok(isTpwError(e, 'UNAVAILABLE'));
        for (const w of fleet.workers) assert.match(e.message, new RegExp(`worker ${w.index} \\([^)]*\\): run ${runId} was already started on this worker \\(.*/pid exists\\)`));
        return true;
      });
      const missing = path.join(tmp, "no such ' dir $(id)");
      await assert.rejects(startDetached(spec(newRunId('cwd'), ['true'], { cwd: missing }), conns, { runsRoot: fleet.runsRoot }), (e: unknown) => {
        assert.ok(isTpwError(e, 'UNAVAILABLE'));
        for (const w of fleet.workers) assert.ok(e.message.includes(`worker ${w.index} (${w.host}:${w.port}): cannot change to the folder ${missing} on this worker`), e.message);
        return true;
      });
    });

    it('a dropped SSH connection does not kill the program: the watch resumes and sees every line and the exit code', async () => {
      const runId = newRunId('drop');
      const w = fleet.workers[0];
      const c = collector();
      const handle = await run(spec(runId, ['bash', '-c', 'echo begin; sleep 1; for i in 1 2 3; do echo "line $i"; done; echo finished'], { workers: [w], failFast: false }), c.listener);
      await waitFor(() => c.lines.some((l) => l.line === 'begin'), 15_000, 'program started');
      (await conns.get(w)).client.destroy(); // the laptop's network goes away
      const result = await handle.result;
      assert.equal(result.ok, true, formatRunSummary(result));
      assert.deepEqual(c.lines.map((l) => l.line), ['begin', 'line 1', 'line 2', 'line 3', 'finished']);
      const dir = fleet.runDir(0, runId);
      assert.equal(fs.readFileSync(path.join(dir, 'exit_code'), 'utf8'), '0\n');
      assert.equal(fs.readFileSync(path.join(dir, 'log'), 'utf8'), 'begin\nline 1\nline 2\nline 3\nfinished\n');
    });

    it('SSH refused on one worker: a clear error naming it, and the workers that started are stopped', async () => {
      const deadHost = fleet.emulated ? `${testAddressPrefix(3)}.9` : `${testAddressPrefix(2)}.9`;
      const deadPort = await freePort(deadHost);
      const workers = [...fleet.workers.slice(0, 3), { ...fleet.workers[3], host: deadHost, port: deadPort }];
      const runId = newRunId('refused');
      await assert.rejects(startDetached({ ...spec(runId, ['bash', '-c', SLEEPER]), workers }, conns, { runsRoot: fleet.runsRoot }), (e: unknown) => {
        assert.ok(isTpwError(e, 'UNAVAILABLE'));
        assert.equal(e.message, `Run ${runId} did not start on every worker: worker 3 (${deadHost}:${deadPort}): connection refused (is the VM up and sshd listening?)`);
        return true;
      });
      for (const i of [0, 1, 2]) assert.ok(fs.existsSync(path.join(fleet.runDir(i, runId), 'pid')), `worker ${i} had started`);
      assertNothingSurvives(fleet, runId);
    });
  });
}

describe('connection manager against real sshd', () => {
  before(() => assert.ok(sshdAvailable(), 'OpenSSH sshd is missing at /usr/sbin/sshd: run bash scripts/setup.sh'));
  let sshd: SshdInstance;
  before(async () => {
    sshd = await startSshd({ host: `${testAddressPrefix(2)}.10` });
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

  it('an open shell (a terminal) keeps its connection from idle close; it idles out after the shell ends', async () => {
    const conns = new ConnectionManager({ knownHostsPath: path.join(tmp, 'kh-shell'), idleCloseMs: 300 });
    try {
      const conn = await conns.get(target());
      const sh = await conn.shell({ term: 'xterm', rows: 24, cols: 80, width: 0, height: 0 });
      sh.resume(); // a terminal reads everything the shell prints
      assert.equal(conn.channelsInUse, 1, 'the shell counts as a channel');
      await new Promise((r) => setTimeout(r, 900));
      assert.equal(conn.closed, false, 'not idle-closed while the shell is open');
      const ended = new Promise((r) => sh.once('close', r));
      sh.write('exit\n');
      await ended;
      await waitFor(() => conn.closed, 3000, 'idle close after the shell ended');
    } finally {
      conns.dispose();
    }
  });

  it('retire closes idle connections now and busy ones when their last channel closes', async () => {
    const sshd2 = await startSshd({ host: `${testAddressPrefix(2)}.11` });
    const conns = new ConnectionManager({ knownHostsPath: path.join(tmp, 'kh-retire') });
    try {
      const idle = await conns.get(target());
      const busy = await conns.get({ host: sshd2.host, port: sshd2.port, username: sshd2.username, privateKey: sshd2.privateKey });
      const running = execCollect(busy, 'sleep 0.5; echo still here');
      await waitFor(() => busy.channelsInUse === 1, 2000, 'the exec channel open');
      conns.retire();
      await waitFor(() => idle.closed, 3000, 'the idle connection closed at once');
      assert.equal(busy.closed, false, 'the busy one stays while its channel is open');
      assert.equal((await running).stdout, 'still here\n');
      await waitFor(() => busy.closed, 3000, 'the busy one closed after its channel');
    } finally {
      conns.dispose();
      await sshd2.stop();
    }
  });

  it('a kept connection is not handed out once known_hosts names another key for its host: the reconnect is refused', async () => {
    const file = path.join(tmp, 'kh-changed');
    const conns = new ConnectionManager({ knownHostsPath: file });
    try {
      const first = await conns.get(target());
      assert.equal(await conns.get(target()), first, 'known_hosts unchanged: the same connection');
      const original = fs.readFileSync(file, 'utf8');
      const [type, blob] = generateEd25519KeyPair().public.split(' ');
      fs.writeFileSync(file, original.split('\n').map((l) => (l.trim() ? `${l.split(' ')[0]} ${type} ${blob}` : l)).join('\n'));
      await assert.rejects(conns.get(target()), (e: unknown) => isTpwError(e, 'SSH_HOST_KEY') && /has CHANGED/.test(e.message));
      await waitFor(() => first.closed, 3000, 'the kept connection closed (it had no channel open)');
      fs.writeFileSync(file, original);
      const again = await conns.get(target());
      assert.notEqual(again, first);
      assert.equal((await execCollect(again, 'echo ok')).stdout, 'ok\n');
      assert.equal(conns.connectAttempts, 3);
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
      const sh = await conn.shell({ term: 'xterm', rows: 30, cols: 100, width: 0, height: 0 });
      const shellOut = await new Promise<string>((resolve) => {
        let out = '';
        sh.on('data', (b: Buffer) => (out += b.toString()));
        sh.once('close', () => resolve(out));
        sh.write('tty; stty size; echo "id=$TPU_WORKER_ID"; exit\n');
      });
      assert.match(shellOut, /\/dev\/pts\/\d+\r\n30 100\r\nid=0\r\n/);

      // A run (its own process group, as the engine starts it) dies with its node.
      const runId = newRunId('rm');
      await startDetached({ runId, workers: fleet.workers, argv: ['bash', '-c', `echo up; ${SLEEPER}`], cwd: '.', env: {} }, conns);
      await waitFor(() => processesWithEnv(`TPW_RUN_ID=${runId}`).length >= 12, 15_000, 'runs started');
      await fleet.pool.removeNode('node-a');
      await waitFor(() => processesWithEnv(`TPW_RUN_ID=${runId}`).length === 0, 10_000, 'the run ended with its node');
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
