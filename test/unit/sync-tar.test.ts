import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { buffer } from 'node:stream/consumers';
import { tarStream } from '../../extension/src/core/sync/tar';
import { listWorkspaceFiles } from '../../extension/src/core/sync/workspace-files';

function tmp(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

test('tar stream extracts with GNU tar: contents, exec bit, long and unicode paths', async () => {
  const ws = tmp('tpw-ws-');
  const long = path.join('a'.repeat(60), 'b'.repeat(60), 'c'.repeat(30) + '.txt');
  const files: Record<string, string> = {
    'recipes/run me.sh': '#!/bin/bash\necho hi\n',
    'trainer/ünï códe.py': 'print("x")\n',
    [long]: 'deep\n',
    'empty.txt': '',
  };
  for (const [rel, body] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(ws, rel)), { recursive: true });
    fs.writeFileSync(path.join(ws, rel), body);
  }
  fs.chmodSync(path.join(ws, 'recipes/run me.sh'), 0o755);
  fs.mkdirSync(path.join(ws, 'node_modules/x'), { recursive: true });
  fs.writeFileSync(path.join(ws, 'node_modules/x/index.js'), 'skip');
  const outside = tmp('tpw-outside-');
  fs.writeFileSync(path.join(outside, 'secret'), 'not yours');
  fs.symlinkSync(path.join(outside, 'secret'), path.join(ws, 'escape'));

  const listing = listWorkspaceFiles(ws);
  assert.deepEqual(listing.skipped, ['escape'], 'a symlink out of the workspace is refused');
  assert.ok(!listing.files.some((f) => f.rel.startsWith('node_modules')));

  const archive = await buffer(tarStream(listing.files));
  const dest = tmp('tpw-dest-');
  const r = spawnSync('tar', ['-xf', '-', '-C', dest], { input: archive });
  assert.equal(r.status, 0, r.stderr.toString());
  for (const [rel, body] of Object.entries(files)) {
    assert.equal(fs.readFileSync(path.join(dest, rel), 'utf8'), body, rel);
  }
  assert.ok(fs.statSync(path.join(dest, 'recipes/run me.sh')).mode & 0o100, 'exec bit kept');
  assert.ok(!fs.existsSync(path.join(dest, 'escape')));
  assert.equal(execFileSync('tar', ['-tf', '-'], { input: archive }).toString().split('\n').filter(Boolean).length, 4);
});

test('inside a git work tree, .gitignore decides', () => {
  const ws = tmp('tpw-git-');
  execFileSync('git', ['init', '-q'], { cwd: ws });
  fs.writeFileSync(path.join(ws, '.gitignore'), 'ignored/\n*.log\n');
  fs.mkdirSync(path.join(ws, 'ignored'));
  fs.writeFileSync(path.join(ws, 'ignored/big.bin'), 'x');
  fs.writeFileSync(path.join(ws, 'train.log'), 'x');
  fs.writeFileSync(path.join(ws, 'kept.py'), 'x');
  const rels = listWorkspaceFiles(ws).files.map((f) => f.rel);
  assert.deepEqual(rels, ['.gitignore', 'kept.py']);
});
