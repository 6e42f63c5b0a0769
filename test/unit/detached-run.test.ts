/**
 * Detached runs against real OpenSSH sshd and the emulator's workers: start returns while the program runs,
 * logs are tailed from byte offsets and survive the client's connection being killed mid-run (no line lost,
 * none repeated, multi-byte characters intact), a second watcher (another process) sees the same log,
 * stop leaves nothing alive, fail-fast, and start failures stop what did start.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { generateEd25519KeyPair } from '../../extension/src/core/ssh/keys';
import { SshWorkerPool } from '../../emulator/src/ssh-workers';
import { isTpwError } from '../../extension/src/core/errors';
import { attachRun, downloadRunLogs, startDetached, stopDetached, type RunSpec } from '../../extension/src/core/run/engine';
import { ConnectionManager } from '../../extension/src/core/ssh/connection';
import type { WorkerTarget } from '../../extension/src/core/ssh/types';
import { groupAlive, recordedGroup, waitFor } from '../helpers/process';
import { freePort, startSshd, type SshdInstance } from '../helpers/sshd';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-detached-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));
const username = os.userInfo().username;

const newRunId = (tag: string) => `d-${tag}-${crypto.randomBytes(4).toString('hex')}`;

interface Fleet {
  emulated: boolean;
  workers: WorkerTarget[];
  runsRoot?: (w: WorkerTarget) => string;
  runDir(index: number, runId: string): string;
  stop(): Promise<void>;
}

async function sshdFleet(): Promise<Fleet> {
  const sshds: SshdInstance[] = await Promise.all([1, 2, 3].map((i) => startSshd({ host: `127.0.4.${i}` })));
  const root = (i: number) => path.join(tmp, `sshd-w${i}`, 'runs');
  return {
    emulated: false,
    workers: sshds.map((s, index) => ({ host: s.host, port: s.port, username: s.username, privateKey: s.privateKey, index })),
    runsRoot: (w) => root(w.index),
    runDir: (i, runId) => path.join(root(i), runId),
    stop: async () => void (await Promise.all(sshds.map((s) => s.stop()))),
  };
}

async function emulatorFleet(): Promise<Fleet> {
  const hostKey = generateEd25519KeyPair();
  const clientKey = generateEd25519KeyPair();
  const addresses = [1, 2, 3].map((i) => `127.0.5.${i}`);
  const port = await freePort(addresses[0]);
  const pool = new SshWorkerPool({ port, hostKey: hostKey.private, authorizedKey: clientKey.public, username });
  const sandbox = (i: number) => path.join(tmp, 'emu', `w${i}`);
  for (const [index, address] of addresses.entries()) {
    await pool.addWorker({ nodeId: 'node-d', index, address, hostnames: addresses, sandboxDir: sandbox(index), acceleratorType: 'v4-24' });
  }
  return {
    emulated: true,
    workers: addresses.map((host, index) => ({ host, port, username, privateKey: clientKey.private, index })),
    runDir: (i, runId) => path.join(sandbox(i), '.tpw', 'runs', runId),
    stop: () => pool.close(),
  };
}

for (const make of [sshdFleet, emulatorFleet]) {
  describe(`detached runs against ${make === sshdFleet ? 'real sshd' : 'the emulator'}`, () => {
    let fleet: Fleet;
    let conns: ConnectionManager;
    const knownHosts = path.join(tmp, `known_hosts-${make.name}`);
    const spec = (runId: string, script: string, extra: Partial<RunSpec> = {}): RunSpec => ({
      runId,
      workers: fleet.workers,
      argv: ['bash', '-c', script],
      cwd: tmp,
      env: {},
      stopGraceMs: 1000,
      ...extra,
    });
    const pgidOf = (i: number, runId: string) => recordedGroup(fleet.runDir(i, runId));

    before(async () => {
      fleet = await make();
      conns = new ConnectionManager({ knownHostsPath: knownHosts });
    });
    after(async () => {
      conns?.dispose();
      await fleet?.stop();
    });

    it('attaching to runs that already ended reads each exit code on the first try, with no reconnect', async () => {
      // A tail of a finished run exits at once; its exit status once raced the listener and every miss
      // looked like a lost connection (a reconnect, a notice, seconds of backoff).
      const notices: string[] = [];
      for (let i = 0; i < 8; i++) {
        const runId = newRunId('done');
        await startDetached(spec(runId, `echo "short $TPU_WORKER_ID"; exit ${i % 3}`), conns, { runsRoot: fleet.runsRoot });
        for (const w of fleet.workers) {
          const file = path.join(fleet.runDir(w.index, runId), 'exit_code');
          for (let t = 0; !fs.existsSync(file) && t < 200; t++) await new Promise((r) => setTimeout(r, 25));
        }
        const lines: string[] = [];
        const handle = attachRun(runId, fleet.workers, conns, { onLine: (_w, _s, l) => lines.push(l) }, { runsRoot: fleet.runsRoot, onNotice: (w, m) => notices.push(`w${w} ${m}`) });
        const result = await handle.result;
        assert.deepEqual(result.workers.map((w) => w.exitCode), fleet.workers.map(() => i % 3));
        assert.equal(lines.length, fleet.workers.length);
      }
      assert.deepEqual(notices, []);
    });

    it('start returns once the program runs on every worker; the log survives killed connections with no line lost or repeated', async () => {
      const runId = newRunId('tail');
      const N = 300;
      // Multi-byte characters: a reconnect that resumed mid-character would garble them.
      // The program waits for a `go` file the test writes: start must return while it is still running.
      const script = `echo begin; while [ ! -e "$TPW_RUN_DIR/go" ]; do sleep 0.05; done; for i in $(seq 1 ${N}); do echo "line $i ünï€ $TPU_WORKER_ID"; sleep 0.004; done; echo end`;
      await startDetached(spec(runId, script), conns, { runsRoot: fleet.runsRoot });
      for (const w of fleet.workers) {
        assert.ok(fs.existsSync(path.join(fleet.runDir(w.index, runId), 'pid')), `pid on worker ${w.index}`);
        assert.equal(fs.existsSync(path.join(fleet.runDir(w.index, runId), 'exit_code')), false, 'still running');
      }
      const lines = new Map<number, string[]>(fleet.workers.map((w) => [w.index, []]));
      const notices: string[] = [];
      const handle = attachRun(runId, fleet.workers, conns, { onLine: (w, _s, l) => lines.get(w)?.push(l) }, { runsRoot: fleet.runsRoot, onNotice: (w, m) => notices.push(`w${w} ${m}`) });
      for (const w of fleet.workers) fs.writeFileSync(path.join(fleet.runDir(w.index, runId), 'go'), '');
      // Kill every connection three times while the workers are writing.
      for (const at of [40, 120, 220]) {
        await waitFor(() => (lines.get(0)?.length ?? 0) > at, 20_000, `${at} lines`);
        for (const w of fleet.workers) (await conns.get(w)).client.destroy();
      }
      const result = await handle.result;
      assert.equal(result.ok, true, JSON.stringify(result.workers));
      // "Download logs": every worker's log, byte for byte.
      const dl = path.join(tmp, `dl-${runId}`);
      const files = await downloadRunLogs(fleet.workers, conns, runId, dl, fleet.runsRoot);
      assert.deepEqual(files.map((f) => path.basename(f)), fleet.workers.map((w) => `w${w.index}.log`));
      for (const w of fleet.workers) assert.ok(fs.readFileSync(path.join(dl, `w${w.index}.log`)).equals(fs.readFileSync(path.join(fleet.runDir(w.index, runId), 'log'))));
      assert.ok(notices.length >= 3, `reconnects were noticed: ${notices.join('; ')}`);
      for (const w of fleet.workers) {
        const expected = ['begin', ...Array.from({ length: N }, (_, i) => `line ${i + 1} ünï€ ${fleet.emulated ? w.index : ''}`.trimEnd()), 'end'];
        const got = lines.get(w.index) ?? [];
        if (!fleet.emulated) assert.deepEqual(got.map((l) => l.trimEnd()), expected, `worker ${w.index}`);
        else assert.deepEqual(got, expected, `worker ${w.index}`);
      }
    });

    it('a second watcher (another process) reads the same log; a one-shot look at a running run says it still runs', async () => {
      const runId = newRunId('second');
      await startDetached(spec(runId, 'echo one; echo two; while [ ! -e "$TPW_RUN_DIR/go" ]; do sleep 0.05; done; echo three'), conns, { runsRoot: fleet.runsRoot });
      const other = new ConnectionManager({ knownHostsPath: knownHosts });
      try {
        await waitFor(() => fs.readFileSync(path.join(fleet.runDir(0, runId), 'log'), 'utf8').includes('two'), 5000, 'two lines');
        const peek: string[] = [];
        const once = await attachRun(runId, fleet.workers.slice(0, 1), other, { onLine: (_w, _s, l) => peek.push(l) }, { runsRoot: fleet.runsRoot, follow: false }).result;
        assert.deepEqual(peek, ['one', 'two']);
        assert.equal(once.detached, true, 'still running: no result yet');
        fs.writeFileSync(path.join(fleet.runDir(0, runId), 'go'), '');
        // Resume from the offset the one-shot look reached: only the rest arrives.
        const offsets = new Map([[0, Buffer.byteLength('one\ntwo\n')]]);
        const rest: string[] = [];
        const done = await attachRun(runId, fleet.workers.slice(0, 1), other, { onLine: (_w, _s, l) => rest.push(l) }, { runsRoot: fleet.runsRoot, offsets }).result;
        assert.deepEqual(rest, ['three']);
        assert.equal(done.workers[0].exitCode, 0);
      } finally {
        other.dispose();
        await stopDetached(runId, fleet.workers, conns, { runsRoot: fleet.runsRoot, graceMs: 500 });
      }
    });

    it('stop ends the whole process group on every worker and the watcher reports them stopped', async () => {
      const runId = newRunId('stop');
      await startDetached(spec(runId, 'echo up; sleep 1000 & sleep 1000; wait'), conns, { runsRoot: fleet.runsRoot });
      const seen: number[] = [];
      const handle = attachRun(runId, fleet.workers, conns, { onLine: (w, _s, l) => l === 'up' && seen.push(w) }, { runsRoot: fleet.runsRoot, graceMs: 1000 });
      await waitFor(() => seen.length === fleet.workers.length, 30_000, 'every worker up');
      await handle.cancel();
      const result = await handle.result;
      assert.equal(result.cancelled, true);
      for (const w of result.workers) assert.equal(w.stopped, true, `worker ${w.index} stopped`);
      for (const w of fleet.workers) assert.equal(groupAlive(pgidOf(w.index, runId)), false, `group of worker ${w.index} gone`);
    });

    it('fail-fast: one failing worker stops the others', async () => {
      const runId = newRunId('ff');
      await startDetached(spec(runId, 'if [ "$TPW_WORKER_INDEX" = 1 ]; then sleep 0.3; echo boom >&2; exit 7; fi; sleep 1000'), conns, { runsRoot: fleet.runsRoot });
      const lines: string[] = [];
      const result = await attachRun(runId, fleet.workers, conns, { onLine: (w, _s, l) => lines.push(`${w}:${l}`) }, { runsRoot: fleet.runsRoot, graceMs: 1000 }).result;
      assert.equal(result.workers[1].exitCode, 7);
      assert.equal(result.workers[1].stopped, false);
      assert.ok(lines.includes('1:boom'), 'stderr is in the log');
      for (const i of [0, 2]) assert.equal(result.workers[i].stopped, true);
      for (const w of fleet.workers) assert.equal(groupAlive(pgidOf(w.index, runId)), false);
    });

    it('a pid the run recorded that now names another program is never signalled by stop', async () => {
      // The run's group is killed outright (no exit_code, as after an OOM kill or a reboot), and its number is
      // then "reused": the pid file names an unrelated process group of this user, as it would after wraparound.
      const runId = newRunId('reused');
      await startDetached(spec(runId, 'sleep 1000'), conns, { runsRoot: fleet.runsRoot });
      const dir = fleet.runDir(0, runId);
      const [, started, ...cmd] = fs.readFileSync(path.join(dir, 'pid'), 'utf8').trim().split(' ');
      assert.match(started, /^\d+$/, 'the pid file holds the start time');
      assert.ok(cmd.length > 0, 'and a checksum of the command line');
      for (const w of fleet.workers) process.kill(-pgidOf(w.index, runId), 'SIGKILL');
      await waitFor(() => fleet.workers.every((w) => !groupAlive(pgidOf(w.index, runId))), 10_000, 'the run killed');
      const bystander = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
      try {
        assert.ok(bystander.pid);
        fs.writeFileSync(path.join(dir, 'pid'), `${bystander.pid} ${started} ${cmd.join(' ')}\n`);
        await stopDetached(runId, [fleet.workers[0]], conns, { runsRoot: fleet.runsRoot, graceMs: 500 });
        assert.equal(groupAlive(bystander.pid), true, 'the unrelated process group was signalled');
      } finally {
        bystander.kill('SIGKILL');
      }
    });

    it('a program that replaces PATH still has its env file removed and its exit code recorded', async () => {
      for (const [argv, code] of [[['/bin/bash', '-c', 'echo "PATH=$PATH"; exit 3'], 3], [['bash', '-c', 'exit 0'], 127]] as const) {
        const runId = newRunId('path');
        await startDetached(spec(runId, '', { argv: [...argv], env: { PATH: '/nonexistent', HF_TOKEN: 'hf_secret' } }), conns, { runsRoot: fleet.runsRoot });
        const lines: string[] = [];
        const result = await attachRun(runId, fleet.workers, conns, { onLine: (_w, _s, l) => lines.push(l) }, { runsRoot: fleet.runsRoot }).result;
        assert.deepEqual(result.workers.map((w) => w.exitCode), fleet.workers.map(() => code), lines.join('\n'));
        for (const w of fleet.workers) assert.equal(fs.existsSync(path.join(fleet.runDir(w.index, runId), 'env')), false, `worker ${w.index} kept the env file`);
        if (code === 3) assert.ok(lines.every((l) => l === 'PATH=/nonexistent'), lines.join('\n'));
      }
    });

    it('an unwritable runs folder is a start error naming the worker and the folder', async () => {
      // Under a regular file nothing can be created, even as root (chmod would not stop root).
      const runId = newRunId('unwritable');
      await assert.rejects(
        startDetached(spec(runId, 'true'), conns, { runsRoot: () => '/dev/null/runs' }),
        (e: unknown) => isTpwError(e, 'UNAVAILABLE') && /worker 0 \(.*\): cannot create the run folder \/dev\/null\/runs\//.test((e as Error).message),
      );
    });

    it('a worker that cannot start: the error names it, and the workers that did start are stopped', async () => {
      const runId = newRunId('cwd');
      const missing = path.join(tmp, 'no such dir');
      // Every worker lacks the folder; the message names them one by one.
      await assert.rejects(
        startDetached(spec(runId, 'sleep 1000', { cwd: missing }), conns, { runsRoot: fleet.runsRoot }),
        (e: unknown) => isTpwError(e, 'UNAVAILABLE') && /worker 0 \(.*\): cannot change to the folder .*no such dir on this worker/.test((e as Error).message),
      );
      const again = newRunId('again');
      await startDetached(spec(again, 'sleep 1000', { workers: [fleet.workers[0]] }), conns, { runsRoot: fleet.runsRoot });
      await assert.rejects(startDetached(spec(again, 'sleep 1000'), conns, { runsRoot: fleet.runsRoot }), /worker 0 .*was already started on this worker/);
      // Workers 1 and 2 had started that second attempt; the failure on worker 0 stopped them again.
      await waitFor(() => [1, 2].every((i) => !groupAlive(pgidOf(i, again))), 10_000, 'workers 1 and 2 stopped');
      await stopDetached(again, fleet.workers, conns, { runsRoot: fleet.runsRoot, graceMs: 500 });
      assert.equal(groupAlive(pgidOf(0, again)), false);
    });
  });
}
