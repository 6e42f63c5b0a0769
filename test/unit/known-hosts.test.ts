import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { TpwError, isTpwError } from '../../extension/src/core/errors';
import { ConnectionManager } from '../../extension/src/core/ssh/connection';
import { execCollect } from '../../extension/src/core/ssh/exec';
import {
  checkHostKey,
  fingerprintSha256,
  hostFieldMatches,
  knownHostsName,
  parseKnownHosts,
  sshKeyType,
} from '../../extension/src/core/ssh/known-hosts';
import type { HostKeyPolicy } from '../../extension/src/core/ssh/types';
import { makeKeyPair, startSshd, sshdAvailable, type SshdInstance } from '../helpers/sshd';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-kh-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** OpenSSH's own fingerprint of a public key file, to check ours against. */
function sshKeygenFingerprint(pubLine: string): string {
  const f = path.join(tmp, `fp-${Math.random().toString(36).slice(2)}.pub`);
  fs.writeFileSync(f, `${pubLine}\n`);
  return execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', f], { encoding: 'utf8' }).split(' ')[1];
}

function blobOf(pubLine: string): Buffer {
  return Buffer.from(pubLine.split(' ')[1], 'base64');
}

async function connectOnce(sshd: SshdInstance, file: string, policy: HostKeyPolicy): Promise<string> {
  const conns = new ConnectionManager({ knownHostsPath: file, hostKeyPolicy: policy });
  try {
    const conn = await conns.get({ host: sshd.host, port: sshd.port, username: sshd.username, privateKey: sshd.privateKey });
    const out = await execCollect(conn, 'echo connected');
    return out.stdout.trim();
  } finally {
    conns.dispose();
  }
}

async function connectError(sshd: SshdInstance, file: string, policy: HostKeyPolicy): Promise<TpwError> {
  try {
    await connectOnce(sshd, file, policy);
  } catch (e) {
    assert.ok(e instanceof TpwError, `expected a TpwError, got ${String(e)}`);
    return e;
  }
  assert.fail('the connection should have been refused');
}

describe('known_hosts parsing and matching', () => {
  it('computes SHA256 fingerprints exactly like ssh-keygen', () => {
    const kf = path.join(tmp, 'k1');
    makeKeyPair(kf);
    const pub = fs.readFileSync(`${kf}.pub`, 'utf8').trim();
    assert.equal(fingerprintSha256(blobOf(pub)), sshKeygenFingerprint(pub));
    assert.equal(sshKeyType(blobOf(pub)), 'ssh-ed25519');
  });

  it('names hosts like OpenSSH: bare on port 22, [host]:port otherwise', () => {
    assert.equal(knownHostsName('10.0.0.2', 22), '10.0.0.2');
    assert.equal(knownHostsName('127.0.1.4', 2222), '[127.0.1.4]:2222');
  });

  it('matches patterns, negations and hashed names', () => {
    assert.equal(hostFieldMatches('a.example,[127.0.1.4]:2222', '[127.0.1.4]:2222'), true);
    assert.equal(hostFieldMatches('*.example', 'vm.example'), true);
    assert.equal(hostFieldMatches('*.example,!bad.example', 'bad.example'), false);
    assert.equal(hostFieldMatches('10.0.0.?', '10.0.0.7'), true);
    assert.equal(hostFieldMatches('10.0.0.?', '10.0.0.17'), false);
    // A hashed line written by ssh-keygen -H must match the same name, and only it.
    const file = path.join(tmp, 'hashed');
    fs.writeFileSync(file, '[127.0.1.4]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBf0Cw5E7Yb0kqzXHvJ3aYh1ddkKkqAkeJtQG7s6tqzR\n');
    execFileSync('ssh-keygen', ['-H', '-f', file], { stdio: 'ignore' });
    const [entry] = parseKnownHosts(fs.readFileSync(file, 'utf8'));
    assert.ok(entry.hostPatterns.startsWith('|1|'), 'ssh-keygen hashed the name');
    assert.equal(hostFieldMatches(entry.hostPatterns, '[127.0.1.4]:2222'), true);
    assert.equal(hostFieldMatches(entry.hostPatterns, '[127.0.1.5]:2222'), false);
  });

  it('refuses a key marked @revoked even under accept-new', () => {
    const kf = path.join(tmp, 'k2');
    makeKeyPair(kf);
    const pub = fs.readFileSync(`${kf}.pub`, 'utf8').trim();
    const file = path.join(tmp, 'revoked_hosts');
    fs.writeFileSync(file, `# comment\n@revoked * ${pub}\n`);
    assert.throws(
      () => checkHostKey({ host: 'h', port: 22, policy: 'accept-new', file }, blobOf(pub)),
      (e: unknown) => isTpwError(e, 'SSH_HOST_KEY') && /revoked/.test(e.message) && /line 2/.test(e.message),
    );
  });
});

describe('host key policy against real sshd', () => {
  before(() => assert.ok(sshdAvailable(), 'OpenSSH sshd is missing at /usr/sbin/sshd: run bash scripts/setup.sh'));
  let first: SshdInstance;
  const host = '127.0.2.30';

  before(async () => {
    first = await startSshd({ host });
  });
  after(async () => {
    await first?.stop();
  });

  it("accept-new records an unknown key (0600, OpenSSH format) and then knows it", async () => {
    const file = path.join(tmp, 'sub', 'known_hosts_accept');
    assert.equal(await connectOnce(first, file, 'accept-new'), 'connected');
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    const text = fs.readFileSync(file, 'utf8');
    const [type, b64] = first.hostPublicKey.split(' ');
    assert.equal(text, `[${host}]:${first.port} ${type} ${b64}\n`);
    // OpenSSH itself finds the entry where we wrote it.
    const found = execFileSync('ssh-keygen', ['-F', `[${host}]:${first.port}`, '-f', file], { encoding: 'utf8' });
    assert.match(found, /found: line 1/);
    // Second contact: known, nothing appended.
    assert.equal(await connectOnce(first, file, 'accept-new'), 'connected');
    assert.equal(fs.readFileSync(file, 'utf8'), text);
    // Still known after ssh-keygen hashes the file.
    execFileSync('ssh-keygen', ['-H', '-f', file], { stdio: 'ignore' });
    assert.equal(await connectOnce(first, file, 'strict'), 'connected');
  });

  it('strict refuses an unknown key and writes nothing', async () => {
    const file = path.join(tmp, 'known_hosts_strict');
    const err = await connectError(first, file, 'strict');
    assert.equal(err.code, 'SSH_HOST_KEY');
    assert.match(err.message, new RegExp(`${host.replace(/\./g, '\\.')} port ${first.port}`));
    assert.ok(err.message.includes(sshKeygenFingerprint(first.hostPublicKey)), err.message);
    assert.match(err.message, /strict/);
    assert.equal(fs.existsSync(file), false);
  });

  it('a CHANGED key is refused under any policy, naming both fingerprints and the line to remove', async () => {
    const file = path.join(tmp, 'known_hosts_changed');
    fs.writeFileSync(file, '# first line is a comment\n');
    assert.equal(await connectOnce(first, file, 'accept-new'), 'connected');
    const before = fs.readFileSync(file, 'utf8');
    const port = first.port;
    const oldFp = sshKeygenFingerprint(first.hostPublicKey);
    await first.stop();

    // Same host:port, a different host key: what a man in the middle (or a recreated VM) looks like.
    first = await startSshd({ host, port });
    const newFp = sshKeygenFingerprint(first.hostPublicKey);
    assert.notEqual(oldFp, newFp);
    for (const policy of ['accept-new', 'strict'] as const) {
      const err = await connectError(first, file, policy);
      assert.equal(err.code, 'SSH_HOST_KEY');
      assert.match(err.message, /CHANGED/);
      assert.ok(err.message.includes(`${host} port ${port}`), err.message);
      assert.ok(err.message.includes(oldFp), `old fingerprint in: ${err.message}`);
      assert.ok(err.message.includes(newFp), `new fingerprint in: ${err.message}`);
      assert.ok(err.message.includes(`${file} line 2`), err.message);
      assert.ok(err.message.includes(`ssh-keygen -R '[${host}]:${port}'`), err.message);
    }
    assert.equal(fs.readFileSync(file, 'utf8'), before, 'the known_hosts file is untouched');

    // Following the advice (ssh-keygen -R) makes the new key acceptable again.
    execFileSync('ssh-keygen', ['-R', `[${host}]:${port}`, '-f', file], { stdio: 'ignore' });
    assert.equal(await connectOnce(first, file, 'accept-new'), 'connected');
  });
});
