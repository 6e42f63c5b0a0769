/**
 * The run view's fetch of a run's watch artifacts from its workers, over the emulator's real SSH workers
 * (each with its own sandbox as $HOME): metrics.jsonl and xla_metrics.txt come at once, captures are listed
 * with their size and copied byte for byte on demand.
 */
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { generateEd25519KeyPair } from '../../extension/src/core/ssh/keys';
import { SshWorkerPool } from '../../emulator/src/ssh-workers';
import { MetricsTail } from '../../extension/src/core/profiles/metrics-tail';
import type { MetricRecord } from '../../protocol/metrics-record';
import { fetchCapture, fetchRunArtifacts, fetchRunCaptures } from '../../extension/src/core/profiles/remote';
import { ConnectionManager } from '../../extension/src/core/ssh/connection';
import type { WorkerTarget } from '../../extension/src/core/ssh/types';
import { freePort } from '../helpers/sshd';
import { testAddressPrefix } from '../helpers/loopback';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-runview-remote-'));
const RUN = '20260101-000000-abcd';

describe('run artifacts from the workers (emulator SSH)', () => {
  let pool: SshWorkerPool;
  let conns: ConnectionManager;
  let workers: WorkerTarget[];
  const sandbox = (i: number): string => path.join(tmp, 'emu', `w${i}`);
  const capture = crypto.randomBytes(300_000);

  before(async () => {
    const hostKey = generateEd25519KeyPair();
    const clientKey = generateEd25519KeyPair();
    const addresses = [`${testAddressPrefix(6)}.1`, `${testAddressPrefix(6)}.2`];
    const port = await freePort(addresses[0]);
    const username = os.userInfo().username;
    pool = new SshWorkerPool({ port, hostKey: hostKey.private, authorizedKey: clientKey.public, username });
    for (const [index, address] of addresses.entries()) {
      await pool.addWorker({ nodeId: 'node-rv', index, address, hostnames: addresses, sandboxDir: sandbox(index), acceleratorType: 'v4-16' });
      const run = path.join(sandbox(index), '.tpw', 'runs', RUN);
      fs.mkdirSync(path.join(run, 'output'), { recursive: true });
      fs.writeFileSync(path.join(run, 'output', 'metrics.jsonl'), `{"step":1,"loss":${3 + index},"worker":${index}}\n`);
      if (index === 0) {
        fs.writeFileSync(path.join(run, 'output', 'xla_metrics.txt'), 'Counter: UncachedCompile\n  Value: 2\n');
        fs.mkdirSync(path.join(run, 'profile/plugins/profile/2026_01_01_00_00_00'), { recursive: true });
        fs.writeFileSync(path.join(run, 'profile/plugins/profile/2026_01_01_00_00_00/host a.xplane.pb'), capture);
        // An mtime of its own: the listing must report the worker's, not the time of the fetch.
        fs.utimesSync(path.join(run, 'profile/plugins/profile/2026_01_01_00_00_00/host a.xplane.pb'), 1_767_225_600.25, 1_767_225_600.25);
      } else {
        // The trainer's native path writes torch.profiler's Chrome trace; an exported trace beside it is not a capture.
        fs.mkdirSync(path.join(run, 'profile/plugins/profile/2026_01_01_00_00_01'), { recursive: true });
        fs.writeFileSync(path.join(run, 'profile/plugins/profile/2026_01_01_00_00_01/vm_1.pt.trace.json'), '{"traceEvents": []}');
        fs.writeFileSync(path.join(run, 'profile/plugins/profile/2026_01_01_00_00_01/vm_1.trace.json'), '{}');
      }
    }
    workers = addresses.map((host, index) => ({ host, port, username, privateKey: clientKey.private, index }));
    conns = new ConnectionManager({ knownHostsPath: path.join(tmp, 'known_hosts') });
  });
  after(async () => {
    conns?.dispose();
    await pool?.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('fetches metrics files and lists captures; copies a capture on demand', async () => {
    const dest = path.join(tmp, 'local');
    const got = await fetchRunArtifacts(workers, conns, RUN, dest);
    assert.deepEqual(got.map((g) => g.worker).sort(), [0, 1]);
    const w0 = got.find((g) => g.worker === 0)!;
    const w1 = got.find((g) => g.worker === 1)!;
    assert.equal(fs.readFileSync(path.join(w1.dir, 'metrics.jsonl'), 'utf8'), '{"step":1,"loss":4,"worker":1}\n');
    assert.match(fs.readFileSync(path.join(w0.dir, 'xla_metrics.txt'), 'utf8'), /UncachedCompile/);
    assert.equal(fs.existsSync(path.join(w1.dir, 'xla_metrics.txt')), false);
    assert.deepEqual(w1.captures.map((c) => [path.basename(c.remotePath), c.bytes]), [['vm_1.pt.trace.json', 19]]);
    assert.equal(w0.captures.length, 1);
    assert.equal(w0.captures[0].bytes, capture.length);
    assert.match(w0.captures[0].remotePath, /plugins\/profile\/2026_01_01_00_00_00\/host a\.xplane\.pb$/);
    const local = path.join(dest, 'c.xplane.pb');
    await fetchCapture(workers[0], conns, w0.captures[0].remotePath, local);
    assert.ok(fs.readFileSync(local).equals(capture), 'the capture arrives byte for byte');
    assert.equal(w0.captures[0].mtimeMs, 1_767_225_600_250, 'the capture\'s mtime on the worker (with the size, its identity)');
    assert.deepEqual(fs.readdirSync(dest).filter((f) => f.endsWith('.part')), [], 'the partial file was renamed');
    // A capture gone from the worker: a clear error naming it, and no file left behind.
    const gone = path.join(dest, 'gone.xplane.pb');
    await assert.rejects(fetchCapture(workers[0], conns, `${w0.captures[0].remotePath}.gone`, gone), /cannot read .*\.gone on worker 0/);
    assert.deepEqual([fs.existsSync(gone), fs.existsSync(`${gone}.part`)], [false, false]);
    // A fetch cancelled (the run view closed) stops and leaves nothing.
    const cancelled = new AbortController();
    cancelled.abort();
    await assert.rejects(fetchCapture(workers[0], conns, w0.captures[0].remotePath, gone, cancelled.signal), /was cancelled/);
    assert.deepEqual([fs.existsSync(gone), fs.existsSync(`${gone}.part`)], [false, false]);
  });

  it('tpw profile --run: every worker\'s captures into one folder per worker, byte for byte, and no scratch left', async () => {
    const dest = path.join(tmp, 'profiles', RUN);
    fs.mkdirSync(path.dirname(dest), { recursive: true });
    const files = await fetchRunCaptures(workers, conns, RUN, dest);
    assert.deepEqual(files.map((f) => path.relative(dest, f)).sort(), ['w0/2026_01_01_00_00_00/host a.xplane.pb', 'w1/2026_01_01_00_00_01/vm_1.pt.trace.json']);
    assert.ok(fs.readFileSync(path.join(dest, 'w0/2026_01_01_00_00_00/host a.xplane.pb')).equals(capture));
    assert.deepEqual(fs.readdirSync(path.dirname(dest)), [RUN], 'the metrics files fetched on the way are gone');
  });

  it('tails every worker\'s metrics.jsonl live: whole lines once each, a torn line when it ends, a rewritten file again', async () => {
    const run2 = '20260101-000001-beef';
    const file = (i: number): string => path.join(sandbox(i), '.tpw', 'runs', run2, 'output', 'metrics.jsonl');
    const tail = new MetricsTail(run2, workers, conns);
    assert.deepEqual(await tail.poll(), [], 'no file yet: nothing, and no error');
    for (const i of [0, 1]) fs.mkdirSync(path.dirname(file(i)), { recursive: true });
    fs.writeFileSync(file(0), '{"step":1,"loss":3}\nnot json\n{"step":2,"loss":2.75}\n{"step":3,"lo');
    fs.writeFileSync(file(1), '{"step":1,"loss":3.5}\n');
    const steps = (lines: MetricRecord[]) => lines.map((l) => `w${l.worker}:${l.step}:${String(l.loss)}`).sort();
    assert.deepEqual(steps(await tail.poll()), ['w0:1:3', 'w0:2:2.75', 'w1:1:3.5']);
    assert.equal(tail.offset(0), fs.statSync(file(0)).size);
    fs.appendFileSync(file(0), 'ss":2.5}\n{"step":4,"loss":2.25}\n');
    assert.deepEqual(steps(await tail.poll()), ['w0:3:2.5', 'w0:4:2.25'], 'the torn line completes; nothing repeats');
    assert.deepEqual(await tail.poll(), [], 'nothing new');
    fs.writeFileSync(file(0), '{"step":1,"loss":9}\n'); // shorter than what was read: a new file
    assert.deepEqual(steps(await tail.poll()), ['w0:1:9']);
  });
});
