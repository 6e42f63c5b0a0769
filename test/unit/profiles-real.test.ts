/**
 * Real captures from public repositories (test/fixtures/profiles/real/SOURCE.md) against what xprof itself
 * reports on them (the *.expected.json files, made by make-expected.py with PyPI xprof): every op's count, self
 * time and total time within 0.1%, and its category, by both builds of the analysis: WebAssembly as the run view
 * runs it (with its timeline, on the calling thread and on the parser's worker) and as `node bin/tpw.js profile`
 * runs it, and the native `tpw profile` on one thread and on two.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { OpRow, ProfileSummary } from '../../protocol/run-view-messages';
import { ProfileParser } from '../../extension/src/core/profiles/parse';
import { ProfileFormatError } from '../../extension/src/core/profiles/wasm-host';
import { freshProfileCli, profileBuilds, profileWasm, profileWorker, REAL, REPO, stepDifferences, type XprofStep } from '../helpers/profiles';

const captures = readdirSync(REAL).filter((f) => f.endsWith('.xplane.pb')).sort();

interface ExpectedRow {
  program_id: string;
  hlo_op_name: string;
  category: string;
  occurrences: number;
  total_time: number;
  total_self_time: number;
  bound_by: string;
}

interface ExpectedFile {
  hlo_stats: ExpectedRow[];
  overview: Record<string, string>;
  steps: XprofStep[];
}

function expectedFile(capture: string): ExpectedFile {
  return JSON.parse(readFileSync(path.join(REAL, capture.replace('.xplane.pb', '.expected.json')), 'utf8')) as ExpectedFile;
}

/** An op as both outputs give it: the run view's summary (camelCase) and `tpw profile --json` (snake_case). */
interface Op { program: string; name: string; category: string; count: number; selfUs: number; totalUs: number }

/** Every difference between our op table and xprof's, in words (empty when they agree). */
function differences(ops: Op[], want: ExpectedRow[]): string[] {
  const got = new Map(ops.map((o) => [`${o.program}/${o.name}`, o]));
  const out: string[] = [];
  const near = (a: number, b: number): boolean => Math.abs(a - b) <= 1e-3 * Math.max(Math.abs(b), 1e-6);
  for (const w of want) {
    const key = `${w.program_id}/${w.hlo_op_name}`;
    const o = got.get(key);
    got.delete(key);
    if (!o) { out.push(`${key}: missing`); continue; }
    if (o.count !== w.occurrences) out.push(`${key}: count ${o.count}, xprof ${w.occurrences}`);
    if (!near(o.selfUs, w.total_self_time)) out.push(`${key}: self ${o.selfUs} µs, xprof ${w.total_self_time}`);
    if (!near(o.totalUs, w.total_time)) out.push(`${key}: total ${o.totalUs} µs, xprof ${w.total_time}`);
    if (o.category !== w.category) out.push(`${key}: category ${o.category}, xprof ${w.category}`);
  }
  for (const key of got.keys()) out.push(`${key}: not in xprof's table`);
  return out;
}

interface JsonOp { program: string; name: string; category: string; count: number; self_us: number; total_us: number }

/** `tpw profile FILE --json --top 0` by `argv0` (the native executable, or node on bin/tpw.js). */
function cliOps(argv0: string[], file: string, env: NodeJS.ProcessEnv = {}): Op[] {
  const r = spawnSync(argv0[0], [...argv0.slice(1), 'profile', file, '--json', '--top', '0'], { encoding: 'utf8', env: { ...process.env, ...env }, maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, `${argv0.join(' ')} ${file}: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { ops: JsonOp[] }).ops.map((o) => ({ ...o, selfUs: o.self_us, totalUs: o.total_us }));
}

describe('op statistics on real captures agree with xprof, on both builds', () => {
  const { native } = profileBuilds();
  const wasm = profileWasm();
  const parser = new ProfileParser(profileWorker(), { inlineMaxBytes: -1 });
  before(freshProfileCli);
  after(() => parser.dispose());

  it('has the captures', () => assert.ok(captures.length >= 8, captures.join()));

  for (const capture of captures) {
    it(capture, async () => {
      const file = path.join(REAL, capture);
      const want = expectedFile(capture).hlo_stats;
      const paths: [string, Op[]][] = [
        ['WebAssembly, the run view\'s summary', wasm.analyze(file).ops],
        ['WebAssembly, on the parser\'s worker', (await parser.analyze(file)).ops],
        ['WebAssembly, node bin/tpw.js profile', cliOps([process.execPath, path.join(REPO, 'bin/tpw.js')], file)],
        ['native, one thread', cliOps([native], file, { TPW_THREADS: '1' })],
        ['native, two threads', cliOps([native], file, { TPW_THREADS: '2' })],
      ];
      for (const [how, ops] of paths) assert.deepEqual(differences(ops, want), [], `${capture}, ${how}`);
    });
  }

  for (const capture of captures) {
    it(`${capture}: overview and steps as xprof's overview page gives them`, () => {
      const s = wasm.analyze(path.join(REAL, capture));
      const { overview: want, hlo_stats: rows, steps } = expectedFile(capture);
      assert.equal(s.overview.hardware, want.hardware_type);
      assert.equal(String(s.overview.deviceCount), want.device_core_count);
      assert.equal(String(s.overview.hostCount), want.host_count);
      assert.equal(s.overview.deviceType, want.device_type);
      if (s.overview.hardware === 'TPU') {
        assert.equal(`${s.overview.idlePercent.toFixed(1)}%`, want.device_idle_time_percent);
        // Roofline from the capture's own FLOPs, bytes and peaks: xprof's bound_by, op by op.
        for (const r of rows) assert.equal(s.ops.find((o) => o.program === r.program_id && o.name === r.hlo_op_name)?.boundBy, r.bound_by, r.hlo_op_name);
      } else {
        // Elsewhere a roofline would need XLA's cost analysis, which the capture does not carry: none.
        assert.ok(s.ops.every((o: OpRow) => o.boundBy === ''), capture);
      }
      // xprof's average, shortest and longest step time, rounded as it prints them; no steps where it finds none.
      const ms = s.steps.map((st) => st.totalUs / 1000);
      const avgMs = ms.length ? ms.reduce((a, x) => a + x, 0) / ms.length : 0;
      const decimals = want.steptime_ms_average.split('.')[1]?.length ?? 0;
      assert.equal(avgMs.toFixed(decimals), want.steptime_ms_average);
      assert.equal((ms.length ? Math.min(...ms) : 0).toFixed(decimals), want.steptime_ms_minimum);
      assert.equal((ms.length ? Math.max(...ms) : 0).toFixed(decimals), want.steptime_ms_maximum);
      // And each step's time as its input pipeline analysis lists it.
      assert.deepEqual(stepDifferences(s.steps.map((st) => st.totalUs), steps), []);
      // The timeline has every event, each named.
      assert.equal(s.timeline.lines.reduce((a, l) => a + l.start.length, 0), s.eventCount);
      assert.ok(s.timeline.lines.every((l) => l.name_.every((n) => n >= 0 && n < s.timeline.names.length)));
    });
  }

  it('groups GPU steps under jax.profiler.StepTraceAnnotation as xprof does, and counts no op for kernels run inside a CUDA command buffer', () => {
    const plain: ProfileSummary = wasm.analyze(path.join(REAL, 'h200-jax-transformer-no-cmdbuf.xplane.pb'));
    // 8 annotated steps, each the span of the kernels its launches ran; as xprof does outside TPU, the first and the
    // last of more than 5 are left out, likely cut by the capture's start and stop (xprof: 2.2 ms average, 2.1 to 2.6).
    assert.equal(plain.steps.length, 6);
    assert.equal(plain.overview.stepSource, 'annotations');
    assert.equal(plain.unattributedKernels.count, 0);
    // The roofline's peaks: the plane's own HBM bandwidth, and the H200's dense bf16 peak from the chip table (the
    // plane names the model, NVIDIA H200, where the device type names only the architecture).
    assert.deepEqual([plain.overview.peakTflops, plain.overview.hbmGBs], [989, 4814.304]);
    const graphs = wasm.analyze(path.join(REAL, 'h200-jax-transformer.xplane.pb'));
    assert.equal(graphs.steps.length, 6);
    assert.deepEqual(graphs.ops, []);
    // Every kernel of the 8 steps names the command buffer, which is no instruction of the program's HLO.
    assert.deepEqual(graphs.unattributedKernels.names, { command_buffer_1: 1720 });
    assert.match(graphs.notes.unattributed, /^1720 kernels .*XLA_FLAGS=--xla_gpu_enable_command_buffer= /);
    // No step annotation in the Pallas capture: no steps (xprof: 0.0 ms).
    const pallas = wasm.analyze(path.join(REAL, 'h200-jax-pallas.xplane.pb'));
    assert.deepEqual([pallas.steps.length, pallas.overview.stepSource, pallas.unattributedKernels.count], [0, 'none', 24]);
    assert.match(pallas.notes.steps, /^No steps: /);
  });

  it('finds no ops in host-side launch events (the GPU runtime names the HLO op on them too)', () => {
    const s = wasm.analyze(path.join(REAL, 'jax-mi300x-conv.xplane.pb'));
    const conv = s.ops.find((o) => o.name === 'cudnn-conv.1');
    // 79 kernels on the device planes; the host plane has as many hipModuleLaunchKernel events naming it.
    assert.equal(conv?.count, expectedFile('jax-mi300x-conv.xplane.pb').hlo_stats.find((r) => r.hlo_op_name === 'cudnn-conv.1')?.occurrences);
  });

  // A cut that falls exactly between two top-level fields leaves a valid, smaller XSpace (nothing in the format
  // says more was to come); 1 or 3 bytes cannot remove a whole field of these files (their last is a plane or a
  // hostname of several characters), so the cut lands inside one, and that must be noticed, at a byte.
  it('notices a real capture that lost its last bytes, and names the byte', () => {
    const tmp = mkdtempSync(path.join(tmpdir(), 'tpw-real-'));
    for (const capture of captures) {
      const buf = readFileSync(path.join(REAL, capture));
      for (const lost of [1, 3]) {
        const cut = path.join(tmp, capture);
        writeFileSync(cut, buf.subarray(0, buf.length - lost));
        assert.throws(() => wasm.analyze(cut), (e: Error) => e instanceof ProfileFormatError && e.message.startsWith(`${cut}: the profile is truncated or corrupt: a field at byte `), `${capture} less ${lost}`);
      }
    }
  });
});
