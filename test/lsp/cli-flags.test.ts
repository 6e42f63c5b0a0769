/**
 * `tpw flags lint` and `tpw flags explain`: the same catalog and checks as the editor, through the built CLI.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { repoRoot } from './harness';

const cli = path.join(repoRoot, 'dist', 'cli.js');
const tpw = (...args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8' });

test('tpw flags lint: errors fail, warnings do not; file:line:col output', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-flags-'));
  try {
    const bad = path.join(dir, 'bad.sh');
    fs.writeFileSync(bad, "#!/bin/bash\nexport LIBTPU_INIT_ARGS='--xla_tpu_enable_flash_attention=maybe --xla_tpu_scoped_vmem_limt_kib=1'\n");
    const r = tpw('flags', 'lint', bad);
    assert.equal(r.status, 1, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.equal(lines.length, 2);
    assert.match(lines[0], /bad\.sh:2:59: error: "maybe" is not a valid value .*\[bad-value\]/);
    assert.match(lines[1], /bad\.sh:2:\d+: warning: Unknown flag --xla_tpu_scoped_vmem_limt_kib. Did you mean --xla_tpu_scoped_vmem_limit_kib\?/);
    const warnOnly = path.join(dir, 'warn.env');
    fs.writeFileSync(warnOnly, 'LIBTPU_INIT_ARGS=--xla_tpu_private_thing=1\n');
    assert.equal(tpw('flags', 'lint', warnOnly).status, 0);
    const json = JSON.parse(tpw('flags', 'lint', '--json', bad).stdout) as { code: string }[];
    assert.deepEqual(json.map((x) => x.code), ['bad-value', 'unknown-flag']);
    const seeds = path.join(repoRoot, 'test', 'lsp', 'fixtures', 'torchprime-recipes.sh');
    const clean = tpw('flags', 'lint', seeds, path.join(repoRoot, 'recipes', 'tiny-llama.sh'));
    assert.equal(clean.status, 0);
    assert.equal(clean.stdout, '', 'the seed recipes lint clean');
    assert.equal(tpw('flags', 'lint', path.join(dir, 'missing.sh')).status, 1);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('tpw flags explain: a known flag, a did-you-mean, usage errors', () => {
  const r = tpw('flags', 'explain', '--', '--xla_tpu_scoped_vmem_limit_kib=98304');
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^--xla_tpu_scoped_vmem_limit_kib\n/);
  assert.match(r.stdout, /type: {5}int/);
  assert.match(r.stdout, /read by: {2}libtpu/);
  const g = tpw('flags', 'explain', 'xla_gpu_shape_checks');
  assert.match(g.stdout, /values: {3}one of IGNORE, RUNTIME, COMPILE_TIME/);
  assert.match(g.stdout, /default: {2}RUNTIME/);
  const typo = tpw('flags', 'explain', 'xla_tpu_enable_flash_atention');
  assert.equal(typo.status, 1);
  assert.match(typo.stderr, /did you mean --xla_tpu_enable_flash_attention\?/);
  // A flag XLA removed: what its history says, and exit 1 (it is not a flag any more).
  const gone = tpw('flags', 'explain', 'xla_gpu_graph_level');
  assert.equal(gone.status, 1);
  assert.match(gone.stdout, /^--xla_gpu_graph_level was removed from XLA in openxla\/xla@add6972510a4 \(2025-09-12\); use --xla_gpu_enable_command_buffer/);
  assert.equal(tpw('flags', 'frobnicate').status, 2);
  assert.match(tpw('--help').stdout, /tpw flags lint FILE/);
});
