/**
 * "Add my key to this VM" end to end against the emulator: the extension's ed25519 key is created on first
 * use (0600), is refused by the workers until `tpw vm add-key` puts it into the node's metadata `ssh-keys`
 * through UpdateNode (the real @google-cloud/tpu client's PATCH), then opens a session on every worker;
 * adding it twice keeps one line; other users' keys are kept.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { utils as sshUtils } from 'ssh2';
import { main } from '../../extension/src/cli/main';
import { openBackend, type Backend } from '../../extension/src/core/backend';
import { Emulator, ensureKeys } from '../../emulator/src/emulator';
import { ConnectionManager } from '../../extension/src/core/ssh/connection';
import { execCollect } from '../../extension/src/core/ssh/exec';
import { withSshKey } from '../../extension/src/core/slices/add-key';
import { ensureExtensionKey, generateEd25519KeyPair } from '../../extension/src/core/ssh/keys';
import { findNode } from '../../extension/src/core/slices/find';
import { parseNodeName } from '../../extension/src/core/tpu/models';
import { testAddressPrefix } from '../helpers/loopback';

let home: string;
let emu: Emulator;
let backend: Backend;
const saved = process.env.TPW_HOME;

before(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-addkey-'));
  process.env.TPW_HOME = home;
  emu = new Emulator({ dir: path.join(home, 'emulator'), opDelayMs: 30, addressPrefix: testAddressPrefix(14) });
  await emu.start();
  assert.equal(await main(['vm', 'create', 'k', '--type', 'v5litepod-16'], () => undefined, () => undefined), 0);
  backend = await openBackend({ useEmulator: true });
});

after(async () => {
  await backend?.close();
  await emu?.stop();
  fs.rmSync(home, { recursive: true, force: true });
  if (saved === undefined) delete process.env.TPW_HOME;
  else process.env.TPW_HOME = saved;
});

test('the extension key is refused, added through UpdateNode, then accepted on every worker', async () => {
  const key = ensureExtensionKey(home);
  assert.equal(fs.statSync(key.privateKeyPath).mode & 0o777, 0o600);
  assert.match(key.publicKey, /^ssh-ed25519 \S+ tpu-workbench@/);
  assert.equal(ensureExtensionKey(home).privateKey, key.privateKey, 'created once');

  const { node } = await findNode(backend, 'k');
  const workers = (await backend.workersOf(node)).map((w) => ({ ...w, privateKey: key.privateKey }));
  const conns = new ConnectionManager({ knownHostsPath: path.join(home, 'kh') });
  try {
    await assert.rejects(conns.get(workers[0]), /authentication failed/);

    const out: string[] = [];
    assert.equal(await main(['vm', 'add-key', 'k'], (l) => out.push(l), (l) => out.push(l)), 0, out.join('\n'));
    assert.equal(await main(['vm', 'add-key', 'k'], () => undefined, () => undefined), 0);
    const updated = await backend.api.getNode(parseNodeName(node.name));
    const lines = updated.metadata['ssh-keys'].split('\n');
    assert.equal(lines.length, 1, 'added once');
    assert.equal(lines[0], `${workers[0].username}:${key.publicKey}`);

    for (const w of workers) {
      const r = await execCollect(await conns.get(w), 'echo "$TPU_WORKER_ID"');
      assert.equal(r.stdout, `${w.index}\n`);
    }
  } finally {
    conns.dispose();
  }
});

test('withSshKey keeps other lines and does not duplicate', () => {
  const base = 'alice:ssh-ed25519 AAAA1 a@x\nbob:ssh-rsa BBBB b@y';
  const added = withSshKey(base, 'me', 'ssh-ed25519 CCCC me@z');
  assert.equal(added, `${base}\nme:ssh-ed25519 CCCC me@z`);
  assert.equal(withSshKey(added, 'me', 'ssh-ed25519 CCCC other-comment'), added);
  assert.equal(withSshKey(undefined, 'me', 'ssh-ed25519 CCCC'), 'me:ssh-ed25519 CCCC');
});

test('every generated ed25519 key pair is well formed (ssh2 alone drops a leading zero byte about 1 in 300)', () => {
  // 3000 draws: the raw generator yields a malformed key here with probability 1 - (299/300)^3000 > 99.99%.
  for (let i = 0; i < 3000; i++) {
    const pair = generateEd25519KeyPair('t@h');
    const [type, body, comment] = pair.public.trim().split(' ');
    assert.equal(type, 'ssh-ed25519');
    assert.equal(comment, 't@h');
    // wire form: string "ssh-ed25519" (4 + 11 bytes), string key (4 + 32 bytes)
    const blob = Buffer.from(body, 'base64');
    assert.equal(blob.length, 51, `public key ${i} is ${blob.length} bytes: ${pair.public}`);
    assert.equal(blob.readUInt32BE(15), 32);
  }
  // And OpenSSH itself derives the same public key from the private half.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-keygen-'));
  try {
    const pair = generateEd25519KeyPair();
    fs.writeFileSync(path.join(dir, 'k'), pair.private, { mode: 0o600 });
    const derived = execFileSync('ssh-keygen', ['-y', '-f', path.join(dir, 'k')], { encoding: 'utf8' });
    assert.equal(derived.trim().split(' ').slice(0, 2).join(' '), pair.public.trim().split(' ').slice(0, 2).join(' '));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a key pair with a malformed public half (from an earlier version) is set aside and replaced', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-badkey-'));
  try {
    let bad: { private: string; public: string } | undefined;
    for (let i = 0; i < 20_000 && !bad; i++) {
      const k = sshUtils.generateKeyPairSync('ed25519');
      if (sshUtils.parseKey(k.public) instanceof Error) bad = k;
    }
    assert.ok(bad, 'the raw generator made a malformed key');
    fs.writeFileSync(path.join(dir, 'id_ed25519'), bad.private, { mode: 0o600 });
    fs.writeFileSync(path.join(dir, 'id_ed25519.pub'), `${bad.public}\n`);
    const pair = ensureExtensionKey(dir);
    assert.ok(!(sshUtils.parseKey(pair.publicKey) instanceof Error), 'the new key parses');
    assert.notEqual(pair.publicKey, bad.public.trim());
    const aside = fs.readdirSync(dir).filter((f) => f.includes('.malformed-')).sort();
    assert.equal(aside.length, 2, aside.join(', '));
    assert.equal(fs.readFileSync(path.join(dir, aside[0]), 'utf8'), bad.private, 'the old private key is kept');
    assert.equal(ensureExtensionKey(dir).publicKey, pair.publicKey, 'a good key stays');

    // The emulator's own keys, likewise: a malformed client key would stop the emulator from starting.
    fs.mkdirSync(path.join(dir, 'emu', 'keys'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'emu', 'keys', 'client_ed25519'), bad.private, { mode: 0o600 });
    fs.writeFileSync(path.join(dir, 'emu', 'keys', 'client_ed25519.pub'), `${bad.public}\n`);
    const keys = ensureKeys(path.join(dir, 'emu'));
    assert.ok(!(sshUtils.parseKey(keys.clientPublicKey) instanceof Error));
    assert.equal(ensureKeys(path.join(dir, 'emu')).clientPublicKey, keys.clientPublicKey, 'and then kept');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
