/**
 * "Attach Debugger" to a run that is already going: a recipe whose Python loops runs on an emulated worker
 * without any debugger; the product's attach (pydevd's attach-to-process, through gdb) makes that process
 * listen on a unix socket only its owner can open, a Debug Adapter Protocol client connects through the
 * product's tunnel over the run's SSH connection, sets a breakpoint in the LOCAL copy of the script, is stopped there inside the
 * loop, disconnects, and the run finishes normally with every iteration done (it was never restarted).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import * as fs from 'node:fs';
import { after, before, test } from 'node:test';
import { attachDebugpyToRun } from '../../extension/src/core/debug/attach-pid';
import { attachConfiguration, forwardDebugpy, prepareDebugpy, waitForDebugpy } from '../../extension/src/core/debug/debugpy';
import { remoteWorkspaceDir, runRecipe, type RunResult } from '../../extension/src/core/run/engine';
import { findNode } from '../../extension/src/core/slices/find';
import { emulatorPodFixture } from '../helpers/cli';
import { DapClient } from '../helpers/dap-client';
import { debugSessionFixture, vmWorker } from '../helpers/debug-session';
import { testAddressPrefix } from '../helpers/loopback';

const pod = emulatorPodFixture('debug-attach', testAddressPrefix(74), { before, after });
const session = debugSessionFixture({ after });

// The loop runs long enough to attach (gdb takes seconds) and ends by itself; it prints its count at the end.
const LOOP_PY = ['import os', 'import time', '', 'print(f"started pid {os.getpid()}", flush=True)', 'total = 0', 'for i in range(1, 301):', '    total += i', '    time.sleep(0.1)', 'print(f"loop done total={total}", flush=True)', ''].join('\n');
const LOOP_LINE = LOOP_PY.split('\n').indexOf('    total += i') + 1;

test('the debugger attaches to a running recipe without restarting it, stops at a breakpoint in the loop, and the run ends normally', { timeout: 300_000 }, async () => {
  fs.writeFileSync(path.join(pod.ws, 'loop.py'), LOOP_PY);
  const recipe = pod.writeRecipe('loop.sh', ['export PYTHONUNBUFFERED=1', 'python3 loop.py', ''].join('\n'));
  const localFile = path.join(pod.ws, 'loop.py');

  const { backend, conns: owner, node, w0 } = await vmWorker(pod, session);
  // debugpy on the worker's python3 (the same step "Debug on TPU" takes); not part of the run's environment.
  await prepareDebugpy(owner, [w0]);
  const lines: string[] = [];
  let runId = '';
  const running: Promise<RunResult> = runRecipe({
    backend,
    node,
    recipePath: path.join(pod.ws, recipe),
    workspaceRoot: pod.ws,
    conns: owner,
    onStarted: (id) => (runId = id),
    listener: { onLine: (_w, _s, l) => lines.push(l) },
  });
  for (const deadline = Date.now() + 60_000; !(runId && lines.some((l) => l.startsWith('started pid'))); await new Promise((r) => setTimeout(r, 200))) {
    if (Date.now() > deadline) assert.fail(`the run did not start: ${lines.join(' | ')}`);
  }
  
  const t0 = Date.now();
  const attached = await attachDebugpyToRun(owner, w0, runId);
  const attachMs = Date.now() - t0;
  assert.equal(attached.via, 'plain', 'root with CAP_SYS_PTRACE attaches without sudo');
  assert.ok(lines.includes(`started pid ${attached.pid}`), `attached to the recipe's python (pid ${attached.pid}), not its bash: ${lines.join(' | ')}`);
  assert.equal((await waitForDebugpy(owner, w0, runId, { timeoutMs: 60_000 })).socket, attached.socket);
  const forward = await forwardDebugpy(owner, w0, attached.socket);
  session.forward = forward;
  const attempts = owner.connectAttempts;
  const config = attachConfiguration({ name: 'Attach', localSocket: forward.localSocket, workspaceRoot: pod.ws, remoteWorkspace: remoteWorkspaceDir(pod.ws), home: attached.home });

  const client = await DapClient.connectSocket(config.socket);
  session.dap = client;
  await client.request('initialize', { clientID: 'tpw-test', adapterID: 'debugpy', pathFormat: 'path', linesStartAt1: true, columnsStartAt1: true });
  const attachReq = client.request('attach', { ...config });
  await client.event('initialized', 60_000);
  const set = await client.request('setBreakpoints', { source: { path: localFile }, breakpoints: [{ line: LOOP_LINE }] });
  assert.equal((set.body?.breakpoints as { line: number }[])[0].line, LOOP_LINE);
  await client.request('configurationDone');
  await attachReq;

  const stopped = await Promise.race([
    client.event('stopped', 60_000),
    running.then(() => assert.fail(`the run ended without stopping; setBreakpoints: ${JSON.stringify(set.body)}; log: ${lines.slice(-8).join(' | ')}`)),
  ]);
  assert.equal(stopped.body?.reason, 'breakpoint');
  const threadId = stopped.body?.threadId as number;
  const trace = await client.request('stackTrace', { threadId, startFrame: 0, levels: 1 });
  const top = (trace.body?.stackFrames as { id: number; name: string; line: number; source: { path: string } }[])[0];
  assert.equal(top.source.path, localFile, "the stop is shown in the local file, not the worker's copy");
  assert.equal(top.line, LOOP_LINE);
  const i = await client.request('evaluate', { expression: 'i', frameId: top.id, context: 'watch' });
  const at = Number(i.body?.result);
  assert.ok(at > 1 && at < 300, `stopped midway through the loop that was already running (i=${String(i.body?.result)})`);
  assert.equal(owner.connectAttempts, attempts, "the debugger came over the run's connection");

  // Lift the breakpoint, let go and detach: the run goes on to its normal end.
  await client.request('setBreakpoints', { source: { path: localFile }, breakpoints: [] });
  await client.request('continue', { threadId });
  await client.request('disconnect', { terminateDebuggee: false });
  client.close();
  await forward.close();
  // A second attach to the same process finds the listener (a process listens once) and reuses its socket.
  const again = await attachDebugpyToRun(owner, w0, runId);
  assert.deepEqual([again.pid, again.socket, again.via], [attached.pid, attached.socket, 'already']);
  const result = await running;
  assert.equal(result.ok, true, lines.slice(-20).join('\n'));
  assert.deepEqual(result.workers.map((w) => w.exitCode), [0]);
  assert.ok(lines.includes(`loop done total=${(300 * 301) / 2}`), lines.slice(-10).join('\n'));
  assert.equal(lines.filter((l) => l.startsWith('started pid')).length, 1, 'the recipe was not restarted');
  console.log(`attach to pid ${attached.pid} took ${attachMs} ms`);
});

test('attaching to a run without Python, one whose trainer runs its own debugpy, or one that has ended, says so in a sentence naming the run', async () => {
  const { backend, conns } = session;
  assert.ok(backend && conns);
  const { node } = await findNode(backend, 'one');
  const [w0] = await backend.workersOf(node);
  const sleeper = pod.writeRecipe('sleep.sh', 'sleep 4\n');
  let sleepId = '';
  const sleeping = runRecipe({ backend, node, recipePath: path.join(pod.ws, sleeper), workspaceRoot: pod.ws, conns, onStarted: (id) => (sleepId = id), listener: { onLine: () => undefined } });
  for (const deadline = Date.now() + 30_000; !sleepId; await new Promise((r) => setTimeout(r, 100))) if (Date.now() > deadline) assert.fail('the sleep run did not start');
  await assert.rejects(attachDebugpyToRun(conns, w0, sleepId), (e: Error) => e.message.startsWith(`No Python process of run ${sleepId} runs on worker 0 (yet?)`) && /sleep 4/.test(e.message));
  assert.equal((await sleeping).ok, true);
  // A trainer that started debugpy by itself, on a port of its choosing: the attach says so instead of waiting.
  // It sleeps until the test stops it, so the answer never races its end on a busy machine.
  fs.writeFileSync(path.join(pod.ws, 'own.py'), ['import time', 'import debugpy', '', 'debugpy.listen(("127.0.0.1", 0))', 'print("own debugpy", flush=True)', 'time.sleep(600)', ''].join('\n'));
  const own = pod.writeRecipe('own.sh', 'python3 own.py\n');
  let ownId = '';
  const ownLines: string[] = [];
  const stopOwn = new AbortController();
  const owning = runRecipe({ backend, node, recipePath: path.join(pod.ws, own), workspaceRoot: pod.ws, conns, signal: stopOwn.signal, onStarted: (id) => (ownId = id), listener: { onLine: (_w, _s, l) => ownLines.push(l) } });
  for (const deadline = Date.now() + 30_000; !ownLines.includes('own debugpy'); await new Promise((r) => setTimeout(r, 100))) if (Date.now() > deadline) assert.fail('own.py did not start');
  await assert.rejects(attachDebugpyToRun(conns, w0, ownId), (e: Error) => e.message.startsWith('A debugger already runs in the trainer on worker 0 of run'));
  stopOwn.abort();
  assert.equal((await owning).cancelled, true, ownLines.join('\n'));
  const recipe = pod.writeRecipe('quick.sh', 'true\n');
  let runId = '';
  await runRecipe({ backend, node, recipePath: path.join(pod.ws, recipe), workspaceRoot: pod.ws, conns, onStarted: (id) => (runId = id), listener: { onLine: () => undefined } });
  await assert.rejects(attachDebugpyToRun(conns, w0, runId), (e: Error) => e.message === `Run ${runId} is no longer running on worker 0 (exit code 0): there is nothing to attach to.`);
  await assert.rejects(attachDebugpyToRun(conns, w0, 'no-such-run'), /^TpwError: Run no-such-run did not run on worker 0: it has no folder ~\/\.tpw\/runs\/no-such-run there\.$/);

  // That run as if it had been killed outright (no exit code) and its number reused by an unrelated Python, a
  // group leader of this user: nothing is injected into it.
  const [home] = await prepareDebugpy(conns, [w0]);
  const dir = path.join(home, '.tpw', 'runs', runId);
  fs.rmSync(path.join(dir, 'exit_code'));
  const bystander = spawn('python3', ['-c', 'import time; time.sleep(300)'], { detached: true, stdio: 'ignore' });
  try {
    const [, ...identity] = fs.readFileSync(path.join(dir, 'pid'), 'utf8').trim().split(' ');
    fs.writeFileSync(path.join(dir, 'pid'), `${bystander.pid} ${identity.join(' ')}\n`);
    await assert.rejects(attachDebugpyToRun(conns, w0, runId), (e: Error) => e.message === `Run ${runId} is no longer running on worker 0: its process number now belongs to another program, which is left alone.`);
    assert.equal(fs.existsSync(path.join(dir, 'debugpy')), false, 'nothing listens in the unrelated process');
    assert.equal(bystander.exitCode, null);
  } finally {
    bystander.kill('SIGKILL');
  }
});
