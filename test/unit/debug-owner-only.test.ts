/**
 * The debugger answers only its owner: while a run waits for "Debug on TPU" on an emulated worker (whose
 * loopback is this machine's), a second local user (made with useradd, driven with runuser) tries everything
 * the run's processes listen on — every loopback TCP port they hold, the worker's unix socket and the
 * workstation's end of the tunnel — as a Debug Adapter Protocol client that would run `id` in the debuggee.
 * Every attempt is refused, and then the owner attaches through the tunnel and stops at a breakpoint.
 *
 * Before, debugpy's adapter listened on the worker's 127.0.0.1:5678 for anyone: that user attached and ran
 * code as the run's user.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { attachConfiguration, debugRunEnv, forwardDebugpy, prepareDebugpy, waitForDebugpy } from '../../extension/src/core/debug/debugpy';
import { remoteWorkspaceDir, runRecipe, type RunResult } from '../../extension/src/core/run/engine';
import { emulatorPodFixture } from '../helpers/cli';
import { DapClient } from '../helpers/dap-client';
import { debugSessionFixture, vmWorker } from '../helpers/debug-session';
import { testAddressPrefix } from '../helpers/loopback';
import { processesWithEnv } from '../helpers/process';
import { SECOND_USER_SKIP, secondUserFixture } from '../helpers/second-user';

/**
 * The other user's client (standard library only): for each target, the DAP steps that end in code running in
 * the debuggee — initialize, attach, configurationDone, pause, stackTrace, evaluate `os.system(...)` — and one
 * line saying how far it got.
 */
const ATTACKER = String.raw`import json, socket, sys, time

marker = sys.argv[1]


def message(f):
    length = None
    while True:
        line = f.readline()
        if not line:
            raise EOFError("closed")
        line = line.strip()
        if not line:
            break
        k, _, v = line.partition(b":")
        if k.lower() == b"content-length":
            length = int(v)
    return json.loads(f.read(length))


def attack(sock):
    sock.settimeout(10)
    f = sock.makefile("rb")
    seq = [0]

    def request(cmd, args=None, wait=True):
        seq[0] += 1
        body = json.dumps({"seq": seq[0], "type": "request", "command": cmd, "arguments": args or {}}).encode()
        sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        mine = seq[0]
        while wait:
            m = message(f)
            if m.get("type") == "response" and m.get("request_seq") == mine:
                if not m.get("success"):
                    raise RuntimeError("%s refused: %s" % (cmd, m.get("message")))
                return m
            if m.get("type") == "event" and m.get("event") == "stopped":
                stopped.append(m)

    stopped = []
    request("initialize", {"adapterID": "debugpy", "clientID": "intruder"})
    request("attach", {"justMyCode": False}, wait=False)
    request("configurationDone")
    threads = []
    for _ in range(50):
        threads = request("threads")["body"]["threads"]
        if threads:
            break
        time.sleep(0.1)
    request("pause", {"threadId": threads[0]["id"]})
    while not stopped:
        m = message(f)
        if m.get("event") == "stopped":
            stopped.append(m)
    frames = request("stackTrace", {"threadId": stopped[0]["body"]["threadId"]})["body"]["stackFrames"]
    request("evaluate", {"expression": "__import__('os').system('id > %s')" % marker, "frameId": frames[0]["id"], "context": "repl"})
    return "RAN CODE"


for target in sys.argv[2:]:
    try:
        if target.isdigit():
            s = socket.create_connection(("127.0.0.1", int(target)), timeout=5)
        else:
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(5)
            s.connect(target)
        print(target, attack(s), flush=True)
    except Exception as e:
        print(target, "refused:", type(e).__name__, e, flush=True)
`;

/** Loopback TCP ports in LISTEN state held by `pids` (their socket inodes, looked up in /proc/net/tcp). */
function listeningPorts(pids: number[]): number[] {
  const inodes = new Set<string>();
  for (const pid of pids) {
    try {
      for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
        const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m) inodes.add(m[1]);
      }
    } catch {
      // gone
    }
  }
  const ports: number[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of fs.readFileSync(table, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length > 9 && f[3] === '0A' && inodes.has(f[9])) ports.push(parseInt(f[1].split(':')[1], 16));
    }
  }
  return ports;
}

const pod = emulatorPodFixture('debug-owner', testAddressPrefix(234), { before, after });

describe('a second local user and "Debug on TPU"', { skip: SECOND_USER_SKIP }, () => {
  const other = secondUserFixture({ before, after });
  const session = debugSessionFixture({ after });

  it('cannot attach to the waiting debugger through any port or socket; the owner can', { timeout: 300_000 }, async () => {
    // Long enough for a debugger that got in to pause it (2 s), as the other user did before.
    const PROGRAM = ['import time', '', 'total = 0', 'for i in range(1, 5):', '    total += i', '    time.sleep(0.5)', 'print(f"total={total}", flush=True)', ''].join('\n');
    fs.writeFileSync(path.join(pod.ws, 'prog.py'), PROGRAM);
    const recipe = pod.writeRecipe('debug.sh', 'python3 prog.py\n');
    const localFile = path.join(pod.ws, 'prog.py');

    const { backend, conns: owner, node, w0 } = await vmWorker(pod, session);
    const [home] = await prepareDebugpy(owner, [w0]);
    const lines: string[] = [];
    let runId = '';
    let ended = false;
    const running: Promise<RunResult> = runRecipe({
      backend,
      node,
      recipePath: path.join(pod.ws, recipe),
      workspaceRoot: pod.ws,
      conns: owner,
      ...debugRunEnv({ workers: [0] }),
      onStarted: (id) => (runId = id),
      listener: { onLine: (_w, _s, l) => lines.push(l) },
    }).finally(() => (ended = true));
    for (const deadline = Date.now() + 60_000; !runId; await new Promise((r) => setTimeout(r, 100))) if (Date.now() > deadline) assert.fail('the run did not start');
    const listener = await waitForDebugpy(owner, w0, runId, { timeoutMs: 120_000, ended: () => ended });
    const forward = await forwardDebugpy(owner, w0, listener.socket);
    session.forward = forward;

    // What the other user can find: every TCP port the run's processes listen on (found by root here, handed
    // over), the worker's socket, the workstation's end of the tunnel.
    const ports = listeningPorts(processesWithEnv(`TPW_RUN_ID=${runId}`));
    assert.ok(ports.length > 0, 'the debuggee holds its (token-guarded) loopback port');
    const marker = path.join(other.dir, 'ran-code');
    const script = other.file('attack.py', ATTACKER);
    const attack = await other.as('/usr/bin/python3', [script, marker, ...ports.map(String), listener.socket, forward.localSocket], { timeoutMs: 120_000 });
    const said = attack.stdout.trim().split('\n');
    assert.equal(said.length, ports.length + 2, attack.stdout + attack.stderr);
    for (const line of said) assert.match(line, / refused: /, `the other user got through: ${line}`);
    assert.match(said.at(-2) ?? '', /PermissionError/, 'the worker socket is in a folder only its owner can enter');
    assert.match(said.at(-1) ?? '', /PermissionError/, "the tunnel's local end is in a folder only its owner can enter");
    for (const line of said.slice(0, ports.length)) assert.match(line, /not authenticated/i, line);
    assert.ok(!fs.existsSync(marker), `the other user ran code in the debuggee: ${fs.existsSync(marker) ? fs.readFileSync(marker, 'utf8') : ''}`);

    // The owner: through the tunnel, a breakpoint in the local file, a stop, a value, and the run goes on.
    const config = attachConfiguration({ name: 'Debug on TPU', localSocket: forward.localSocket, workspaceRoot: pod.ws, remoteWorkspace: remoteWorkspaceDir(pod.ws), home });
    const client = await DapClient.connectSocket(config.socket);
    session.dap = client;
    await client.request('initialize', { clientID: 'tpw-test', adapterID: 'debugpy', pathFormat: 'path', linesStartAt1: true, columnsStartAt1: true });
    const attached = client.request('attach', { ...config });
    await client.event('initialized', 60_000);
    const line = PROGRAM.split('\n').indexOf('    total += i') + 1;
    await client.request('setBreakpoints', { source: { path: localFile }, breakpoints: [{ line }] });
    await client.request('configurationDone');
    await attached;
    const stopped = await client.event('stopped', 60_000);
    const trace = await client.request('stackTrace', { threadId: stopped.body?.threadId as number, startFrame: 0, levels: 1 });
    const top = (trace.body?.stackFrames as { id: number; line: number; source: { path: string } }[])[0];
    assert.deepEqual([top.source.path, top.line], [localFile, line]);
    await client.request('setBreakpoints', { source: { path: localFile }, breakpoints: [] });
    await client.request('continue', { threadId: stopped.body?.threadId as number });
    const result = await running;
    assert.equal(result.ok, true, lines.join('\n'));
    assert.ok(lines.includes('total=10'), lines.join('\n'));
  });
});
