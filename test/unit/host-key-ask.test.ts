/**
 * First contact asks (real sshd): a refused key names its fingerprint (as ssh-keygen prints it) and records
 * nothing; an accepted one is recorded and not asked again; a changed key is refused without asking. And
 * which policy each backend gets (the CLI's --accept-new-host-keys).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { isTpwError } from '../../extension/src/core/errors';
import { ConnectionManager, hostKeyOptionsFor, type HostKeyQuestion } from '../../extension/src/core/ssh/connection';
import type { SshTarget } from '../../extension/src/core/ssh/types';
import { startSshd, type SshdInstance } from '../helpers/sshd';
import { testAddressPrefix } from '../helpers/loopback';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-hkask-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

function fingerprint(pubLine: string): string {
  const f = path.join(tmp, `fp-${Math.random().toString(36).slice(2)}.pub`);
  fs.writeFileSync(f, `${pubLine}\n`);
  return execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', f], { encoding: 'utf8' }).split(' ')[1];
}

describe('host keys: first contact asks', () => {
  let a: SshdInstance;
  let b: SshdInstance;
  const target = (s: SshdInstance, alias?: string): SshTarget => ({ host: s.host, port: s.port, username: s.username, privateKey: s.privateKey, hostKeyAlias: alias });
  before(async () => {
    [a, b] = await Promise.all([startSshd({ host: `${testAddressPrefix(8)}.1` }), startSshd({ host: `${testAddressPrefix(8)}.2` })]);
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
  });

  it('no: refused with the fingerprint, nothing recorded; yes: recorded and not asked again', async () => {
    const file = path.join(tmp, 'kh1');
    const asked: HostKeyQuestion[] = [];
    const no = new ConnectionManager({ knownHostsPath: file, hostKeyPolicy: 'strict', confirmHostKey: async (q) => (asked.push(q), false) });
    const fp = fingerprint(a.hostPublicKey);
    await assert.rejects(no.get(target(a)), (e: unknown) => isTpwError(e, 'SSH_HOST_KEY') && (e as Error).message.includes(fp) && /not accepted/.test((e as Error).message));
    no.dispose();
    assert.equal(asked.length, 1);
    assert.equal(asked[0].fingerprint, fp);
    assert.ok(asked[0].label.includes(`${testAddressPrefix(8)}.1`), asked[0].label);
    assert.equal(fs.existsSync(file), false);

    const yes = new ConnectionManager({ knownHostsPath: file, hostKeyPolicy: 'strict', confirmHostKey: async (q) => (asked.push(q), true) });
    await yes.get(target(a));
    yes.dispose();
    assert.equal(asked.length, 2);
    assert.match(fs.readFileSync(file, 'utf8'), /ssh-ed25519 /);
    const again = new ConnectionManager({ knownHostsPath: file, hostKeyPolicy: 'strict', confirmHostKey: async (q) => (asked.push(q), true) });
    await again.get(target(a));
    again.dispose();
    assert.equal(asked.length, 2, 'a known key is not asked about');
  });

  it('strict without a prompt (the CLI without --accept-new-host-keys) refuses, naming the fingerprint and the flag', async () => {
    const cm = new ConnectionManager({ knownHostsPath: path.join(tmp, 'kh2'), ...hostKeyOptionsFor('cloud', false) });
    await assert.rejects(cm.get(target(b)), (e: unknown) => (e as Error).message.includes(fingerprint(b.hostPublicKey)) && /--accept-new-host-keys/.test((e as Error).message));
    cm.dispose();
  });

  it('a changed key is refused without asking', async () => {
    const file = path.join(tmp, 'kh3');
    const asked: HostKeyQuestion[] = [];
    const first = new ConnectionManager({ knownHostsPath: file, hostKeyPolicy: 'strict', confirmHostKey: async () => true });
    await first.get(target(a, 'tpu-worker-0'));
    first.dispose();
    // Same name, another server (another key): as if the VM's key changed.
    const second = new ConnectionManager({ knownHostsPath: file, hostKeyPolicy: 'strict', confirmHostKey: async (q) => (asked.push(q), true) });
    await assert.rejects(second.get(target(b, 'tpu-worker-0')), /has CHANGED/);
    second.dispose();
    assert.equal(asked.length, 0);
  });

  it('policy by backend', () => {
    assert.deepEqual(hostKeyOptionsFor('emulator', false), { hostKeyPolicy: 'accept-new' });
    assert.deepEqual(hostKeyOptionsFor('cloud', false), { hostKeyPolicy: 'strict' });
    assert.deepEqual(hostKeyOptionsFor('cloud', true), { hostKeyPolicy: 'accept-new' });
  });
});
