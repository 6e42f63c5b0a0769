/**
 * Port forwarding from a worker (`tpw forward`, "Forward Port…"): a real HTTP server (Python's http.server)
 * runs on an emulated worker's loopback and is reached through a local port carried over the shared SSH
 * connection, also after that connection is dropped and made again.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { openBackend, type Backend } from '../../extension/src/core/backend';
import { isTpwError, type TpwError } from '../../extension/src/core/errors';
import { ConnectionManager, hostKeyOptionsFor } from '../../extension/src/core/ssh/connection';
import { parsePortPair, PortForward } from '../../extension/src/core/ssh/port-forward';
import type { WorkerTarget } from '../../extension/src/core/ssh/types';
import { findNode } from '../../extension/src/core/slices/find';
import { emulatorPodFixture } from '../helpers/cli';
import { acceptedConnections, waitFor } from '../helpers/process';
import { freePort, httpGet, startOnWorker, stopOnWorker, waitForPortOnWorker } from '../helpers/worker-server';
import { buildAll, ensureFreshBundle, REPO } from '../helpers/fresh-bundle';
import { testAddressPrefix } from '../helpers/loopback';

const pod = emulatorPodFixture('port-forward', testAddressPrefix(71), { before, after });
let backend: Backend | undefined;
let conns: ConnectionManager | undefined;
let worker: WorkerTarget;
let serverPort = 0;
let serverPid = 0;
const forwards: PortForward[] = [];

async function until200(url: string): Promise<string> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      const r = await httpGet(url);
      if (r.status === 200) return r.body;
    } catch (e) {
      if (Date.now() > deadline) throw e;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

// Made by the first test, not in a hook: the fixture's hook starts the emulator first.
let ready: Promise<void> | undefined;
const setUp = (): Promise<void> => (ready ??= start());
async function start(): Promise<void> {
  backend = await openBackend({ useEmulator: true });
  conns = new ConnectionManager(hostKeyOptionsFor(backend.kind, false));
  const { node } = await findNode(backend, 'pod');
  worker = (await backend.workersOf(node))[1];
  serverPort = await freePort();
  // Served from the worker's home: the file says which worker wrote it.
  serverPid = await startOnWorker(conns, worker, `mkdir -p site && echo "served by worker $TPU_WORKER_ID" > site/hello.txt && exec python3 -m http.server ${serverPort} --bind 127.0.0.1 --directory site`, 'http.log');
  await waitForPortOnWorker(conns, worker, serverPort);
}

after(async () => {
  await Promise.all(forwards.map((f) => f.close()));
  conns?.dispose();
  await backend?.close();
});

test("a worker's HTTP server is reachable through the forward, over the one shared connection", async () => {
  await setUp();
  const owner = conns!;
  // The server holds that number on this machine (an emulated worker's loopback is this machine's): asked
  // for the same number first, the forward must take another port rather than fail.
  const f = await PortForward.open(owner, { target: worker, remotePort: serverPort, samePortFirst: true });
  forwards.push(f);
  assert.notEqual(f.localPort, serverPort);
  assert.equal(f.url, `http://localhost:${f.localPort}/`);
  assert.equal((await until200(`${f.url}hello.txt`)).trim(), 'served by worker 1');
  const attempts = owner.connectAttempts;
  const pages = await Promise.all([1, 2, 3, 4, 5, 6].map(() => httpGet(`${f.url}hello.txt`)));
  assert.deepEqual(pages.map((p) => p.status), [200, 200, 200, 200, 200, 200], 'six at once, as a browser opens them');
  assert.equal(owner.connectAttempts, attempts, 'no new SSH connection per request');
  assert.equal(acceptedConnections(worker.host, worker.port), 1, 'the worker holds one SSH connection');
});

test('the forward keeps working after the SSH connection is dropped and made again', async () => {
  const owner = conns!;
  const f = forwards[0];
  // A long-lived socket through the forward (a debugger's, a notebook's websocket) is open when the connection drops.
  const open = await import('node:net').then((net) => net.connect(f.localPort, '127.0.0.1'));
  const ended = new Promise<void>((r) => open.once('close', () => r()));
  await waitFor(() => f.openSockets === 1 && f.accepted >= 8, 10_000, 'the long-lived socket carried');
  const before = owner.connectAttempts;
  const conn = await owner.get(worker);
  conn.client.destroy(); // the network goes away under the connection
  await waitFor(() => conn.closed, 10_000, 'the connection seen as dropped');
  await ended; // what was open on it ends, rather than hanging
  assert.equal((await httpGet(`${f.url}hello.txt`)).body.trim(), 'served by worker 1', 'the same local port, after the drop');
  assert.equal(owner.connectAttempts, before + 1, 'one new connection, made by the forward');
  assert.equal(f.localPort, forwards[0].localPort);
});

test('a port nothing listens on, and a local port in use, are refused with sentences naming them', async () => {
  const owner = conns!;
  const errors: TpwError[] = [];
  const dead = await freePort();
  const f = await PortForward.open(owner, { target: worker, remotePort: dead }, { onError: (e) => errors.push(e) });
  forwards.push(f);
  await assert.rejects(httpGet(f.url), /ECONNRESET|socket hang up/);
  assert.notEqual(f.localPort, dead, 'a free port, not the number forwarded to (which would loop on the emulator)');
  await waitFor(() => errors.length === 1, 10_000, 'the error reported');
  assert.match(errors[0].message, new RegExp(`^worker 1 \\(${worker.host.replace(/\./g, '\\.')}:\\d+\\): nothing accepted a connection to localhost:${dead} on the worker`));

  const taken = forwards[0].localPort;
  await assert.rejects(PortForward.open(owner, { target: worker, remotePort: serverPort, localPort: taken }), (e: unknown) => {
    assert.ok(isTpwError(e, 'INVALID_ARGUMENT'));
    assert.match(e.message, new RegExp(`^Local port ${taken} cannot be used to forward port ${serverPort} of worker 1 .*EADDRINUSE`));
    return true;
  });
  assert.throws(() => parsePortPair('6006:x'), /"6006:x" is not REMOTE or REMOTE:LOCAL/);
  assert.throws(() => parsePortPair('70000'), /The remote port "70000" is not a port number/);
  assert.deepEqual(parsePortPair('6006:16006'), { remotePort: 6006, localPort: 16006 });
});

test('`tpw forward pod:1 PORT` serves the worker on the printed local port until Ctrl-C', async () => {
  // The bundled CLI, as users run it (bin/tpw.js), made fresh from the source: a child transpiling the whole CLI
  // through tsx needs a minute on a busy machine before it forwards anything.
  await ensureFreshBundle({ entry: path.join(REPO, 'extension/src/cli/main.ts'), outfile: path.join(REPO, 'dist/cli.js'), build: buildAll });
  const child = spawn(process.execPath, [path.join(REPO, 'bin/tpw.js'), 'forward', 'pod:1', String(serverPort)], {
    cwd: pod.ws,
    env: { ...process.env, TPW_HOME: pod.home },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (err += b.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  try {
    await waitFor(() => /Forwarding until Ctrl-C/.test(err), 60_000, `tpw forward to start (stderr: ${err})`);
    const m = /^localhost:(\d+) → pod worker 1 localhost:(\d+) {2}(http:\/\/localhost:\d+\/)$/m.exec(out);
    assert.ok(m, out);
    assert.equal(Number(m[2]), serverPort);
    assert.equal((await httpGet(`${m[3]}hello.txt`)).body.trim(), 'served by worker 1');
    child.kill('SIGINT');
    assert.equal(await exited, 0, err);
  } finally {
    child.kill('SIGKILL');
    // The last test: the server goes before the fixture's hook stops the emulator (hooks run in the order registered).
    await stopOnWorker(conns!, worker, serverPid);
  }
});
