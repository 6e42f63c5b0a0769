import * as assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Emulator } from '../../emulator/src/emulator';
import { endpointFile, type EmulatorEndpoint } from '../../protocol/node/emulator-endpoint';
import { readEmulatorEndpoint } from '../../extension/src/core/local-emulator';
import { isTpwError } from '../../extension/src/core/errors';
import { emulatorTpuApi, type CloudTpuApi } from '../../extension/src/core/tpu/cloud';
import { emulatorRequest, type EmulatorReply } from '../helpers/emulator-http';
import { testAddressPrefix } from '../helpers/loopback';

/**
 * Who may drive the emulator: only the holder of the token in its 0600 endpoint file, by a loopback name, not a
 * browser. Another local user can neither read the token nor use the API, nor log in to a worker with its own
 * key. The emulator runs with its real SSH workers; the second user's side is real curl and OpenSSH.
 */

const ZONE = 'us-central2-b';
const BASE = `/v2/projects/local-project/locations/${ZONE}`;
const NODE = 'auth-vm';

let dir: string;
let emu: Emulator;
let ep: EmulatorEndpoint;
let api: CloudTpuApi;
let workerAddress: string;

/** Runs a program without blocking this process (the emulator under test lives in it). */
function run(cmd: string, args: string[], timeoutMs = 30_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: timeoutMs }, (e, stdout, stderr) => {
      const code = e ? (typeof e.code === 'number' ? e.code : 1) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

function assertUnauthenticated(r: EmulatorReply, what: string): void {
  assert.equal(r.status, 401, `${what}: ${JSON.stringify(r.body)}`);
  const error = r.body.error as { code: number; status: string; message: string };
  assert.equal(error.code, 401, what);
  assert.equal(error.status, 'UNAUTHENTICATED', what);
  assert.match(error.message, /bearer token/i, what);
  assert.match(String(r.headers['www-authenticate']), /^Bearer /, what);
}

function assertForbidden(r: EmulatorReply, what: string, re: RegExp): void {
  assert.equal(r.status, 403, `${what}: ${JSON.stringify(r.body)}`);
  const error = r.body.error as { code: number; status: string; message: string };
  assert.equal(error.status, 'PERMISSION_DENIED', what);
  assert.match(error.message, re, what);
}

const nodeExists = async (id: string): Promise<boolean> => (await emulatorRequest(ep, 'GET', `${BASE}/nodes/${id}`)).status === 200;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-auth-'));
  emu = new Emulator({ dir: path.join(dir, 'emulator'), opDelayMs: 20, addressPrefix: testAddressPrefix(43) });
  ep = await emu.start();
  api = emulatorTpuApi(ep);
  // Through the real client: it sends the token from the endpoint file as an OAuth2 bearer token.
  const node = await api.createNode({ project: 'local-project', zone: ZONE, nodeId: NODE, acceleratorType: 'v4-8', runtimeVersion: 'tpu-ubuntu2204-base' });
  workerAddress = node.networkEndpoints[0].ipAddress;
});
after(async () => {
  await api?.close();
  await emu?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('emulator REST authentication', () => {
  const routes: [string, string, unknown?][] = [
    ['GET', `${BASE}/nodes`],
    ['GET', `${BASE}/nodes/${NODE}`],
    ['POST', `${BASE}/nodes?nodeId=sneaky`, { acceleratorType: 'v4-8', runtimeVersion: 'tpu-ubuntu2204-base' }],
    ['PATCH', `${BASE}/nodes/${NODE}?updateMask=labels`, { labels: { owned: 'yes' } }],
    ['GET', '/v1/projects/local-project/locations'],
    ['GET', '/emulator/v1/status'],
    ['POST', '/emulator/v1/faults', { faults: [{ method: 'ListNodes', code: 503 }] }],
    ['GET', '/no/such/path'],
  ];

  it('refuses every kind of route without the token, or with a wrong one, with a Google-style 401', async () => {
    const wrong = crypto.randomBytes(32).toString('base64url');
    for (const [method, urlPath, body] of routes) {
      assertUnauthenticated(await emulatorRequest(ep, method, urlPath, body, { authorization: undefined }), `${method} ${urlPath} without a token`);
      assertUnauthenticated(await emulatorRequest(ep, method, urlPath, body, { authorization: `Bearer ${wrong}` }), `${method} ${urlPath} with a wrong token`);
      assertUnauthenticated(await emulatorRequest(ep, method, urlPath, body, { authorization: `Bearer ${ep.token.slice(0, -1)}` }), `${method} ${urlPath} with a token one character short`);
      assertUnauthenticated(await emulatorRequest(ep, method, urlPath, body, { authorization: `Basic ${ep.token}` }), `${method} ${urlPath} with the token as Basic`);
    }
    assert.equal(await nodeExists('sneaky'), false);
    assert.equal((await api.getNode({ project: 'local-project', zone: ZONE, node: NODE })).labels.owned, undefined);
    // Nothing reached the fault injector: ListNodes still works.
    assert.equal((await emulatorRequest(ep, 'GET', `${BASE}/nodes`)).status, 200);
    assert.equal((await emulatorRequest(ep, 'GET', '/emulator/v1/status')).status, 200);
  });

  it('refuses a Host that is not a loopback name with the emulator port (DNS rebinding) with 403', async () => {
    for (const host of ['attacker.example', `attacker.example:${ep.restPort}`, `127.0.0.1.nip.io:${ep.restPort}`, `127.0.0.1:${ep.restPort + 1}`, '127.0.0.1']) {
      assertForbidden(await emulatorRequest(ep, 'GET', `${BASE}/nodes`, undefined, { host }), `Host "${host}"`, /loopback Host/);
    }
    for (const host of [`127.0.0.1:${ep.restPort}`, `localhost:${ep.restPort}`, `[::1]:${ep.restPort}`, `127.1.2.3:${ep.restPort}`]) {
      assert.equal((await emulatorRequest(ep, 'GET', `${BASE}/nodes`, undefined, { host })).status, 200, `Host "${host}"`);
    }
  });

  it('refuses browser requests (Origin, Sec-Fetch-*) and non-JSON bodies, and creates nothing', async () => {
    const create = (id: string) => `${BASE}/nodes?nodeId=${id}`;
    const spec = { acceleratorType: 'v4-8', runtimeVersion: 'tpu-ubuntu2204-base' };
    assertForbidden(await emulatorRequest(ep, 'POST', create('web-a'), spec, { origin: 'http://attacker.example' }), 'Origin', /browsers/);
    assertForbidden(await emulatorRequest(ep, 'POST', create('web-b'), spec, { origin: 'null' }), 'Origin: null', /browsers/);
    assertForbidden(await emulatorRequest(ep, 'POST', create('web-c'), spec, { 'sec-fetch-mode': 'no-cors', 'sec-fetch-site': 'cross-site' }), 'Sec-Fetch', /browsers/);
    assertForbidden(await emulatorRequest(ep, 'GET', `${BASE}/nodes`, undefined, { 'sec-fetch-dest': 'image' }), 'Sec-Fetch-Dest', /"sec-fetch-dest"/);
    // The form a page can send without a preflight: a text/plain (or form) POST whose text happens to be JSON.
    for (const [id, type] of [['web-d', 'text/plain'], ['web-e', 'application/x-www-form-urlencoded'], ['web-f', 'multipart/form-data; boundary=x']]) {
      const r = await emulatorRequest(ep, 'POST', create(id), JSON.stringify(spec), { 'content-type': type });
      assert.equal(r.status, 415, `${type}: ${JSON.stringify(r.body)}`);
      assert.match((r.body.error as { message: string }).message, /application\/json/);
    }
    // Even without the token, a text/plain POST gets nowhere (401 comes first).
    assertUnauthenticated(await emulatorRequest(ep, 'POST', create('web-g'), JSON.stringify(spec), { 'content-type': 'text/plain', authorization: undefined }), 'text/plain without a token');
    for (const id of ['web-a', 'web-b', 'web-c', 'web-d', 'web-e', 'web-f', 'web-g']) assert.equal(await nodeExists(id), false, id);
  });

  it("answers Node's own fetch (a lone Sec-Fetch-Mode: cors) when it carries the token", async () => {
    const url = `http://${ep.host}:${ep.restPort}/emulator/v1/status`;
    assert.equal((await fetch(url, { headers: { authorization: `Bearer ${ep.token}` } })).status, 200);
    assert.equal((await fetch(url)).status, 401);
  });

  it('keeps the token, the keys and the state private to their owner', () => {
    const mode = (p: string) => fs.statSync(p).mode & 0o777;
    const emuDir = path.join(dir, 'emulator');
    assert.equal(mode(endpointFile(emuDir)), 0o600);
    assert.equal(mode(emuDir), 0o700);
    assert.equal(mode(path.join(emuDir, 'keys')), 0o700);
    assert.equal(mode(ep.clientKeyPath), 0o600);
    assert.equal(mode(path.join(emuDir, 'state.json')), 0o600);
    const onDisk = JSON.parse(fs.readFileSync(endpointFile(emuDir), 'utf8')) as EmulatorEndpoint;
    assert.equal(onDisk.token, ep.token);
    assert.ok(Buffer.from(ep.token, 'base64url').length >= 32, 'a 256-bit token');
  });

  it('tightens a folder and keys left open to others, and clients refuse an endpoint file others can read', async () => {
    const mode = (p: string) => fs.statSync(p).mode & 0o777;
    const loose = path.join(dir, 'loose');
    fs.mkdirSync(loose, { mode: 0o755 });
    const stub = { addWorker: async () => undefined, removeNode: async () => undefined, close: async () => undefined };
    const first = new Emulator({ dir: loose, addressPrefix: testAddressPrefix(44), workerPool: () => stub });
    const ep1 = await first.start();
    await first.stop();
    // As an older version, a copy or a careless chmod might leave them.
    fs.chmodSync(loose, 0o755);
    fs.chmodSync(path.join(loose, 'keys'), 0o755);
    fs.chmodSync(ep1.clientKeyPath, 0o644);
    const second = new Emulator({ dir: loose, addressPrefix: testAddressPrefix(44), workerPool: () => stub });
    const ep2 = await second.start();
    try {
      assert.equal(mode(loose), 0o700);
      assert.equal(mode(path.join(loose, 'keys')), 0o700);
      assert.equal(mode(ep2.clientKeyPath), 0o600);
      assert.notEqual(ep2.token, ep1.token, 'a new token at each start');
      assert.equal(readEmulatorEndpoint(loose)?.token, ep2.token);
      fs.chmodSync(endpointFile(loose), 0o644);
      assert.throws(() => readEmulatorEndpoint(loose), (e) => isTpwError(e, 'PERMISSION_DENIED') && e.message.includes(endpointFile(loose)) && /0600/.test(e.message));
      fs.chmodSync(endpointFile(loose), 0o600);
      fs.chmodSync(loose, 0o777);
      assert.throws(() => readEmulatorEndpoint(loose), (e) => isTpwError(e, 'PERMISSION_DENIED') && e.message.includes(`chmod 700 ${loose}`));
    } finally {
      await second.stop();
    }
  });
});

describe('a second local user', { skip: process.getuid?.() !== 0 ? 'needs root to create a user (useradd)' : false }, () => {
  const user = `tpwtest-${crypto.randomBytes(3).toString('hex')}`;
  let keyDir: string;
  const as = (cmd: string, ...args: string[]) => run('runuser', ['-u', user, '--', cmd, ...args]);
  const sshArgs = (key: string) => [
    '-F', '/dev/null', '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null',
    '-o', 'IdentitiesOnly=yes', '-o', 'ConnectTimeout=10', '-o', 'LogLevel=ERROR', '-i', key, '-p', String(ep.sshPort), `${ep.username}@${workerAddress}`, 'echo logged-in-as-$(id -un)',
  ];
  /** curl as the other user: status code and body. */
  const curl = async (...args: string[]) => {
    const r = await as('curl', '-sS', '-o', '-', '-w', '\n%{http_code}', ...args);
    const lines = r.stdout.trimEnd().split('\n');
    return { status: Number(lines.pop()), body: lines.join('\n') };
  };

  before(async () => {
    const made = await run('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', user]);
    assert.equal(made.code, 0, made.stderr);
    keyDir = fs.mkdtempSync(path.join(os.tmpdir(), `${user}-`));
    fs.chmodSync(keyDir, 0o700);
    const chown = await run('chown', [user, keyDir]);
    assert.equal(chown.code, 0, chown.stderr);
    const gen = await as('ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', user, '-f', path.join(keyDir, 'id_ed25519'));
    assert.equal(gen.code, 0, gen.stderr);
  });
  after(async () => {
    if (keyDir) fs.rmSync(keyDir, { recursive: true, force: true });
    await run('userdel', [user]);
  });

  it('cannot read the endpoint file (its token) or the emulator key', async () => {
    for (const file of [endpointFile(path.join(dir, 'emulator')), ep.clientKeyPath, path.join(dir, 'emulator', 'state.json')]) {
      const r = await as('cat', file);
      assert.notEqual(r.code, 0, `${user} read ${file}`);
      assert.match(r.stderr, /Permission denied/, file);
    }
  });

  it('gets 401 without the token and 403 under a foreign Host from the REST port', async () => {
    const url = `http://${ep.host}:${ep.restPort}`;
    const list = await curl(`${url}${BASE}/nodes`);
    assert.equal(list.status, 401, list.body);
    assert.equal((JSON.parse(list.body) as { error: { status: string } }).error.status, 'UNAUTHENTICATED');
    const guess = await curl('-H', `Authorization: Bearer ${crypto.randomBytes(32).toString('base64url')}`, `${url}/emulator/v1/status`);
    assert.equal(guess.status, 401, guess.body);
    const rebound = await curl('-H', 'Host: attacker.example', `${url}${BASE}/nodes`);
    assert.equal(rebound.status, 403, rebound.body);
  });

  it('cannot put its key on a worker, nor log in to one with it; the owner can', async () => {
    const pub = fs.readFileSync(path.join(keyDir, 'id_ed25519.pub'), 'utf8').trim();
    const metadata = JSON.stringify({ metadata: { 'ssh-keys': `${ep.username}:${pub}` } });
    const patch = await curl('-X', 'PATCH', '-H', 'Content-Type: application/json', '--data', metadata, `http://${ep.host}:${ep.restPort}${BASE}/nodes/${NODE}?updateMask=metadata`);
    assert.equal(patch.status, 401, patch.body);
    const denied = await as('ssh', ...sshArgs(path.join(keyDir, 'id_ed25519')));
    assert.equal(denied.code, 255, `${user} logged in to ${workerAddress}: ${denied.stdout}${denied.stderr}`);
    assert.match(denied.stderr, /Permission denied \(publickey\)/);

    // The same ssh command with the owner's key works, so the refusal above is the key, not the setup.
    const owner = await run('ssh', sshArgs(ep.clientKeyPath));
    assert.equal(owner.code, 0, owner.stderr);
    assert.match(owner.stdout, /logged-in-as-/);
    // And a key the owner puts there through an authenticated call is accepted, as on a TPU VM.
    assert.equal((await emulatorRequest(ep, 'PATCH', `${BASE}/nodes/${NODE}?updateMask=metadata`, JSON.parse(metadata))).status, 200);
    const allowed = await as('ssh', ...sshArgs(path.join(keyDir, 'id_ed25519')));
    assert.equal(allowed.code, 0, allowed.stderr);
  });
});
