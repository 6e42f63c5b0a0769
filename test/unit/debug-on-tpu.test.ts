/**
 * "Debug on TPU": the real trainer runs on an emulated worker under a real debugpy (PyPI), listening on the
 * worker's loopback; a Debug Adapter Protocol client connects through the product's tunnel over the run's SSH
 * connection, sets a breakpoint in the LOCAL copy of the trainer, is stopped there (the synced workspace's
 * path mapped back to the local one), and lets the run go on to a normal exit.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { openBackend, type Backend } from '../../extension/src/core/backend';
import { attachDebugpyToRun } from '../../extension/src/core/debug/attach-pid';
import { attachConfiguration, debugPort, debugRunEnv, forwardDebugpy, prepareDebugpy, waitForDebugpy } from '../../extension/src/core/debug/debugpy';
import { remoteWorkspaceDir, runRecipe, type RunResult } from '../../extension/src/core/run/engine';
import { ConnectionManager, hostKeyOptionsFor } from '../../extension/src/core/ssh/connection';
import type { PortForward } from '../../extension/src/core/ssh/port-forward';
import { findNode } from '../../extension/src/core/slices/find';
import { emulatorPodFixture } from '../helpers/cli';
import { DapClient } from '../helpers/dap-client';
import { testAddressPrefix } from '../helpers/loopback';

const pod = emulatorPodFixture('debugpy', testAddressPrefix(73), { before, after });
const REPO_TRAINER = path.resolve(__dirname, '../../trainer/tpu_trainer');
let backend: Backend | undefined;
let conns: ConnectionManager | undefined;
let forward: PortForward | undefined;
let dap: DapClient | undefined;

after(async () => {
  dap?.close();
  await forward?.close();
  conns?.dispose();
  await backend?.close();
});

test('a breakpoint set in the local trainer stops the run on the worker at that file and line, then the run ends normally', { timeout: 300_000 }, async () => {
  const one = await pod.tpw('vm', 'create', 'one', '--type', 'v5litepod-8');
  assert.equal(one.code, 0, one.err.join('\n'));
  // The workspace: the trainer's package as a user's repository holds it, and a short recipe.
  fs.cpSync(REPO_TRAINER, path.join(pod.ws, 'trainer/tpu_trainer'), { recursive: true, filter: (src) => !src.includes('__pycache__') });
  const recipe = pod.writeRecipe(
    'debug.sh',
    [
      'export PJRT_DEVICE=CPU',
      'export OMP_NUM_THREADS=1',
      'export PYTHONUNBUFFERED=1',
      'export PYTHONPATH="trainer${PYTHONPATH:+:$PYTHONPATH}"',
      'python3 -m tpu_trainer.train model=tiny-llama max_steps=2 global_batch_size=8 block_size=64 logging_steps=1 num_threads=1',
      '',
    ].join('\n'),
  );
  const localFile = path.join(pod.ws, 'trainer/tpu_trainer/train.py');
  // The line is looked up in the source, as a user clicks in the gutter: the first statement of a step.
  const line = fs.readFileSync(localFile, 'utf8').split('\n').findIndex((l) => l.includes('lr = run.optimizer.param_groups[0]["lr"]')) + 1;
  assert.ok(line > 0, 'the breakpoint line is in train.py');

  backend = await openBackend({ useEmulator: true });
  conns = new ConnectionManager(hostKeyOptionsFor(backend.kind, false));
  const owner = conns;
  const { node } = await findNode(backend, 'one');
  const [w0] = await backend.workersOf(node);
  const [home] = await prepareDebugpy(owner, [w0]);
  const plan = { workers: [0] };
  const lines: string[] = [];
  let ended = false;
  let runId = '';
  const running: Promise<RunResult> = runRecipe({
    backend,
    node,
    recipePath: path.join(pod.ws, recipe),
    workspaceRoot: pod.ws,
    conns: owner,
    ...debugRunEnv(plan),
    onStarted: (id) => (runId = id),
    listener: { onLine: (_w, _s, l) => lines.push(l) },
  }).finally(() => (ended = true));

  await waitForDebugpy(owner, w0, debugPort(plan, 0), { timeoutMs: 120_000, ended: () => ended });
  assert.ok(!lines.some((l) => l.startsWith('step ')), 'the trainer waits for the debugger before its first step');
  forward = await forwardDebugpy(owner, w0, debugPort(plan, 0));
  const attempts = owner.connectAttempts;
  const config = attachConfiguration({ name: 'Debug on TPU', localPort: forward.localPort, workspaceRoot: pod.ws, remoteWorkspace: remoteWorkspaceDir(pod.ws), home });
  assert.equal(config.pathMappings[0].remoteRoot, `${home}/.tpw/workspaces/${path.basename(pod.ws)}`);

  const client = await DapClient.connect(config.connect.port, config.connect.host);
  dap = client;
  await client.request('initialize', { clientID: 'tpw-test', adapterID: 'debugpy', pathFormat: 'path', linesStartAt1: true, columnsStartAt1: true });
  // debugpy answers attach after configurationDone; the breakpoints go in between, on "initialized".
  const attached = client.request('attach', { ...config });
  await client.event('initialized', 60_000);
  const set = await client.request('setBreakpoints', { source: { path: localFile }, breakpoints: [{ line }] });
  assert.equal((set.body?.breakpoints as { line: number }[])[0].line, line);
  await client.request('configurationDone');
  await attached;

  // A breakpoint that did not bind lets the run end: fail then, with what debugpy said about it.
  const stopped = await Promise.race([
    client.event('stopped', 180_000),
    client.event('terminated', 180_000).then(() => assert.fail(`the run ended without stopping; setBreakpoints: ${JSON.stringify(set.body)}; log: ${lines.slice(-8).join(' | ')}`)),
  ]);
  assert.equal(stopped.body?.reason, 'breakpoint');
  const threadId = stopped.body?.threadId as number;
  const trace = await client.request('stackTrace', { threadId, startFrame: 0, levels: 1 });
  const top = (trace.body?.stackFrames as { name: string; line: number; source: { path: string } }[])[0];
  assert.equal(top.source.path, localFile, 'the stop is shown in the local file, not the worker\'s copy');
  assert.equal(top.line, line);
  assert.equal(top.name, 'train_step');
  const frameId = (trace.body?.stackFrames as { id: number }[])[0].id;
  const step = await client.request('evaluate', { expression: 'step', frameId, context: 'watch' });
  assert.equal(step.body?.result, '1', 'stopped in the first step');
  assert.equal(owner.connectAttempts, attempts, 'the debugger came over the run\'s connection');
  // "Attach Debugger" on this run finds the port the run's debugpy recorded instead of injecting a second one.
  const again = await attachDebugpyToRun(owner, w0, runId);
  assert.deepEqual([again.port, again.via], [debugPort(plan, 0), 'already']);

  // Lift the breakpoint and let the run finish.
  await client.request('setBreakpoints', { source: { path: localFile }, breakpoints: [] });
  await client.request('continue', { threadId });
  const result = await running;
  assert.equal(result.ok, true, lines.slice(-20).join('\n'));
  assert.deepEqual(result.workers.map((w) => w.exitCode), [0]);
  assert.ok(lines.some((l) => /^summary status=ok steps=2/.test(l)), lines.slice(-10).join('\n'));
  assert.ok(lines.some((l) => l.startsWith('tpw: debugpy listening on 127.0.0.1:')), 'the worker said where debugpy listens');
});
