/**
 * OpenSSH's own clients (`ssh`, `scp`, `sftp`, OpenSSH 9) against an emulated worker, as against a TPU VM:
 * local (to a port or a unix socket), dynamic (SOCKS), stdio and remote forwarding and its cancelling; scp in
 * its default SFTP mode both ways; an sftp batch; a pty for `ssh -t host CMD` with the client's size; window
 * changes reaching the program; and a worker environment as clean as a fresh VM's though the emulator's own
 * holds secrets. The client authenticates
 * with a key this test put on the VM through the REST API and checks the emulator's host key (BatchMode,
 * a known_hosts file, StrictHostKeyChecking=yes).
 */
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from 'ssh2';
import { defaultWorkerPathPrefix, Emulator, ensureKeys } from '../../emulator/src/emulator';
import type { EmulatorEndpoint } from '../../protocol/node/emulator-endpoint';
import { generateEd25519KeyPair } from '../../extension/src/core/ssh/keys';
import { emulatorRequest } from '../helpers/emulator-http';
import { freePort } from '../helpers/sshd';
import { testAddressPrefix } from '../helpers/loopback';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-ssh-clients-'));
const username = os.userInfo().username;
const BASE = '/v2/projects/local-project/locations/us-central2-b';
const HF_SECRET = `hf_${crypto.randomBytes(8).toString('hex')}`;
const CREDS = path.join(tmp, 'adc-secret.json');
const savedEnv = { hf: process.env.HF_TOKEN, gac: process.env.GOOGLE_APPLICATION_CREDENTIALS };

let emu: Emulator;
let ep: EmulatorEndpoint;
let host: string;
let sshPort: number;
let sandbox: string;
const keyFile = path.join(tmp, 'id_ed25519');
const knownHosts = path.join(tmp, 'known_hosts');
const clientKey = generateEd25519KeyPair(`${username}@ssh-clients-test`);
const started = new Set<ChildProcess>();

/** The one place this test talks REST, with the emulator's token. */
async function rest(method: string, urlPath: string, body?: unknown): Promise<Record<string, unknown>> {
  const r = await emulatorRequest(ep, method, urlPath, body);
  assert.equal(r.status, 200, `${method} ${urlPath}: ${JSON.stringify(r.body)}`);
  return r.body;
}

async function waitOp(op: Record<string, unknown>): Promise<void> {
  for (let i = 0; i < 500 && !op.done; i++) {
    await new Promise((r) => setTimeout(r, 20));
    op = await rest('GET', `/v2/${String(op.name)}`);
  }
  assert.ok(op.done && !op.error, `operation: ${JSON.stringify(op)}`);
}

/** Options every OpenSSH client here gets: no user config, our key only, the emulator's host key checked. */
function sshOpts(): string[] {
  return [
    '-F', '/dev/null',
    '-o', 'BatchMode=yes',
    '-o', `UserKnownHostsFile=${knownHosts}`,
    '-o', 'GlobalKnownHostsFile=/dev/null',
    '-o', 'StrictHostKeyChecking=yes',
    '-o', 'IdentitiesOnly=yes',
    '-o', `IdentityFile=${keyFile}`,
    '-o', `Port=${sshPort}`,
    '-o', `User=${username}`,
  ];
}

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], input?: string, timeoutMs = 30_000): Promise<Result> {
  return new Promise((resolve) => {
    const child = execFile(cmd, args, { timeout: timeoutMs, maxBuffer: 8 << 20 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
      resolve({ code, stdout, stderr });
    });
    child.stdin?.on('error', () => undefined); // EPIPE when the client never reads its input
    child.stdin?.end(input ?? '');
  });
}

const ssh = (args: string[], input?: string) => run('ssh', [...sshOpts(), ...args], input);

/** A long-running client, ended by the test (or by `after`). */
function startClient(cmd: string, args: string[]): { child: ChildProcess; out: () => string; err: () => string } {
  const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin?.on('error', () => undefined);
  started.add(child);
  child.on('exit', () => started.delete(child));
  let out = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  return { child, out: () => out, err: () => err };
}

function stopClient(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

async function waitFor<T>(probe: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function accepts(h: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: h, port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

function httpGet(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http.get(url, { agent: false }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve(`${res.statusCode} ${body}`));
    }).on('error', reject);
  });
}

/** ssh2's client, for what OpenSSH's cannot be scripted to do (window changes, cancelling a forward). */
async function ssh2Client(): Promise<Client> {
  const client = new Client();
  await new Promise<void>((resolve, reject) => {
    client.once('ready', () => resolve()).once('error', reject);
    client.connect({ host, port: sshPort, username, privateKey: clientKey.private, hostVerifier: (key: Buffer) => key.toString('base64') === ensureKeys(emu.dir).hostPublicKey.split(' ')[1] });
  });
  return client;
}

let httpPort: number; // a python3 http.server started on the worker, bound to its loopback
const marker = `served-by-worker-${crypto.randomBytes(4).toString('hex')}`;

before(async () => {
  // The shell that starts the emulator holds secrets; workers must not see them.
  process.env.HF_TOKEN = HF_SECRET;
  process.env.GOOGLE_APPLICATION_CREDENTIALS = CREDS;
  emu = new Emulator({ dir: path.join(tmp, 'emulator'), opDelayMs: 20, addressPrefix: testAddressPrefix(61) });
  ep = await emu.start();
  await waitOp(await rest('POST', `${BASE}/nodes?nodeId=cli`, { acceleratorType: 'v4-8', runtimeVersion: 'tpu-ubuntu2204-base' }));
  await waitOp(await rest('PATCH', `${BASE}/nodes/cli?updateMask=metadata`, { metadata: { 'ssh-keys': `${username}:${clientKey.public.trim()}` } }));
  const node = await rest('GET', `${BASE}/nodes/cli`);
  const endpoint = (node.networkEndpoints as { ipAddress: string }[])[0];
  host = endpoint.ipAddress;
  sshPort = ep.sshPort; // the node lists 8470 as a real one does; the emulator's workers share one SSH port
  fs.writeFileSync(keyFile, clientKey.private, { mode: 0o600 });
  fs.writeFileSync(knownHosts, `[${host}]:${sshPort} ${ensureKeys(emu.dir).hostPublicKey}\n`);

  const pwd = await ssh([host, 'pwd']);
  assert.equal(pwd.code, 0, pwd.stderr);
  sandbox = pwd.stdout.trim();
  assert.ok(sandbox.startsWith(emu.dir), sandbox);
  fs.writeFileSync(path.join(sandbox, 'hello.txt'), `${marker}\n`);
  const server = startClient('ssh', [...sshOpts(), host, 'exec python3 -u -m http.server 0 --bind 127.0.0.1']);
  httpPort = await waitFor(() => {
    const m = /Serving HTTP on 127\.0\.0\.1 port (\d+)/.exec(server.out());
    return m ? Number(m[1]) : undefined;
  }, 'the http server on the worker');
});

after(async () => {
  await Promise.all([...started].map(stopClient));
  await emu?.stop();
  for (const [k, v] of [['HF_TOKEN', savedEnv.hf], ['GOOGLE_APPLICATION_CREDENTIALS', savedEnv.gac]] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('port forwarding with OpenSSH ssh', () => {
  it('ssh -L reaches a server listening on the worker', async () => {
    const local = await freePort();
    const c = startClient('ssh', [...sshOpts(), '-N', '-o', 'ExitOnForwardFailure=yes', '-L', `127.0.0.1:${local}:127.0.0.1:${httpPort}`, host]);
    await waitFor(async () => ((await accepts('127.0.0.1', local)) ? true : undefined), `ssh -L listening (${c.err()})`);
    assert.equal(await httpGet(`http://127.0.0.1:${local}/hello.txt`), `200 ${marker}\n`);
    await stopClient(c.child);
  });

  it('ssh -L to a unix socket on the worker (Remote-SSH with remoteServerListenOnSocket)', async () => {
    const sockPath = path.join(sandbox, 'server.sock');
    const srv = net.createServer((s) => s.end('unix-socket-reply'));
    await new Promise<void>((resolve) => srv.listen(sockPath, resolve));
    try {
      const local = await freePort();
      const c = startClient('ssh', [...sshOpts(), '-N', '-o', 'ExitOnForwardFailure=yes', '-L', `127.0.0.1:${local}:${sockPath}`, host]);
      await waitFor(async () => ((await accepts('127.0.0.1', local)) ? true : undefined), `ssh -L listening (${c.err()})`);
      const reply = await new Promise<string>((resolve, reject) => {
        let got = '';
        net.connect({ host: '127.0.0.1', port: local }).on('data', (d: Buffer) => (got += d.toString())).on('end', () => resolve(got)).on('error', reject);
      });
      assert.equal(reply, 'unix-socket-reply');
      await stopClient(c.child);
    } finally {
      srv.close();
    }
  });

  it('Remote-SSH style: ssh -T -D with bash reading its script from stdin, and a SOCKS request through it', async () => {
    const socks = await freePort();
    const c = startClient('ssh', [...sshOpts(), '-T', '-D', `127.0.0.1:${socks}`, host, 'bash']);
    c.child.stdin?.write('echo "ready-$((6*7))"\n');
    await waitFor(() => (c.out().includes('ready-42') ? true : undefined), `the bash session (${c.err()})`);
    await waitFor(async () => ((await accepts('127.0.0.1', socks)) ? true : undefined), 'the SOCKS port');
    // --socks5-hostname: the worker resolves "localhost", as a VM would.
    const got = await run('curl', ['-sS', '--max-time', '10', '--socks5-hostname', `127.0.0.1:${socks}`, `http://localhost:${httpPort}/hello.txt`]);
    assert.equal(got.code, 0, got.stderr);
    assert.equal(got.stdout, `${marker}\n`);
    const exited = new Promise<number | null>((resolve) => c.child.once('exit', (code) => resolve(code)));
    c.child.stdin?.end('exit 3\n');
    assert.equal(await exited, 3);
  });

  it('ssh -W carries stdin and stdout to a port on the worker; addresses off this machine are refused', async () => {
    const r = await ssh(['-W', `127.0.0.1:${httpPort}`, host], 'GET /hello.txt HTTP/1.0\r\n\r\n');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^HTTP\/1\.0 200/);
    assert.ok(r.stdout.endsWith(`${marker}\n`), r.stdout);
    const off = await ssh(['-W', '192.0.2.1:80', host], '');
    assert.notEqual(off.code, 0);
    assert.match(off.stderr, /open failed|administratively prohibited|connect failed/i);
  });

  it('ssh -R makes the worker listen and carries its connections back to the client', async () => {
    const back = http.createServer((_req, res) => res.end('from-the-client-side'));
    await new Promise<void>((resolve) => back.listen(0, '127.0.0.1', resolve));
    const backPort = (back.address() as net.AddressInfo).port;
    try {
      const c = startClient('ssh', [...sshOpts(), '-N', '-o', 'ExitOnForwardFailure=yes', '-R', `0:127.0.0.1:${backPort}`, host]);
      const remote = await waitFor(() => {
        const m = /Allocated port (\d+) for remote forward/.exec(c.err());
        return m ? Number(m[1]) : undefined;
      }, 'the allocated remote port');
      const fromWorker = await ssh([host, `curl -sS --max-time 10 http://${host}:${remote}/`]);
      assert.equal(fromWorker.code, 0, fromWorker.stderr);
      assert.equal(fromWorker.stdout, 'from-the-client-side');
      await stopClient(c.child);
      await waitFor(async () => ((await accepts(host, remote)) ? undefined : true), 'the remote listener to close with the connection');
    } finally {
      back.close();
    }
  });
  it('cancel-tcpip-forward closes the remote listener while the connection stays', async () => {
    const client = await ssh2Client();
    try {
      const port = await new Promise<number>((resolve, reject) => client.forwardIn('localhost', 0, (err, p) => (err ? reject(err) : resolve(p))));
      assert.equal(await accepts(host, port), true, 'listening on the worker');
      await new Promise<void>((resolve, reject) => client.unforwardIn('localhost', port, (err) => (err ? reject(err) : resolve())));
      await waitFor(async () => ((await accepts(host, port)) ? undefined : true), 'the listener to close');
      await assert.rejects(new Promise<void>((resolve, reject) => client.unforwardIn('localhost', port, (err) => (err ? reject(err) : resolve()))), 'a second cancel is refused');
    } finally {
      client.end();
    }
  });
});

describe('file transfer with OpenSSH scp and sftp', () => {
  it('scp (default SFTP mode) copies to and from the worker', async () => {
    const data = crypto.randomBytes(300_000);
    const up = path.join(tmp, 'up.bin');
    fs.writeFileSync(up, data);
    const put = await run('scp', [...sshOpts(), up, `${host}:copied.bin`]);
    assert.equal(put.code, 0, put.stderr);
    assert.ok(fs.readFileSync(path.join(sandbox, 'copied.bin')).equals(data), 'uploaded into the worker home');
    const down = path.join(tmp, 'down.bin');
    const get = await run('scp', [...sshOpts(), `${host}:copied.bin`, down]);
    assert.equal(get.code, 0, get.stderr);
    assert.ok(fs.readFileSync(down).equals(data));
  });

  it('sftp -b: mkdir, put, ls, get, rm, rmdir', async () => {
    const src = path.join(tmp, 'a.txt');
    const back = path.join(tmp, 'a-back.txt');
    fs.writeFileSync(src, 'sftp payload\n');
    const batch = path.join(tmp, 'batch');
    fs.writeFileSync(batch, ['mkdir d', `put ${src} d/a.txt`, 'ls -l d', `get d/a.txt ${back}`, 'rm d/a.txt', 'rmdir d', 'ls'].join('\n') + '\n');
    const r = await run('sftp', [...sshOpts(), '-b', batch, host]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /-rw.* d\/a\.txt/);
    assert.equal(fs.readFileSync(back, 'utf8'), 'sftp payload\n');
    assert.equal(fs.existsSync(path.join(sandbox, 'd')), false, 'removed on the worker');
  });
});

describe('terminals', () => {
  it('ssh -t host CMD runs CMD on a /dev/pts terminal of the client terminal size', async () => {
    const inner = ['ssh', ...sshOpts(), '-t', host, 'tty; stty size; echo "TERM=$TERM"'].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    // `script` gives the client a terminal of a known size, which ssh sends in its pty request.
    const r = await run('script', ['-q', '-e', '-c', `stty rows 33 cols 111; TERM=xterm-256color ${inner}`, '/dev/null']);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    // (the client-side terminal may echo a control character of its own before ssh takes it over)
    assert.match(r.stdout, /\/dev\/pts\/\d+\r\n33 111\r\nTERM=xterm-256color\r\n/);
    const status = await ssh(['-tt', host, 'exit 7']);
    assert.equal(status.code, 7, status.stderr);
  });

  it('a window change reaches the program on the pty (SIGWINCH, new size)', async () => {
    const client = await ssh2Client();
    try {
      const stream = await new Promise<import('ssh2').ClientChannel>((resolve, reject) =>
        client.shell({ rows: 24, cols: 80, term: 'xterm' }, (err, s) => (err ? reject(err) : resolve(s))),
      );
      let out = '';
      stream.on('data', (d: Buffer) => (out += d.toString()));
      stream.write(`bash -c 'trap "echo size=\\$(stty size)" WINCH; echo "start=$(stty size)"; while :; do sleep 0.1; done'\n`);
      await waitFor(() => (/start=24 80/.test(out) ? true : undefined), `the initial size (${out})`);
      stream.setWindow(40, 132, 0, 0);
      await waitFor(() => (/size=40 132/.test(out) ? true : undefined), `the new size (${out})`);
      stream.setWindow(50, 100, 0, 0);
      await waitFor(() => (/size=50 100/.test(out) ? true : undefined), `the second size (${out})`);
      // Ctrl-C on the terminal ends the loop (the pty's line discipline makes it SIGINT) and the shell goes on.
      const closed = new Promise<number | undefined>((resolve) => stream.once('exit', (code: number) => resolve(code)));
      stream.write('\x03');
      stream.write('echo "after-int-$((1+1))"\n');
      await waitFor(() => (/after-int-2/.test(out) ? true : undefined), `the shell after Ctrl-C (${out})`);
      stream.write('exit 4\n');
      assert.equal(await closed, 4);
    } finally {
      client.end();
    }
  });
});

describe('a worker environment like a fresh VM', () => {
  it("has the login variables and the client's env requests, none of the emulator's secrets, and the venv's python", async () => {
    const r = await ssh(['-o', 'SetEnv=TPW_FROM_CLIENT=sent', host, 'env']);
    assert.equal(r.code, 0, r.stderr);
    const env = new Map(r.stdout.trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
    assert.equal(r.stdout.includes(HF_SECRET), false, 'HF_TOKEN value leaked');
    assert.equal(env.has('HF_TOKEN'), false);
    assert.equal(env.has('GOOGLE_APPLICATION_CREDENTIALS'), false);
    assert.equal(r.stdout.includes(CREDS), false);
    assert.equal(env.get('HOME'), sandbox);
    assert.equal(env.get('USER'), username);
    assert.equal(env.get('LOGNAME'), username);
    assert.equal(env.get('SHELL'), '/bin/bash');
    assert.ok(env.get('LANG'), 'LANG set');
    assert.match(env.get('SSH_CONNECTION') ?? '', new RegExp(`^127(\\.\\d+){3} \\d+ ${host.replace(/\./g, '\\.')} ${sshPort}$`));
    assert.match(env.get('SSH_CLIENT') ?? '', new RegExp(`^127(\\.\\d+){3} \\d+ ${sshPort}$`));
    assert.equal(env.has('TERM'), false, 'no TERM without a pty');
    assert.equal(env.get('TPW_FROM_CLIENT'), 'sent');
    assert.equal(env.get('TPU_WORKER_ID'), '0');
    const venv = defaultWorkerPathPrefix();
    assert.ok(venv.length > 0, "the trainer's venv (scripts/python-env.sh) is needed for this check");
    assert.ok(env.get('PATH')?.startsWith(`${venv[0]}:`), env.get('PATH'));
    const torch = await ssh([host, `python3 -c 'import sys, torch; print(sys.prefix, torch.__version__)'`]);
    assert.equal(torch.code, 0, torch.stderr);
    assert.ok(torch.stdout.startsWith(path.dirname(venv[0])), torch.stdout);
  });
});
