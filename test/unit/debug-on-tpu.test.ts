/**
 * "Debug on TPU": the real trainer runs on an emulated worker under a real debugpy (PyPI), listening on a
 * unix socket only its owner can open; a Debug Adapter Protocol client connects through the product's tunnel
 * (a unix socket here, a `direct-streamlocal` channel over the run's SSH connection), sets a breakpoint in the LOCAL copy of the trainer, is stopped there (the synced workspace's
 * path mapped back to the local one), and lets the run go on to a normal exit.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { attachDebugpyToRun } from '../../extension/src/core/debug/attach-pid';
import { attachConfiguration, debugRunEnv, forwardDebugpy, prepareDebugpy, waitForDebugpy } from '../../extension/src/core/debug/debugpy';
import { remoteWorkspaceDir, runRecipe, type RunResult } from '../../extension/src/core/run/engine';
import { emulatorPodFixture } from '../helpers/cli';
import { DapClient } from '../helpers/dap-client';
import { debugSessionFixture, vmWorker } from '../helpers/debug-session';
import { testAddressPrefix } from '../helpers/loopback';

const pod = emulatorPodFixture('debugpy', testAddressPrefix(73), { before, after });
const REPO_TRAINER = path.resolve(__dirname, '../../trainer/tpu_trainer');
const session = debugSessionFixture({ after });

test('a breakpoint set in the local trainer stops the run on the worker at that file and line, then the run ends normally', { timeout: 300_000 }, async () => {
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

  const { backend, conns: owner, node, w0 } = await vmWorker(pod, session);
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

  for (const deadline = Date.now() + 60_000; !runId; await new Promise((r) => setTimeout(r, 100))) if (Date.now() > deadline) assert.fail('the run did not start');
  const listener = await waitForDebugpy(owner, w0, runId, { timeoutMs: 120_000, ended: () => ended });
  assert.ok(!lines.some((l) => l.startsWith('step ')), 'the trainer waits for the debugger before its first step');
  const forward = await forwardDebugpy(owner, w0, listener.socket);
  session.forward = forward;
  const attempts = owner.connectAttempts;
  const config = attachConfiguration({ name: 'Debug on TPU', localSocket: forward.localSocket, workspaceRoot: pod.ws, remoteWorkspace: remoteWorkspaceDir(pod.ws), home });
  assert.match(config.pathMappings[0].remoteRoot, new RegExp(`^${home}/\\.tpw/workspaces/${path.basename(pod.ws)}-[0-9a-f]{10}$`));

  const client = await DapClient.connectSocket(config.socket);
  session.dap = client;
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
  // "Attach Debugger" on this run finds the socket the run's listener recorded instead of injecting a second one.
  const again = await attachDebugpyToRun(owner, w0, runId);
  assert.deepEqual([again.socket, again.via], [listener.socket, 'already']);

  // Lift the breakpoint and let the run finish.
  await client.request('setBreakpoints', { source: { path: localFile }, breakpoints: [] });
  await client.request('continue', { threadId });
  const result = await running;
  assert.equal(result.ok, true, lines.slice(-20).join('\n'));
  assert.deepEqual(result.workers.map((w) => w.exitCode), [0]);
  assert.ok(lines.some((l) => /^summary status=ok steps=2/.test(l)), lines.slice(-10).join('\n'));
  assert.ok(lines.some((l) => l.startsWith('tpw: debugpy waiting for the debugger on worker 0 (socket /tmp/tpw-debugpy-')), 'the worker said where debugpy listens');
});
