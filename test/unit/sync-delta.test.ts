/**
 * Delta sync against the emulator's workers (three hosts, each its own $HOME) and a real OpenSSH sshd:
 * first sync, no-change sync (one exec per worker, nothing sent), a change + a deletion + a new odd name (only
 * those travel), `.tpuignore`, a worker whose copy was wiped (full resend), and the ignore-pattern rules.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { generateEd25519KeyPair } from '../../extension/src/core/ssh/keys';
import { SshWorkerPool } from '../../emulator/src/ssh-workers';
import { ConnectionManager, type SshConnection } from '../../extension/src/core/ssh/connection';
import type { WorkerTarget } from '../../extension/src/core/ssh/types';
import { deltaSync, type SyncProgress } from '../../extension/src/core/sync/delta';
import { isIgnored, parseIgnore } from '../../extension/src/core/sync/ignore';
import { listWorkspaceFiles } from '../../extension/src/core/sync/workspace-files';
import { freePort, startSshd, type SshdInstance } from '../helpers/sshd';
import { testAddressPrefix } from '../helpers/loopback';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-delta-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));
const username = os.userInfo().username;

function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const visit = (d: string, prefix: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const rel = prefix ? `${prefix}/${e.name}` : e.name;
      if (e.isDirectory()) visit(path.join(d, e.name), rel);
      else out[rel] = fs.readFileSync(path.join(d, e.name), 'base64');
    }
  };
  if (fs.existsSync(dir)) visit(dir, '');
  return out;
}

function write(root: string, rel: string, body: string | Buffer): void {
  fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
  fs.writeFileSync(path.join(root, rel), body);
}

/** Counts exec channels per worker: the "round trips" of a sync. */
function countingConns(knownHostsPath: string): { conns: ConnectionManager; execs: Map<string, number> } {
  const conns = new ConnectionManager({ knownHostsPath });
  const execs = new Map<string, number>();
  const get = conns.get.bind(conns);
  conns.get = async (t) => {
    const c: SshConnection = await get(t);
    const exec = c.exec.bind(c);
    const key = `${t.host}:${t.port}`;
    if (!(c as { counted?: boolean }).counted) {
      (c as { counted?: boolean }).counted = true;
      c.exec = (cmd: string) => {
        execs.set(key, (execs.get(key) ?? 0) + 1);
        return exec(cmd);
      };
    }
    return c;
  };
  return { conns, execs };
}

describe('delta sync to the emulator’s workers', () => {
  let pool: SshWorkerPool;
  let workers: WorkerTarget[];
  let conns: ConnectionManager;
  let execs: Map<string, number>;
  const ws = path.join(tmp, 'ws');
  const home = path.join(tmp, 'home');
  const sandbox = (i: number) => path.join(tmp, 'emu', `w${i}`);
  const remote = (i: number) => path.join(sandbox(i), '.tpw', 'workspaces', 'ws');
  const sync = (onProgress?: (p: SyncProgress) => void) => deltaSync({ root: ws, files: listWorkspaceFiles(ws).files, dest: '~/.tpw/workspaces/ws', workers, conns, home, onProgress });
  const expected = () => {
    const t = tree(ws);
    for (const k of Object.keys(t)) if (k.startsWith('data/') || k === 'notes.ipynb') delete t[k];
    return t;
  };

  before(async () => {
    const hostKey = generateEd25519KeyPair();
    const clientKey = generateEd25519KeyPair();
    const addresses = [1, 2, 3].map((i) => `127.0.6.${i}`);
    const port = await freePort(addresses[0]);
    pool = new SshWorkerPool({ port, hostKey: hostKey.private, authorizedKey: clientKey.public, username });
    for (const [index, address] of addresses.entries()) {
      await pool.addWorker({ nodeId: 'n', index, address, hostnames: addresses, sandboxDir: sandbox(index), acceleratorType: 'v4-24' });
    }
    workers = addresses.map((host, index) => ({ host, port, username, privateKey: clientKey.private, index }));
    ({ conns, execs } = countingConns(path.join(tmp, 'kh-emu')));
    for (let i = 0; i < 50; i++) write(ws, `pkg/mod${i}.py`, `x = ${i}\n`.repeat(100));
    write(ws, 'big.bin', Buffer.alloc(3 * 1024 * 1024, 7));
    write(ws, 'data/huge.csv', 'a,b\n');
    write(ws, 'notes.ipynb', '{}');
    write(ws, '.tpuignore', '# not for the TPU\ndata/\n*.ipynb\n');
  });
  after(async () => {
    conns?.dispose();
    await pool?.close();
  });

  it('first sync sends everything but what .tpuignore excludes', async () => {
    const seen: SyncProgress[] = [];
    const r = await sync((p) => seen.push(p));
    assert.deepEqual(r.map((x) => [x.upToDate, x.sentFiles]), [[false, 52], [false, 52], [false, 52]]);
    for (const i of [0, 1, 2]) assert.deepEqual(tree(remote(i)), expected());
    assert.ok(seen.some((p) => p.phase === 'sending' && p.files === 52 && p.bytes > 3 * 1024 * 1024), 'progress names files and bytes');
  });

  it('a no-change sync is one round trip per worker and sends nothing', async () => {
    execs.clear();
    const before = fs.statSync(path.join(remote(0), 'big.bin')).mtimeMs;
    const r = await sync();
    assert.deepEqual(r.map((x) => x.upToDate), [true, true, true]);
    assert.deepEqual([...execs.values()], [1, 1, 1]);
    assert.equal(fs.statSync(path.join(remote(0), 'big.bin')).mtimeMs, before);
  });

  it('one change, one deletion and one odd new name: only those travel', async () => {
    write(ws, 'pkg/mod3.py', 'changed\n');
    fs.rmSync(path.join(ws, 'pkg/mod4.py'));
    const odd = "we'ird $(name) `x`\nünï.txt";
    write(ws, odd, 'odd\n');
    execs.clear();
    const r = await sync();
    assert.deepEqual(r.map((x) => [x.sentFiles, x.deletedFiles]), [[2, 1], [2, 1], [2, 1]]);
    assert.ok(r[0].bytes < 64 * 1024, `small archive (${r[0].bytes} bytes)`);
    assert.deepEqual([...execs.values()], [1, 1, 1], "a changed sync is one exec per worker too");
    for (const i of [0, 1, 2]) assert.deepEqual(tree(remote(i)), expected());
    assert.equal(fs.existsSync(path.join(remote(1), 'pkg/mod4.py')), false);
  });

  it('a worker whose copy was wiped gets everything again; the others stay untouched', async () => {
    fs.rmSync(remote(2), { recursive: true });
    fs.rmSync(`${remote(2)}.manifest`);
    const r = await sync();
    assert.deepEqual(r.map((x) => x.upToDate), [true, true, false]);
    assert.equal(r[2].sentFiles, 52);
    assert.deepEqual(tree(remote(2)), expected());
  });
});

describe('delta sync to real OpenSSH sshd', () => {
  let sshd: SshdInstance;
  before(async () => {
    sshd = await startSshd({ host: `${testAddressPrefix(6)}.20` });
  });
  after(async () => sshd?.stop());

  it('first, no-change and changed syncs to an absolute folder', async () => {
    const ws = path.join(tmp, 'ws2');
    const dest = path.join(tmp, 'sshd-dest', 'my ws');
    write(ws, 'a.txt', 'a\n');
    write(ws, 'sub/b.sh', '#!/bin/sh\necho b\n');
    fs.chmodSync(path.join(ws, 'sub/b.sh'), 0o755);
    const conns = new ConnectionManager({ knownHostsPath: path.join(tmp, 'kh-sshd') });
    const w: WorkerTarget = { host: sshd.host, port: sshd.port, username: sshd.username, privateKey: sshd.privateKey, index: 0 };
    try {
      const go = () => deltaSync({ root: ws, files: listWorkspaceFiles(ws).files, dest, workers: [w], conns, home: path.join(tmp, 'home2') });
      assert.equal((await go())[0].sentFiles, 2);
      assert.deepEqual(tree(dest), tree(ws));
      assert.equal(fs.statSync(path.join(dest, 'sub/b.sh')).mode & 0o111, 0o111, 'exec bit kept');
      assert.equal((await go())[0].upToDate, true);
      fs.chmodSync(path.join(ws, 'sub/b.sh'), 0o644);
      const r = await go();
      assert.equal(r[0].sentFiles, 1, 'a mode change alone is a change');
      assert.equal(fs.statSync(path.join(dest, 'sub/b.sh')).mode & 0o111, 0);
    } finally {
      conns.dispose();
    }
  });
});

describe('.tpuignore patterns', () => {
  it('follows gitignore rules', () => {
    const rules = parseIgnore(['# comment', '', '*.log', '/build', 'data/', 'ckpt/**/*.pt', '!keep.log', 'a?c', 'x[0-9].txt', 'docs/*.md'].join('\n'));
    const cases: Array<[string, boolean]> = [
      ['train.log', true],
      ['sub/dir/train.log', true],
      ['keep.log', false],
      ['build', true],
      ['build/x.o', true],
      ['src/build', false],
      ['data/x.csv', true],
      ['sub/data/x.csv', true],
      ['data', false], // a file named data is not the directory data/
      ['ckpt/a/b/m.pt', true],
      ['ckpt/m.pt', true],
      ['ckpt/m.py', false],
      ['abc', true],
      ['abbc', false],
      ['x7.txt', true],
      ['xa.txt', false],
      ['docs/r.md', true],
      ['docs/sub/r.md', false],
      ['main.py', false],
    ];
    for (const [p, want] of cases) assert.equal(isIgnored(rules, p), want, p);
  });
});
