/**
 * dist/tpw-profile, the native `tpw profile` that bin/tpw runs (native/profile, Rust, a port of the TypeScript
 * analysis): xprof's op table on every real capture, the same bytes as the node CLI on those and on hundreds of
 * damaged copies, and node answering where it should (--help and bad flags, a capture corrupt inside a plane),
 * proved by a TPW_NODE that records each call. The executable is built by scripts/build-native.mjs (cargo) before
 * the tests; cargo rebuilds it when a Rust source changed.
 */
import assert from 'node:assert/strict';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { addExact, exactTotal } from '../../extension/src/core/profiles/op-stats';
import { REPO } from '../helpers/fresh-bundle';
// @ts-expect-error: a plain .mjs build script, typed by its use here.
import { buildNativeProfile, NATIVE_PROFILE } from '../../scripts/build-native.mjs';

const real = path.join(REPO, 'test/fixtures/profiles/real');
const captures = readdirSync(real).filter((f) => f.endsWith('.xplane.pb')).map((f) => path.join(real, f));
const tpw = path.join(REPO, 'bin', 'tpw');
const tmp = mkdtempSync(path.join(tmpdir(), 'tpw-native-'));
const calls = path.join(tmp, 'node-calls');
/** A node that writes each call's arguments to `calls`, then is node. */
const recordingNode = path.join(tmp, 'recording-node');
/** A node that must not be called: it fails loudly. */
const refusingNode = path.join(tmp, 'refusing-node');

before(() => {
  assert.ok((buildNativeProfile as (o: { log: (s: string) => void }) => boolean)({ log: () => undefined }), 'dist/tpw-profile could not be built: cargo (Rust) is needed');
  assert.ok(existsSync(NATIVE_PROFILE as string));
  writeFileSync(recordingNode, `#!/bin/sh\nprintf '%s\\n' "$*" >> '${calls}'\nexec node "$@"\n`);
  writeFileSync(refusingNode, '#!/bin/sh\necho "node was called: $*" >&2\nexit 97\n');
  chmodSync(recordingNode, 0o755);
  chmodSync(refusingNode, 0o755);
});
after(() => rmSync(tmp, { recursive: true, force: true }));

function run(cmd: string, args: string[], node?: string): SpawnSyncReturns<string> {
  return spawnSync(cmd, args, { encoding: 'utf8', env: { ...process.env, ...(node ? { TPW_NODE: node } : {}) }, maxBuffer: 64 << 20 });
}
const nodeCli = (args: string[]): SpawnSyncReturns<string> => run('node', [path.join(REPO, 'bin', 'tpw.js'), ...args]);
function nodeCalls(): string[] {
  return existsSync(calls) ? readFileSync(calls, 'utf8').trim().split('\n').filter(Boolean) : [];
}

interface JsonOp { program: string; name: string; category: string; count: number; self_us: number }
interface Expected { hlo_stats: { program_id: string; hlo_op_name: string; category: string; occurrences: number; total_self_time: number }[] }

test('the native tpw profile gives xprof\'s op table on every real capture (count, category, self time within 0.1%)', () => {
  assert.equal(captures.length, 8);
  for (const file of captures) {
    const r = run(tpw, ['profile', file, '--json', '--top', '0'], refusingNode);
    assert.equal(r.status, 0, `${file}: ${r.stderr}`);
    const ops = (JSON.parse(r.stdout) as { ops: JsonOp[] }).ops;
    const want = (JSON.parse(readFileSync(file.replace(/\.xplane\.pb$/, '.expected.json'), 'utf8')) as Expected).hlo_stats;
    assert.equal(ops.length, want.length, file);
    for (const w of want) {
      const o = ops.find((x) => x.program === w.program_id && x.name === w.hlo_op_name);
      assert.ok(o, `${file}: ${w.hlo_op_name}`);
      assert.equal(o.count, w.occurrences, `${file}: ${w.hlo_op_name}`);
      assert.equal(o.category, w.category, `${file}: ${w.hlo_op_name}`);
      assert.ok(Math.abs(o.self_us - w.total_self_time) <= 1e-3 * w.total_self_time, `${file} ${o.name}: ${o.self_us} vs ${w.total_self_time}`);
    }
  }
});

test('bin/tpw profile answers natively, byte for byte as node does, on every real capture, their directory and a 65 MB repeated capture', () => {
  const big = path.join(tmp, 'big.xplane.pb');
  const one = readFileSync(path.join(real, 'tpu-v6e-4-inference.xplane.pb'));
  // Repeated XSpace messages concatenate: N× the planes and events (the bench's big captures are made so).
  writeFileSync(big, Buffer.concat(Array.from({ length: Math.ceil((65 << 20) / one.length) }, () => one)));
  for (const target of [...captures, real, big]) {
    for (const flags of target === big ? [['--json', '--top', '0']] : [['--json', '--top', '0'], [], ['--top', '3']]) {
      const native = run(tpw, ['profile', target, ...flags], refusingNode);
      assert.equal(native.status, 0, `${target} ${flags.join(' ')}: ${native.stderr}`);
      const node = nodeCli(['profile', target, ...flags]);
      assert.equal(native.stdout, node.stdout, `${target} ${flags.join(' ')}`);
      assert.equal(native.stderr, '');
    }
  }
  // Its planes split over 1, 2 or 3 threads: the same bytes (op sums are exact, unions order-free).
  const outputs = [1, 2, 3].map((n) => spawnSync(tpw, ['profile', big, '--json', '--top', '0'], { encoding: 'utf8', env: { ...process.env, TPW_THREADS: String(n) }, maxBuffer: 64 << 20 }).stdout);
  assert.ok(outputs[0].length > 1000);
  assert.deepEqual(outputs, [outputs[0], outputs[0], outputs[0]]);
});

test('op sums are exact whatever the order of additions (past 2^53, where running sums of doubles are not)', () => {
  const xs = [2 ** 53, 1, 1];
  assert.notEqual(xs[0] + xs[1] + xs[2], xs[0] + (xs[1] + xs[2]));
  const forward = new Float64Array(2);
  const backward = new Float64Array(2);
  for (const x of xs) addExact(forward, 0, x);
  for (const x of [...xs].reverse()) addExact(backward, 0, x);
  assert.equal(exactTotal(forward, 0), 2 ** 53 + 2);
  assert.equal(exactTotal(backward, 0), 2 ** 53 + 2);
});

test("bin/tpw profile: bad input gets the node CLI's messages and exit codes, natively", () => {
  const missing = path.join(tmp, 'missing.xplane.pb');
  const cut = path.join(tmp, 'cut.xplane.pb');
  writeFileSync(cut, readFileSync(path.join(real, 'jax-mi300x-conv.xplane.pb')).subarray(0, 100_000));
  const empty = path.join(tmp, 'empty.xplane.pb');
  writeFileSync(empty, '');
  const text = path.join(tmp, 'text.xplane.pb');
  writeFileSync(text, 'this is not a protobuf at all');
  const emptyDir = mkdtempSync(path.join(tmp, 'nothing-'));
  const file = path.join(real, 'jax-te-fused-attn.xplane.pb');
  for (const args of [[missing], [cut], [empty], [text], [emptyDir], [file, 'extra'], [file, '--top', 'x'], [file, '--top=1.5'], []]) {
    const native = run(tpw, ['profile', ...args], refusingNode);
    const node = nodeCli(['profile', ...args]);
    assert.equal(native.status, node.status, args.join(' '));
    assert.notEqual(native.status, 0);
    assert.equal(native.stderr, node.stderr, args.join(' '));
    assert.equal(native.stdout, '');
  }
});

test('a capture corrupt inside a plane is handed to node, which says where; without node the native one says what it can', () => {
  rmSync(calls, { force: true });
  const bad = Buffer.from(readFileSync(path.join(real, 'jax-te-fused-attn.xplane.pb')));
  // A length inside the first plane's first line made to run past its message (the top level stays whole).
  const at = bad.indexOf(Buffer.from('/host:CPU')) + 40;
  bad[at] = 0x0a;
  bad[at + 1] = 0xff;
  bad[at + 2] = 0x7f;
  const file = path.join(tmp, 'inner.xplane.pb');
  writeFileSync(file, bad);
  const node = nodeCli(['profile', file]);
  assert.equal(node.status, 1, 'node rejects the damaged plane');
  const native = run(tpw, ['profile', file], recordingNode);
  assert.deepEqual([native.status, native.stdout, native.stderr], [node.status, node.stdout, node.stderr]);
  assert.deepEqual(nodeCalls().map((c) => c.replace(/^\S*bin\/tpw\.js /, '')), [`profile ${file}`]);
  const alone = run(tpw, ['profile', file], path.join(tmp, 'no-such-node'));
  assert.equal(alone.status, 1);
  assert.equal(alone.stderr, `tpw: ${file}: the capture could not be read, or is corrupt\n`);
});

test('bin/tpw profile hands --help and unknown flags to the node CLI, and says so plainly when there is no node', () => {
  rmSync(calls, { force: true });
  const file = path.join(real, 'jax-te-fused-attn.xplane.pb');
  for (const args of [['--help'], [file, '--topp', '3'], [file, '--json=1']]) {
    const native = run(tpw, ['profile', ...args], recordingNode);
    const node = nodeCli(['profile', ...args]);
    assert.equal(native.status, node.status);
    assert.equal(native.stdout + native.stderr, node.stdout + node.stderr);
  }
  assert.equal(nodeCalls().length, 3);
  assert.match(nodeCalls()[0], /bin\/tpw\.js profile --help$/);
  assert.match(nodeCalls()[1], /bin\/tpw\.js profile \S+jax-te-fused-attn\.xplane\.pb --topp 3$/);
  const none = run(tpw, ['profile', '--help'], path.join(tmp, 'no-such-node'));
  assert.equal(none.status, 1);
  assert.equal(none.stderr, 'tpw: `tpw profile --help` needs node, which was not found (set TPW_NODE to its path).\n');
});

/** A damaged copy of a real capture, from a seeded generator (the same copies every run). */
function damaged(seed: number): Buffer {
  let s = seed * 2654435761 + 1;
  const rnd = (n: number): number => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s % n;
  };
  const src = readFileSync(captures[rnd(captures.length)]);
  const b = Buffer.from(src);
  switch (rnd(4)) {
    case 0: return b.subarray(0, rnd(b.length));
    case 1: for (let k = 0; k <= rnd(3); k++) b[rnd(b.length)] ^= 1 << rnd(8); return b;
    case 2: for (let k = 0; k <= rnd(4); k++) b[rnd(b.length)] = rnd(256); return b;
    default: {
      const i = rnd(b.length);
      const j = rnd(b.length);
      return Buffer.concat([b.subarray(0, i), b.subarray(j, j + 1 + rnd(64)), b.subarray(i)]);
    }
  }
}

test('on 120 damaged copies of the real captures, bin/tpw profile prints what node prints, answering most itself', () => {
  rmSync(calls, { force: true });
  const n = 120;
  for (let k = 0; k < n; k++) {
    const file = path.join(tmp, `damaged-${k}.xplane.pb`);
    writeFileSync(file, damaged(k));
    const native = run(tpw, ['profile', file, '--json', '--top', '0'], recordingNode);
    const node = nodeCli(['profile', file, '--json', '--top', '0']);
    assert.deepEqual([native.status, native.stdout, native.stderr], [node.status, node.stdout, node.stderr], `damaged copy ${k}`);
    rmSync(file);
  }
  // The rest went to node (a plane corrupt where node's message names an offset this decoder does not track).
  assert.ok(nodeCalls().length < n / 2, `${nodeCalls().length} of ${n} handed to node`);
});
