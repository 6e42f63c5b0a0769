/**
 * One connection owner per process: a run, its run view (a read-only log watch and the live metrics poll)
 * and a terminal on the same workers share ONE SSH connection per worker. Counted on the server side (the
 * emulator's SSH workers' accepted TCP connections, from /proc/net/tcp) while all three are active.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { openBackend, type Backend } from '../../extension/src/core/backend';
import { MetricsTail } from '../../extension/src/core/profiles/metrics-tail';
import { attachRun, runRecipe, type RunConnections } from '../../extension/src/core/run/engine';
import { ConnectionManager, hostKeyOptionsFor } from '../../extension/src/core/ssh/connection';
import { execCollect } from '../../extension/src/core/ssh/exec';
import { bashCommand } from '../../extension/src/core/ssh/quote';
import { runDirWord } from '../../extension/src/core/ssh/run-dir';
import { findNode } from '../../extension/src/core/slices/find';
import { emulatorPodFixture } from '../helpers/cli';
import { acceptedConnections, waitFor } from '../helpers/process';
import { testAddressPrefix } from '../helpers/loopback';

const pod = emulatorPodFixture('shared-conn', testAddressPrefix(23), { before, after });
let backend: Backend | undefined;
let conns: ConnectionManager | undefined;

after(async () => {
  conns?.dispose();
  await backend?.close();
});

test('a run, its run view and a terminal on the same worker use one SSH connection', async () => {
  // Opened here, not in a hook: the fixture's hook starts the emulator first.
  backend = await openBackend({ useEmulator: true });
  // What the extension's Ctx (and the CLI) hold: one owner, host keys as for the backend's kind.
  const owner = new ConnectionManager(hostKeyOptionsFor(backend.kind, false));
  conns = owner;
  // Runs until the test writes `go` into its run folder (so all three readers are open at once).
  const recipe = pod.writeRecipe('wait.sh', `bash -c 'mkdir -p "$TPW_RUN_DIR/output"; echo up; for i in $(seq 1 600); do [ -e "$TPW_RUN_DIR/go" ] && break; sleep 0.1; done; echo '"'"'{"step": 1, "loss": 2.5}'"'"' >> "$TPW_RUN_DIR/output/metrics.jsonl"; echo bye'\n`);
  const { node } = await findNode(backend, 'pod');
  let started: (RunConnections & { runId: string }) | undefined;
  const runLines: string[] = [];
  const running = runRecipe({
    backend,
    node,
    recipePath: `${pod.ws}/${recipe}`,
    workspaceRoot: pod.ws,
    conns: owner,
    onStarted: (runId, source) => (started = { runId, ...source }),
    listener: { onLine: (w, _s, l) => runLines.push(`${w}:${l}`) },
  });
  await waitFor(() => started !== undefined && runLines.filter((l) => l.endsWith(':up')).length === 4, 30_000, 'the run up on every worker');
  const { runId, workers, conns: runConns } = started!;
  assert.equal(runConns, owner, 'the run reports the owner it was given');

  // The run view: its own read-only watch of the log, and the live metrics poll, over the connections it was handed.
  const viewLines: string[] = [];
  const closeView = new AbortController();
  const view = attachRun(runId, workers, runConns, { onLine: (w, _s, l) => viewLines.push(`${w}:${l}`) }, { failFast: false, signal: closeView.signal });
  const metrics = new MetricsTail(runId, workers, runConns);
  await metrics.poll();
  await waitFor(() => viewLines.filter((l) => l.endsWith(':up')).length === 4, 15_000, 'the view reading every log');

  // A terminal on w0: the call terminal.ts's WorkerPty makes on the extension's owner.
  const shell = await owner.openShell(workers[0], { term: 'xterm-256color', rows: 24, cols: 80, width: 0, height: 0 });
  let shellOut = '';
  shell.on('data', (b: Buffer) => (shellOut += b.toString()));
  shell.write('echo "terminal on $TPU_WORKER_ID"\n');
  await waitFor(() => shellOut.includes('terminal on 0'), 10_000, 'the terminal answering');

  // Everything is open at once: the run's tail, the view's tail, the terminal. One connection per worker.
  for (const w of workers) assert.equal(acceptedConnections(w.host, w.port), 1, `the emulator's worker ${w.index} holds one connection`);
  assert.equal(owner.connectAttempts, workers.length, 'one connect per worker for sync, start, run, view, metrics and terminal');

  // Let the run end; the view sees the same end, and the metrics the record written at the end.
  await Promise.all(workers.map(async (w) => execCollect(await owner.get(w), bashCommand(`touch ${runDirWord(runId)}/go`))));
  const result = await running;
  assert.equal(result.ok, true, JSON.stringify(result.workers));
  const seen = await view.result;
  assert.deepEqual(seen.workers.map((w) => w.exitCode), [0, 0, 0, 0]);
  assert.deepEqual((await metrics.poll()).map((m) => m.worker).sort(), [0, 1, 2, 3]);
  assert.equal(owner.connectAttempts, workers.length, 'still one connect per worker');
  shell.write('exit\n');
  await new Promise((r) => shell.once('close', r));
});
