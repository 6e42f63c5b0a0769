/**
 * dist/tpw-profile, the native `tpw profile` that bin/tpw runs: the same bytes as the node CLI on every real
 * capture, and node answering where it should (--help and bad flags, big captures), proved by a TPW_NODE that
 * records each call. The executable is built by scripts/build.mjs (Bun is a dev dependency) and rebuilt here
 * when a source it is made of is newer.
 */
import assert from 'node:assert/strict';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { handOffToNode, NODE_ABOVE_BYTES } from '../../extension/src/cli/profile-hand-off';
import { buildAll, ensureFreshBundle, REPO } from '../helpers/fresh-bundle';

const real = path.join(REPO, 'test/fixtures/profiles/real');
const tpw = path.join(REPO, 'bin', 'tpw');
const tmp = mkdtempSync(path.join(tmpdir(), 'tpw-native-'));
const calls = path.join(tmp, 'node-calls');
/** A node that writes each call's arguments to `calls`, then is node. */
const recordingNode = path.join(tmp, 'recording-node');
/** A node that must not be called: it fails loudly. */
const refusingNode = path.join(tmp, 'refusing-node');

before(async () => {
  await ensureFreshBundle({ entry: path.join(REPO, 'extension/src/cli/profile-native.ts'), outfile: path.join(REPO, 'dist/tpw-profile'), build: buildAll });
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
  return existsSync(calls) ? readFileSync(calls, 'utf8').trim().split('\n') : [];
}

test('bin/tpw profile answers natively, byte for byte as node does, on every real capture and on their directory', () => {
  const targets = [...readdirSync(real).filter((f) => f.endsWith('.xplane.pb')).map((f) => path.join(real, f)), real];
  assert.equal(targets.length, 9);
  for (const target of targets) {
    for (const flags of [['--json', '--top', '0'], []]) {
      const native = run(tpw, ['profile', target, ...flags], refusingNode);
      assert.equal(native.status, 0, `${target} ${flags.join(' ')}: ${native.stderr}`);
      const node = nodeCli(['profile', target, ...flags]);
      assert.equal(native.stdout, node.stdout, `${target} ${flags.join(' ')}`);
      assert.equal(native.stderr, '');
    }
  }
});

test('bin/tpw profile: bad input gets the node CLI\'s messages and exit codes, without node where it can', () => {
  const missing = path.join(tmp, 'missing.xplane.pb');
  const cut = path.join(tmp, 'cut.xplane.pb');
  writeFileSync(cut, readFileSync(path.join(real, 'jax-mi300x-conv.xplane.pb')).subarray(0, 100_000));
  const file = path.join(real, 'jax-te-fused-attn.xplane.pb');
  for (const args of [[missing], [cut], [file, 'extra'], [file, '--top', 'x'], []]) {
    const native = run(tpw, ['profile', ...args], refusingNode);
    const node = nodeCli(['profile', ...args]);
    assert.equal(native.status, node.status, args.join(' '));
    assert.notEqual(native.status, 0);
    assert.equal(native.stderr, node.stderr, args.join(' '));
    assert.doesNotMatch(native.stderr, /node was called/);
  }
});

test('bin/tpw profile hands --help and unknown flags to the node CLI, and says so plainly when there is no node', () => {
  rmSync(calls, { force: true });
  const file = path.join(real, 'jax-te-fused-attn.xplane.pb');
  for (const args of [['--help'], [file, '--topp', '3']]) {
    const native = run(tpw, ['profile', ...args], recordingNode);
    const node = nodeCli(['profile', ...args]);
    assert.equal(native.status, node.status);
    assert.equal(native.stdout + native.stderr, node.stdout + node.stderr);
  }
  assert.equal(nodeCalls().length, 2);
  assert.match(nodeCalls()[0], /bin\/tpw\.js profile --help$/);
  assert.match(nodeCalls()[1], /bin\/tpw\.js profile \S+jax-te-fused-attn\.xplane\.pb --topp 3$/);
  const none = run(tpw, ['profile', '--help'], path.join(tmp, 'no-such-node'));
  assert.equal(none.status, 1);
  assert.equal(none.stderr, 'tpw: `tpw profile --help` needs node, which was not found (set TPW_NODE to its path).\n');
});

test(`bin/tpw profile hands a capture over ${NODE_ABOVE_BYTES >> 20} MiB to node, and answers it itself when there is none`, () => {
  rmSync(calls, { force: true });
  const one = readFileSync(path.join(real, 'tpu-v6e-4-inference.xplane.pb'));
  const big = path.join(tmp, 'big.xplane.pb');
  // Repeated XSpace messages concatenate: N× the planes and events (the bench's big captures are made so).
  writeFileSync(big, Buffer.concat(Array.from({ length: Math.ceil(NODE_ABOVE_BYTES / one.length) + 1 }, () => one)));
  const args = ['profile', big, '--json', '--top', '0'];
  const handed = run(tpw, args, recordingNode);
  assert.equal(handed.status, 0, handed.stderr);
  assert.equal(nodeCalls().length, 1);
  assert.match(nodeCalls()[0], /bin\/tpw\.js profile \S+big\.xplane\.pb --json --top 0$/);
  const alone = run(tpw, args, path.join(tmp, 'no-such-node'));
  assert.equal(alone.status, 0, alone.stderr);
  assert.equal(alone.stdout, handed.stdout);
  assert.equal(nodeCalls().length, 1);
});

test('handOffToNode: node for big captures in all, or for one that node would split over threads the cores allow', () => {
  const mib = 1 << 20;
  assert.equal(handOffToNode([], 1), false);
  assert.equal(handOffToNode([3 * mib], 8), false);
  assert.equal(handOffToNode([NODE_ABOVE_BYTES], 1), false);
  assert.equal(handOffToNode([NODE_ABOVE_BYTES + 1], 1), true);
  assert.equal(handOffToNode([40 * mib, 30 * mib], 1), true, 'the sum counts');
  assert.equal(handOffToNode([20 * mib], 1), false, 'one thread: no split to gain');
  assert.equal(handOffToNode([20 * mib], 2), true, 'a split over two threads');
  assert.equal(handOffToNode([10 * mib, 10 * mib], 4), false, 'each too small to split');
});
