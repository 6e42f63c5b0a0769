/**
 * Reaching workers through a bastion (ProxyJump over a real sshd) and through a proxy program's stdio
 * (ProxyCommand): commands run, host keys are checked per hop, and without the hop the tunnel fails with a
 * message naming it.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseJump } from '../../extension/src/core/backend';
import { ConnectionManager } from '../../extension/src/core/ssh/connection';
import { execCollect } from '../../extension/src/core/ssh/exec';
import type { SshTarget } from '../../extension/src/core/ssh/types';
import { startSshd, type SshdInstance } from '../helpers/sshd';
import { escapeRegExp as esc, testAddressPrefix } from '../helpers/loopback';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-proxy-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

// A stand-in for `gcloud compute start-iap-tunnel ... --listen-on-stdin`: bytes between stdio and host:port.
const PIPE = `const s = require('net').connect(+process.argv[2], process.argv[1]); process.stdin.pipe(s); s.pipe(process.stdout); s.on('close', () => process.exit(0));`;

describe('jump host and proxy command (real sshd)', () => {
  let bastion: SshdInstance;
  let worker: SshdInstance;
  const t = (s: SshdInstance, extra: Partial<SshTarget> = {}): SshTarget => ({ host: s.host, port: s.port, username: s.username, privateKey: s.privateKey, ...extra });
  before(async () => {
    [bastion, worker] = await Promise.all([startSshd({ host: `${testAddressPrefix(8)}.11` }), startSshd({ host: `${testAddressPrefix(8)}.12` })]);
  });
  after(async () => {
    await Promise.all([bastion?.stop(), worker?.stop()]);
  });

  it('ProxyJump: the worker is reached through the bastion; both host keys are recorded', async () => {
    const file = path.join(tmp, 'kh-jump');
    const cm = new ConnectionManager({ knownHostsPath: file });
    const before = bastion.acceptedLogins();
    try {
      const conn = await cm.get(t(worker, { proxyJump: t(bastion) }));
      const out = await execCollect(conn, 'echo "$SSH_CONNECTION"');
      assert.equal(out.code, 0);
      assert.ok(bastion.acceptedLogins() > before, 'the bastion saw a login');
      // The worker sees the connection coming from the bastion's forwarding, not from us directly.
      assert.match(out.stdout, /^127\.0\.0\.1 /);
      const kh = fs.readFileSync(file, 'utf8');
      assert.ok(kh.includes(`[${testAddressPrefix(8)}.11]:${bastion.port}`) && kh.includes(`[${testAddressPrefix(8)}.12]:${worker.port}`), kh);
    } finally {
      cm.dispose();
    }
  });

  it('ProxyJump through a dead bastion fails naming the bastion', async () => {
    const cm = new ConnectionManager({ knownHostsPath: path.join(tmp, 'kh-dead'), readyTimeoutMs: 5000 });
    try {
      await assert.rejects(cm.get(t(worker, { proxyJump: { ...t(bastion), port: 1 } })), new RegExp(`${esc(testAddressPrefix(8))}\\.11:1`));
    } finally {
      cm.dispose();
    }
  });

  it('ProxyCommand: SSH over a program’s stdin/stdout, with %h and %p substituted', async () => {
    const cm = new ConnectionManager({ knownHostsPath: path.join(tmp, 'kh-cmd') });
    try {
      const conn = await cm.get(t(worker, { proxyCommand: [process.execPath, '-e', PIPE, '%h', '%p'] }));
      const out = await execCollect(conn, 'echo via-proxy');
      assert.equal(out.stdout, 'via-proxy\n');
    } finally {
      cm.dispose();
    }
  });
});

describe('parseJump', () => {
  it('reads user@host[:port] and refuses garbage', () => {
    assert.deepEqual(parseJump('me@bastion.example.com:2222', 'k'), { username: 'me', host: 'bastion.example.com', port: 2222, privateKey: 'k' });
    assert.deepEqual(parseJump('ops@[fd00::1]', 'k'), { username: 'ops', host: 'fd00::1', port: 22, privateKey: 'k' });
    assert.equal(parseJump('10.0.0.2', 'k').port, 22);
    assert.throws(() => parseJump('a b@c', 'k'), /Bad SSH jump host/);
  });
});
