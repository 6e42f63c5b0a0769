/**
 * The chips of every worker, read the way the run view and `tpw top` read them: libtpu's metrics service on each
 * emulated worker, reached through a forward to the worker's localhost:8431 over the shared SSH connection. A
 * program that burns CPU on every worker makes every worker's chips busy; when it ends they go idle. A worker whose
 * service is down, slow or answering garbage is named as such, and neither the run nor the other workers notice.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { WorkerChips } from '../../protocol/chip-readings';
import type { ChipsMessage, HealthMessage, HostToWebview } from '../../protocol/run-view-messages';
import { main } from '../../extension/src/cli/main';
import { ChipsWatch } from '../../extension/src/vscode/run-view/chips';
import { openBackend, type Backend } from '../../extension/src/core/backend';
import { ChipsPoller } from '../../extension/src/core/chips/chips-poller';
import { runRecipe, type RunResult } from '../../extension/src/core/run/engine';
import { ConnectionManager, hostKeyOptionsFor } from '../../extension/src/core/ssh/connection';
import { execCollect } from '../../extension/src/core/ssh/exec';
import { runDirWord } from '../../extension/src/core/ssh/run-dir';
import type { WorkerTarget } from '../../extension/src/core/ssh/types';
import { findNode } from '../../extension/src/core/slices/find';
import { emulatorPodFixture } from '../helpers/cli';
import { testAddressPrefix } from '../helpers/loopback';
import { waitFor } from '../helpers/process';

const pod = emulatorPodFixture('chips', testAddressPrefix(60), { before, after });
let backend: Backend | undefined;
let conns: ConnectionManager | undefined;
let workers: WorkerTarget[] = [];

/** Opened in the tests, not in a hook: the fixture's hook starts the emulator first. */
async function setUp(): Promise<void> {
  if (backend) return;
  backend = await openBackend({ useEmulator: true });
  conns = new ConnectionManager(hostKeyOptionsFor(backend.kind, false));
  workers = await backend.workersOf((await findNode(backend, 'pod')).node);
}

after(async () => {
  conns?.dispose();
  await backend?.close();
});

/** Burns one core until `$TPW_RUN_DIR/stop` appears, holding ~200 MB, as a trainer holds its chips. */
const BUSY = `python3 -c 'import os, pathlib, time; held = bytearray(200 * 2**20); stop = pathlib.Path(os.environ["TPW_RUN_DIR"], "stop"); exec("while not stop.exists():\\n t = time.time()\\n while time.time() - t < 0.2: pass")'\n`;

function startBusyRun(): { done: Promise<RunResult>; runDir: () => Promise<string> } {
  const recipe = pod.writeRecipe('busy.sh', BUSY);
  let runId: string | undefined;
  const done = (async () => {
    const { node } = await findNode(backend!, 'pod');
    return runRecipe({ backend: backend!, node, recipePath: `${pod.ws}/${recipe}`, workspaceRoot: pod.ws, conns: conns!, onStarted: (id) => (runId = id), listener: {} });
  })();
  return {
    done,
    runDir: async () => {
      await waitFor(() => runId !== undefined, 60_000, 'the run started');
      return runId!;
    },
  };
}

async function stopRun(runId: string): Promise<void> {
  await Promise.all(workers.map(async (w) => execCollect(await conns!.get(w), `touch ${runDirWord(runId)}/stop`)));
}

test('every worker serves 4 chips that are busy while its program runs and idle when it ends', async () => {
  await setUp();
  const readings = new Map<number, WorkerChips>();
  const poller = new ChipsPoller(workers, conns!, (r) => readings.set(r.worker, r), { everyMs: 300 }).start();
  try {
    const run = startBusyRun();
    const runId = await run.runDir();
    await waitFor(() => workers.every((w) => (readings.get(w.index)?.chips ?? []).some((c) => c.dutyCyclePct > 5)), 60_000, 'every worker busy');
    for (const w of workers) {
      const r = readings.get(w.index)!;
      assert.equal(r.state, 'ok');
      assert.deepEqual(r.chips.map((c) => c.chip), [0, 1, 2, 3], 'v5litepod-16: 4 chips on each of 4 hosts');
      for (const c of r.chips) {
        assert.equal(c.hbmTotalBytes, 16 * 2 ** 30, 'v5e: 16 GiB of HBM per chip, as tpu-info lists it');
        // One process drives the 4 chips: its ~200 MB resident are shared among them.
        assert.ok(c.hbmUsedBytes > (150 * 2 ** 20) / 4 && c.hbmUsedBytes < c.hbmTotalBytes, `w${w.index} chip ${c.chip}: ${c.hbmUsedBytes} B`);
        assert.notEqual(c.idleSeconds, null);
        assert.notEqual(c.execP50Us, null);
      }
    }
    await stopRun(runId);
    const result = await run.done;
    assert.equal(result.workers.filter((w) => w.exitCode === 0).length, 4);
    const endedAt = Date.now();
    await waitFor(() => workers.every((w) => { const r = readings.get(w.index); return r !== undefined && r.at > endedAt && r.chips.every((c) => c.dutyCyclePct === 0 && c.hbmUsedBytes === 0); }), 30_000, 'every chip idle');
  } finally {
    poller.stop();
  }
});

test('a worker whose service is down, slow or answers garbage is named as such; the run and the others go on', async () => {
  await setUp();
  const emu = pod.emulator;
  await emu.setLibtpuFault('pod', 1, { kind: 'down' });
  await emu.setLibtpuFault('pod', 2, { kind: 'slow', delayMs: 60_000 });
  await emu.setLibtpuFault('pod', 3, { kind: 'garbage' });
  const order: WorkerChips[] = [];
  const poller = new ChipsPoller(workers, conns!, (r) => order.push(r), { everyMs: 500, deadlineMs: 3000 });
  try {
    const run = startBusyRun();
    const runId = await run.runDir();
    poller.start();
    await waitFor(() => order.some((r) => r.worker === 2), 60_000, 'the slow worker given up on');
    const first = new Map<number, WorkerChips>();
    for (const r of order) if (!first.has(r.worker)) first.set(r.worker, r);
    assert.equal(first.get(0)?.state, 'ok');
    assert.equal(first.get(1)?.state, 'no-libtpu');
    assert.match(first.get(1)!.detail!, /nothing listens on localhost:8431/);
    assert.equal(first.get(2)?.state, 'timeout');
    assert.equal(first.get(3)?.state, 'bad-reply');
    assert.match(first.get(3)!.detail!, /not a MetricResponse/);
    // The slow worker held nobody up: w0 had been read (more than once) before w2 was given up on.
    const w2At = order.findIndex((r) => r.worker === 2);
    assert.ok(order.slice(0, w2At).filter((r) => r.worker === 0 && r.state === 'ok').length >= 2, 'w0 read again while w2 was awaited');

    // Well again: the next reads of those workers are chips.
    for (const w of [1, 2, 3]) await emu.setLibtpuFault('pod', w, undefined);
    const healedFrom = order.length;
    await waitFor(() => [1, 2, 3].every((w) => order.slice(healedFrom).some((r) => r.worker === w && r.state === 'ok' && r.chips.length === 4)), 30_000, 'the three workers read again');

    await stopRun(runId);
    const result = await run.done;
    assert.deepEqual(result.workers.map((w) => w.exitCode), [0, 0, 0, 0], 'the run was not disturbed');
  } finally {
    poller.stop();
    for (const w of [1, 2, 3]) await emu.setLibtpuFault('pod', w, undefined).catch(() => undefined);
  }
});

test('a worker that cannot be reached over SSH is "unreachable", not a libtpu problem', async () => {
  await setUp();
  const gone: WorkerTarget = { ...workers[0], index: 7, port: 1 };
  const [r] = await new ChipsPoller([gone], conns!, () => undefined).readOnce();
  assert.equal(r.state, 'unreachable');
  assert.match(r.detail!, /refused/);
});

test('`tpw top RUN --once` prints every chip of every worker, names a worker it cannot read, and --json gives the readings', async () => {
  await setUp();
  const run = startBusyRun();
  const runId = await run.runDir();
  try {
    await pod.emulator.setLibtpuFault('pod', 1, { kind: 'garbage' });
    const top = await pod.tpw('top', runId, '--once');
    assert.equal(top.code, 0, top.err.join('\n'));
    assert.match(top.out[0], /^WORKER\s+CHIP\s+DUTY CYCLE\s+HBM USAGE\s+HBM BW\s+IDLE\s+QUEUE\s+HLO P50$/);
    for (const w of [0, 2, 3]) for (const c of [0, 1, 2, 3]) assert.ok(top.out.some((l) => new RegExp(`^w${w}\\s+${c}\\s+\\d+\\.\\d\\d%\\s+\\d+\\.\\d\\d GiB / 16\\.00 GiB\\s`).test(l)), `w${w} chip ${c} in:\n${top.out.join('\n')}`);
    assert.ok(top.out.some((l) => /^w1 {2}bad reply from libtpu metrics: .*not a MetricResponse/.test(l)), top.out.join('\n'));
    assert.match(top.out.at(-1)!, /Idlest chip: w\d chip \d .* Fullest HBM: w\d chip \d .* Not read: w1$/);

    const json = await pod.tpw('top', runId, '--json');
    const readings = JSON.parse(json.out.join('\n')) as WorkerChips[];
    assert.deepEqual(readings.map((r) => [r.worker, r.state, r.chips.length]), [[0, 'ok', 4], [1, 'bad-reply', 0], [2, 'ok', 4], [3, 'ok', 4]]);

    const bad = await pod.tpw('top', runId, '--interval', 'soon');
    assert.equal(bad.code, 2);
    assert.match(bad.err.join('\n'), /--interval "soon" is not a number of seconds/);
  } finally {
    await pod.emulator.setLibtpuFault('pod', 1, undefined);
    await stopRun(runId);
    await run.done;
  }
});

test('`tpw top RUN` redraws the table every interval until Ctrl-C, then exits 0', async () => {
  await setUp();
  const run = startBusyRun();
  const runId = await run.runDir();
  try {
    const out: string[] = [];
    const headers = () => out.filter((l) => l.startsWith('WORKER')).length;
    const top = main(['top', runId, '--interval', '0.5'], (l) => out.push(...l.split('\n')), () => undefined);
    await waitFor(() => headers() >= 2, 60_000, 'two tables');
    process.emit('SIGINT');
    assert.equal(await top, 0);
    assert.ok(out.some((l) => l.startsWith(`run ${runId} · `) && l.endsWith('every 0.5 s (Ctrl-C to stop)')), out.join('\n'));
  } finally {
    await stopRun(runId);
    await run.done;
  }
});

test("the run view's chips watch: batched readings, an idle-chip Health note only while training, nothing read once disposed", async () => {
  await setUp();
  const posted: HostToWebview[] = [];
  // No program runs: every chip has idled since the VM was made, far longer than a second.
  const watch = new ChipsWatch({ workers, conns: conns! }, (m) => posted.push(m), { everyMs: 300, idleNoteSeconds: 1 });
  try {
    const chips = () => posted.filter((m): m is ChipsMessage => m.type === 'chips');
    const notes = () => posted.filter((m): m is HealthMessage => m.type === 'health');
    await waitFor(() => new Set(chips().flatMap((m) => m.workers.map((w) => w.worker))).size === 4, 30_000, 'every worker read');
    assert.ok(chips().some((m) => m.workers.length > 1), 'readings of several workers go in one message');
    assert.deepEqual(notes(), [], 'not training: no note');
    watch.onMetrics([{ step: 7, worker: 2 }]);
    await waitFor(() => notes().length > 0, 30_000, 'a note');
    const note = notes()[0];
    assert.equal(note.worker, 2);
    assert.equal(note.source, 'chips');
    assert.match(note.findings[0].title, /^Chips 0, 1, 2, 3 idle for \d+ s while training$/);
    assert.match(note.findings[0].detail, /at step 7/);
    assert.ok(notes().every((n) => n.worker === 2), 'only the worker whose trainer is training');
    watch.onStatus('succeeded');
    const before = notes().length;
    const reads = chips().length;
    await waitFor(() => chips().length > reads + 2, 30_000, 'more reads after the run ended');
    assert.equal(notes().length, before, 'the run ended: no new note');
  } finally {
    watch.dispose();
  }
  const after = posted.length;
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal(posted.length, after, 'nothing posted once disposed');
});
