import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { emulatorStatus, startEmulatorDaemon, stopEmulatorDaemon } from '../../emulator/src/daemon';
import { tpuNodeKey } from '../../emulator/src/names';
import { Emulator, type WorkerPool } from '../../emulator/src/emulator';
import { endpointFile, type EmulatorEndpoint } from '../../protocol/node/emulator-endpoint';
import { readEmulatorEndpoint } from '../../extension/src/core/local-emulator';
import { EmulatorError } from '../../emulator/src/errors';
import { previousStateFile, stateFile } from '../../emulator/src/state';
import { isTpwError } from '../../extension/src/core/errors';
import { runTpw } from '../helpers/cli';
import { escapeRegExp as esc, testAddressPrefix } from '../helpers/loopback';

/**
 * State the emulator must not lose: an unusable state file stops it from starting (naming the file, the problem
 * and the fix) and leaves the worker sandboxes alone; `--restore-previous` and `--reset-state` get out of it; a
 * damaged or stale endpoint file neither breaks `emulator start` nor makes `emulator stop` signal a stranger.
 */

const P = 'projects/local-project/locations/us-central2-b';
const tmpDirs: string[] = [];
function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-recover-'));
  tmpDirs.push(d);
  return d;
}
after(() => tmpDirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

const stubPool = (): WorkerPool => ({ addWorker: async () => undefined, removeNode: async () => undefined, close: async () => undefined });
const emulator = (dir: string) => new Emulator({ dir, opDelayMs: 10, addressPrefix: testAddressPrefix(45), workerPool: stubPool });

/** An emulator folder with one READY node `keep` whose sandbox holds a checkpoint; the emulator is stopped. */
async function folderWithNode(): Promise<{ dir: string; checkpoint: string }> {
  const dir = tmp();
  const emu = emulator(dir);
  await emu.start();
  try {
    const op = emu.state.beginCreate(P, 'keep', { acceleratorType: 'v4-8', runtimeVersion: 'tpu-ubuntu2204-base' });
    for (let i = 0; i < 500 && !emu.state.getOperation(op.name).done; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(emu.state.getNode(`${P}/nodes/keep`).state, 'READY');
    const checkpoint = path.join(emu.sandboxDir(tpuNodeKey(`${P}/nodes/keep`), 0), 'ckpt', 'step-100.pt');
    fs.mkdirSync(path.dirname(checkpoint), { recursive: true });
    fs.writeFileSync(checkpoint, 'weights');
    return { dir, checkpoint };
  } finally {
    await emu.stop();
  }
}

/** The refusal every unusable state file gets. */
function refusal(dir: string, problem: RegExp): (e: unknown) => boolean {
  return (e) => {
    assert.ok(e instanceof EmulatorError && e.code === 'FAILED_PRECONDITION', String(e));
    assert.ok(e.message.includes(stateFile(dir)), `names the file: ${e.message}`);
    assert.match(e.message, problem);
    assert.match(e.message, /tpw emulator start --restore-previous/);
    assert.match(e.message, /tpw emulator start --reset-state/);
    assert.doesNotMatch(e.message, /see .*emulator\.log/);
    return true;
  };
}

describe('an unusable state file', () => {
  const cases: [string, (text: string) => string, RegExp][] = [
    ['valid JSON that is partial', () => '{"version":1}', /incomplete or malformed \(nodes: Required/],
    ['truncated JSON', (text) => text.slice(0, Math.floor(text.length / 2)), /not valid JSON/],
    ['another version', (text) => text.replace('"version": 1', '"version": 2'), /version is 2/],
    ['an empty file', () => '', /empty/],
    ['nodes missing fields', () => JSON.stringify({ version: 1, nodes: [{ name: `${P}/nodes/keep` }], operations: [], addresses: {} }), /nodes\.0\.state/],
    [
      'addresses that contradict the nodes',
      (text) => text.replace(new RegExp(`"${esc(testAddressPrefix(45))}\\.1": "[^"]*"`), `"${testAddressPrefix(45)}.1": "someone-else#0"`),
      new RegExp(`worker 0 of .*keep has address ${esc(testAddressPrefix(45))}\\.1, which the file's address table gives to someone-else#0`),
    ],
  ];
  for (const [what, damage, problem] of cases) {
    it(`(${what}) stops the emulator from starting, names the file and the fix, and touches nothing`, async () => {
      const { dir, checkpoint } = await folderWithNode();
      const damaged = damage(fs.readFileSync(stateFile(dir), 'utf8'));
      fs.writeFileSync(stateFile(dir), damaged);
      await assert.rejects(emulator(dir).start(), refusal(dir, problem));
      assert.equal(fs.readFileSync(stateFile(dir), 'utf8'), damaged, 'the state file is left as it was');
      assert.equal(fs.readFileSync(checkpoint, 'utf8'), 'weights', 'the sandbox is kept');
      assert.equal(fs.existsSync(path.join(dir, 'workers-orphaned')), false);
      assert.equal(fs.existsSync(endpointFile(dir)), false);
    });
  }

  it('the daemon refuses with the message itself (not "see emulator.log"), and the log names the file', async () => {
    const { dir } = await folderWithNode();
    fs.writeFileSync(stateFile(dir), '{"version":1,"nodes":[');
    await assert.rejects(startEmulatorDaemon({ dir, command: [process.execPath, '-e', 'process.exit(3)'] }), refusal(dir, /not valid JSON/));
    assert.ok(fs.readFileSync(path.join(dir, 'emulator.log'), 'utf8').includes(stateFile(dir)), 'the log names the state file');
  });

  it('--restore-previous brings back the previous generation and keeps the bad file', async () => {
    const { dir, checkpoint } = await folderWithNode();
    assert.ok(fs.existsSync(previousStateFile(dir)), 'every write keeps the generation before it');
    fs.writeFileSync(stateFile(dir), '{"version":1}');
    const said = Emulator.recoverState(dir, 'restore-previous');
    assert.match(said, /Restored .*state\.json\.prev \(1 VM\(s\)\).*kept as .*state\.json\.before-restore-/);
    const emu = emulator(dir);
    await emu.start();
    try {
      assert.equal(emu.state.getNode(`${P}/nodes/keep`).state, 'READY');
      assert.equal(fs.readFileSync(checkpoint, 'utf8'), 'weights');
    } finally {
      await emu.stop();
    }
    const bad = fs.readdirSync(dir).filter((f) => f.startsWith('state.json.before-restore-'));
    assert.equal(bad.length, 1);
    assert.equal(fs.readFileSync(path.join(dir, bad[0]), 'utf8'), '{"version":1}');
  });

  it('--reset-state sets the file aside and starts empty; sandboxes are moved aside, not deleted', async () => {
    const { dir } = await folderWithNode();
    fs.writeFileSync(stateFile(dir), 'garbage');
    assert.match(Emulator.recoverState(dir, 'reset-state'), /Set the emulator's state aside as .*state\.json\.reset-/);
    const emu = emulator(dir);
    await emu.start();
    try {
      assert.deepEqual(emu.state.allNodes(), []);
    } finally {
      await emu.stop();
    }
    const orphaned = fs.readdirSync(path.join(dir, 'workers-orphaned'));
    assert.equal(orphaned.length, 1);
    assert.match(orphaned[0], /^tpu_local-project_[a-z0-9-]+_keep-/);
    assert.equal(fs.readFileSync(path.join(dir, 'workers-orphaned', orphaned[0], 'w0', 'ckpt', 'step-100.pt'), 'utf8'), 'weights');
    assert.equal(fs.readFileSync(fs.readdirSync(dir).filter((f) => f.startsWith('state.json.reset-')).map((f) => path.join(dir, f))[0], 'utf8'), 'garbage');
  });

  it('the CLI takes the flags only with `emulator start`, and not both', async () => {
    const ws = tmp();
    const both = await runTpw(ws, ['emulator', 'start', '--restore-previous', '--reset-state']);
    assert.equal(both.code, 2);
    assert.match(both.err.join('\n'), /cannot be combined/);
    const stop = await runTpw(ws, ['emulator', 'stop', '--reset-state']);
    assert.equal(stop.code, 2);
    assert.match(stop.err.join('\n'), /tpw emulator stop: unknown option --reset-state; see tpw emulator stop --help/);
  });
});

describe('the endpoint file', () => {
  const foreground = `require(${JSON.stringify(path.resolve(__dirname, '../../emulator/src/daemon.ts'))}).runEmulatorForeground({ workerPool: () => ({ addWorker: async () => {}, removeNode: async () => {}, close: async () => {} }) }).catch((e) => { console.error(e); process.exit(1); });`;
  const command = [process.execPath, '--import', 'tsx', '-e', foreground];

  it('when corrupt, is named in every message, and `emulator start` replaces it', async () => {
    const dir = path.join(tmp(), 'emulator');
    fs.mkdirSync(dir, { mode: 0o700 });
    fs.writeFileSync(endpointFile(dir), '{"pid": 12', { mode: 0o600 });
    assert.throws(() => readEmulatorEndpoint(dir), (e) => isTpwError(e, 'FAILED_PRECONDITION') && e.message.includes(endpointFile(dir)) && /not valid JSON.*tpw emulator start/.test(e.message));
    const status = await emulatorStatus({ dir });
    assert.equal(status.running, false);
    assert.ok(!status.running && status.message.includes(endpointFile(dir)), JSON.stringify(status));
    const notices: string[] = [];
    const ep = await startEmulatorDaemon({ dir, command, addressPrefix: testAddressPrefix(46), notice: (m) => notices.push(m) });
    try {
      assert.match(notices.join('\n'), /Removed the unusable endpoint file .*endpoint\.json \(it is not valid JSON\)/);
      assert.equal(readEmulatorEndpoint(dir)?.pid, ep.pid);
    } finally {
      assert.equal(await stopEmulatorDaemon({ dir }), true);
    }
  });

  it('naming a live process that is not the emulator: stop signals nothing and removes the file', async () => {
    const dir = path.join(tmp(), 'emulator');
    fs.mkdirSync(dir, { mode: 0o700 });
    const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' });
    try {
      assert.ok(sleeper.pid);
      // What an emulator long gone wrote; its pid has since been given to `sleep`.
      const stale: EmulatorEndpoint = {
        pid: sleeper.pid,
        procStart: '1',
        cmdline: [process.execPath, '/somewhere/dist/cli.js', 'emulator', 'run-foreground'],
        host: '127.0.0.1',
        restPort: 1,
        token: 'x'.repeat(43),
        sshPort: 2,
        project: 'local-project',
        zones: ['us-central2-b'],
        username: os.userInfo().username,
        clientKeyPath: path.join(dir, 'keys', 'client_ed25519'),
        startedAt: new Date(0).toISOString(),
      };
      fs.writeFileSync(endpointFile(dir), JSON.stringify(stale), { mode: 0o600 });
      fs.writeFileSync(path.join(dir, 'emulator.lock'), JSON.stringify({ pid: sleeper.pid, procStart: '1', cmdline: stale.cmdline }), { mode: 0o600 });
      assert.equal(readEmulatorEndpoint(dir), undefined);
      const notices: string[] = [];
      assert.equal(await stopEmulatorDaemon({ dir, notice: (m) => notices.push(m), timeoutMs: 500 }), false);
      assert.match(notices.join('\n'), new RegExp(`Removed the stale endpoint file .*endpoint\\.json \\(pid ${sleeper.pid} now belongs to another process\\); no process was signalled`));
      assert.equal(fs.existsSync(endpointFile(dir)), false);
      // A lock of an older version names only the pid: not enough to signal it either.
      fs.writeFileSync(path.join(dir, 'emulator.lock'), String(sleeper.pid), { mode: 0o600 });
      assert.equal(await stopEmulatorDaemon({ dir, timeoutMs: 500 }), false);
      // Nor an endpoint file whose start time is blank, on a machine with /proc (where every emulator records one).
      fs.writeFileSync(endpointFile(dir), JSON.stringify({ ...stale, procStart: '' }), { mode: 0o600 });
      assert.equal(readEmulatorEndpoint(dir), undefined);
      const blank: string[] = [];
      assert.equal(await stopEmulatorDaemon({ dir, notice: (m) => blank.push(m), timeoutMs: 500 }), false);
      assert.match(blank.join('\n'), /Removed the stale endpoint file .*no process was signalled/);
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(sleeper.exitCode, null);
      assert.equal(sleeper.signalCode, null);
      process.kill(sleeper.pid, 0); // still alive
    } finally {
      sleeper.kill('SIGKILL');
    }
  });
});
