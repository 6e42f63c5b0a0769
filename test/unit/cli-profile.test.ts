/**
 * `tpw profile` on the real captures (test/fixtures/profiles/real): the JSON's op table is xprof's (counts
 * and self time from the *.expected.json files that xprof produced), a directory of hosts is shown side by
 * side, and an empty op table says what the capture holds instead.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { before, test } from 'node:test';
import { profileMain } from '../../extension/src/cli/profile-main';
import { runTpw } from '../helpers/cli';
import { freshProfileCli, REAL as real } from '../helpers/profiles';

before(freshProfileCli);

interface JsonOp { program: string; name: string; category: string; count: number; self_us: number; total_us: number; flops: number; bytes: number }
interface JsonOut { device: { device_count: number; device_type: string; host_count: number }; steps: { total_us: number }[]; ops: JsonOp[]; hosts?: { host: string; avg_step_us: number }[] }
interface Expected { hlo_stats: { program_id: string; hlo_op_name: string; category: string; occurrences: number; total_self_time: number }[]; overview: Record<string, string> }

const expected = (name: string): Expected => JSON.parse(readFileSync(path.join(real, `${name}.expected.json`), 'utf8')) as Expected;

test('tpw profile FILE --json --top 0: the op table xprof gives, in the documented shape', async () => {
  const r = await runTpw(real, ['profile', 'tpu-v6e-4-inference.xplane.pb', '--json', '--top', '0']);
  assert.equal(r.code, 0, r.err.join('\n'));
  const out = JSON.parse(r.out.join('\n')) as JsonOut;
  const want = expected('tpu-v6e-4-inference');
  assert.equal(out.device.device_type, want.overview.device_type);
  assert.equal(String(out.device.device_count), want.overview.device_core_count);
  assert.equal(out.ops.length, want.hlo_stats.length);
  for (const w of want.hlo_stats) {
    const o = out.ops.find((x) => x.program === w.program_id && x.name === w.hlo_op_name);
    assert.ok(o, w.hlo_op_name);
    assert.deepEqual(Object.keys(o).slice(0, 8), ['program', 'name', 'category', 'count', 'self_us', 'total_us', 'flops', 'bytes']);
    assert.equal(o.count, w.occurrences);
    assert.equal(o.category, w.category);
    assert.ok(Math.abs(o.self_us - w.total_self_time) <= 1e-3 * w.total_self_time, `${o.name}: ${o.self_us} vs ${w.total_self_time}`);
  }
  assert.deepEqual(out.ops.map((o) => o.self_us), [...out.ops.map((o) => o.self_us)].sort((a, b) => b - a), 'most self time first');
});

test('tpw profile --top N keeps the N ops with the most self time, and the table names them', async () => {
  const r = await runTpw(real, ['profile', 'jax-te-fused-attn.xplane.pb', '--top', '3']);
  assert.equal(r.code, 0, r.err.join('\n'));
  const want = [...expected('jax-te-fused-attn').hlo_stats].sort((a, b) => b.total_self_time - a.total_self_time).slice(0, 3);
  const text = r.out.join('\n');
  for (const w of want) assert.match(text, new RegExp(`^${w.hlo_op_name.replace(/\./g, '\\.')}\\s+${w.category}\\s+${w.occurrences}\\s`, 'm'));
  assert.match(text, /… 17 more \(--top 0 shows all\)\./);
});

test('tpw profile DIR: hosts side by side, the slowest named, ops of all hosts combined', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tpw-profile-dir-'));
  copyFileSync(path.join(real, 'jax-mi300x-conv.xplane.pb'), path.join(dir, 'a.xplane.pb'));
  copyFileSync(path.join(real, 'jax-mi300x-conv-legacy.xplane.pb'), path.join(dir, 'b.xplane.pb'));
  copyFileSync(path.join(real, 'tf-8gpu-multi-worker.xplane.pb'), path.join(dir, 'c.xplane.pb'));
  const r = await runTpw(dir, ['profile', '.', '--json']);
  assert.equal(r.code, 0, r.err.join('\n'));
  const out = JSON.parse(r.out.join('\n')) as JsonOut;
  assert.equal(out.device.host_count, 3);
  assert.deepEqual(out.hosts?.map((h) => h.host), ['tw003', 'chi-mi300x-013.ord.vultr.cpe.ice.amd.com', '34.83.195.179:6003']);
  const conv = (name: string): number => expected(name).hlo_stats.find((w) => w.hlo_op_name.startsWith('input_transpose_fusion') && !w.hlo_op_name.endsWith('.1'))?.occurrences ?? NaN;
  assert.equal(out.ops.find((o) => o.name === 'input_transpose_fusion')?.count, conv('jax-mi300x-conv') + conv('jax-mi300x-conv-legacy'));
  // Only the TF capture has steps (xprof: 21.3 ms); the run's step is its slowest host's.
  assert.equal((out.steps[0].total_us / 1000).toFixed(1), expected('tf-8gpu-multi-worker').overview.steptime_ms_average);
  const text = await runTpw(dir, ['profile', dir]);
  assert.match(text.out.join('\n'), /^HOST\s+STEPS\s+AVG STEP\s+IDLE$/m);
  assert.match(text.out.join('\n'), /^tw003\s+0\s+-\s/m);
});

test('tpw profile on H200 captures: steps from step annotations; kernels run in CUDA command buffers named, with the flag that attributes them', async () => {
  const r = await runTpw(real, ['profile', 'h200-jax-transformer.xplane.pb']);
  assert.equal(r.code, 0, r.err.join('\n'));
  const text = r.out.join('\n');
  assert.match(text, /^1 × Nvidia GPU \(Hopper\) on 1 host;/m);
  assert.match(text, /^6 steps \(from step annotations: the device work under each, as xprof groups it\), average 1\.67 ms\.$/m);
  assert.match(text, /^1720 kernels \([\d.]+ ms\) named an HLO op that their program's HLO does not hold \(command_buffer_1 ×1720\), so, as in xprof, no op is charged for them\. XLA ran them inside CUDA command buffers .* XLA_FLAGS=--xla_gpu_enable_command_buffer= /m);
  assert.doesNotMatch(text, /^OP\s+CATEGORY/m, 'no op table');
  const pallas = await runTpw(real, ['profile', 'h200-jax-pallas.xplane.pb']);
  assert.match(pallas.out.join('\n'), /^No steps: no device has a Steps line, and no step annotation \(jax\.profiler\.StepTraceAnnotation/m);
});

test('tpw profile on a capture without device ops says what it holds; bad input is a sentence naming the file', async () => {
  const r = await runTpw(real, ['profile', 'tf-8gpu-multi-worker.xplane.pb']);
  assert.equal(r.code, 0, r.err.join('\n'));
  assert.match(r.out.join('\n'), /No XLA ops ran on a device in this capture\. It holds \d+ planes with events: \/host:CPU \(\d+\)/);
  const dir = mkdtempSync(path.join(tmpdir(), 'tpw-profile-bad-'));
  const bad = path.join(dir, 'cut.xplane.pb');
  writeFileSync(bad, readFileSync(path.join(real, 'jax-mi300x-conv.xplane.pb')).subarray(0, 100_000));
  const b = await runTpw(dir, ['profile', bad]);
  assert.notEqual(b.code, 0);
  assert.match(b.err.join('\n'), new RegExp(`${bad.replace(/[.]/g, '\\.')}: the profile is truncated or corrupt`));
  const none = await runTpw(dir, ['profile', path.join(dir, 'missing.xplane.pb')]);
  assert.notEqual(none.code, 0);
  assert.match(none.err.join('\n'), /There is no file or directory .*missing\.xplane\.pb\./);
  const top = await runTpw(real, ['profile', 'tpu-v6e-4-inference.xplane.pb', '--top', 'x']);
  assert.equal(top.code, 2);
});

test("the small `tpw profile` entry (bin/tpw's fast path) answers as the full CLI, and leaves --help and bad flags to it", async () => {
  const file = path.join(real, 'jax-mi300x-conv.xplane.pb');
  const out: string[] = [];
  assert.equal(await profileMain([file, '--json', '--top', '2'], (l) => out.push(l), () => undefined), 0);
  const full = await runTpw(real, ['profile', file, '--json', '--top', '2']);
  assert.deepEqual(JSON.parse(out.join('\n')), JSON.parse(full.out.join('\n')));
  assert.equal(await profileMain([file, '--help']), undefined);
  assert.equal(await profileMain([file, '--topp', '3']), undefined);
  const err: string[] = [];
  assert.equal(await profileMain([file, 'extra'], () => undefined, (l) => err.push(l)), 2);
  assert.deepEqual(err, ['tpw profile: unexpected argument "extra"; see tpw profile --help']);
});

test('node bin/tpw.js profile: a reader that closes the pipe early ends it quietly (exit 0, no stack trace), and it needs only its own bundle', async () => {
  const repo = path.resolve(__dirname, '../..');
  const file = path.join(real, 'h200-jax-transformer-no-cmdbuf.xplane.pb');
  // `tpw profile … | head -c 20`: the reader takes 20 bytes and closes its end while tpw is still writing.
  const piped = spawnSync('bash', ['-o', 'pipefail', '-c', `node "${repo}/bin/tpw.js" profile "${file}" --json --top 0 | head -c 20 >/dev/null`], { encoding: 'utf8' });
  assert.equal(piped.status, 0, piped.stderr);
  assert.doesNotMatch(piped.stderr, /EPIPE|Error/);
  // A copy of bin/ with only the profile bundle and the analysis (as a .vsix has them, without the native build)
  // answers `profile`, and names the missing bundle otherwise; its bin/tpw, with no dist/tpw-profile, runs node.
  const copy = mkdtempSync(path.join(tmpdir(), 'tpw-profile-only-'));
  mkdirSync(path.join(copy, 'bin'));
  mkdirSync(path.join(copy, 'dist'));
  for (const f of ['tpw', 'tpw.js']) copyFileSync(path.join(repo, 'bin', f), path.join(copy, 'bin', f));
  for (const f of ['profile-cli.js', 'profile.wasm']) copyFileSync(path.join(repo, 'dist', f), path.join(copy, 'dist', f));
  const alone = spawnSync('node', [path.join(copy, 'bin', 'tpw.js'), 'profile', file, '--json', '--top', '1'], { encoding: 'utf8' });
  assert.equal(alone.status, 0, alone.stderr);
  assert.equal((JSON.parse(alone.stdout) as JsonOut).ops.length, 1);
  const viaSh = spawnSync(path.join(copy, 'bin', 'tpw'), ['profile', file, '--json', '--top', '0'], { encoding: 'utf8' });
  assert.equal(viaSh.status, 0, viaSh.stderr);
  assert.equal(viaSh.stdout, spawnSync('node', [path.join(repo, 'bin', 'tpw.js'), 'profile', file, '--json', '--top', '0'], { encoding: 'utf8' }).stdout);
  const other = spawnSync(path.join(copy, 'bin', 'tpw'), ['runs'], { encoding: 'utf8' });
  assert.equal(other.status, 1);
  assert.match(other.stderr, /dist\/cli\.js is missing; run `npm run build`/);
});
