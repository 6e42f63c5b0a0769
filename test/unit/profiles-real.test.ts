/**
 * Real captures from public repositories (test/fixtures/profiles/real/SOURCE.md) against what xprof itself
 * reports on them (the *.expected.json files, made by make-expected.py with PyPI xprof): every op's count,
 * self time and total time within 0.1%, and its category, by every path that reads a capture.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import type { OpRow, ProfileSummary } from '../../extension/src/core/profiles/analyze';
import { buildSync } from 'esbuild';
import { analyzeProfileFile, analyzeXSpace } from '../../extension/src/core/profiles/analyze';
import { analyzeProfileFileParallel } from '../../extension/src/core/profiles/parallel';
import { ProfileParser } from '../../extension/src/core/profiles/parse';
import { decodeXSpace, ProfileFormatError } from '../../extension/src/core/profiles/xplane';

const dir = path.resolve(__dirname, '../fixtures/profiles/real');
const captures = readdirSync(dir).filter((f) => f.endsWith('.xplane.pb')).sort();

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
}

function expectedFile(capture: string): ExpectedFile {
  return JSON.parse(readFileSync(path.join(dir, capture.replace('.xplane.pb', '.expected.json')), 'utf8')) as ExpectedFile;
}

function expected(capture: string): ExpectedRow[] {
  return expectedFile(capture).hlo_stats;
}

/** Every difference between our op table and xprof's, in words (empty when they agree). */
function differences(ops: OpRow[], want: ExpectedRow[]): string[] {
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

describe('op statistics on real captures agree with xprof', () => {
  it('has the captures', () => assert.ok(captures.length >= 5, captures.join()));

  for (const capture of captures) {
    it(capture, () => {
      const file = path.join(dir, capture);
      const want = expected(capture);
      const paths: [string, ProfileSummary][] = [
        ['streaming', analyzeProfileFile(file)],
        ['streaming, small window', analyzeProfileFile(file, { chunkSize: 4096 })],
        ['decoded whole', analyzeXSpace(decodeXSpace(readFileSync(file)))],
      ];
      for (const [how, s] of paths) assert.deepEqual(differences(s.ops, want), [], `${capture}, ${how}`);
    });
  }

  it('the run view\'s parser gives the same op tables once it warmed its decoder up (warm-up.ts)', async () => {
    // Captures up to 4 MB are analyzed on the calling thread: the worker file is never loaded here.
    const parser = new ProfileParser(path.join(dir, 'no-worker.js'));
    parser.warmUp();
    try {
      for (const capture of captures) assert.deepEqual(differences((await parser.analyze(path.join(dir, capture))).ops, expected(capture)), [], capture);
    } finally {
      parser.dispose();
    }
  });

  for (const capture of captures) {
    it(`${capture}: overview and steps as xprof's overview page gives them`, () => {
      const s = analyzeProfileFile(path.join(dir, capture));
      const { overview: want, hlo_stats: rows } = expectedFile(capture);
      assert.equal(s.overview.hardware, want.hardware_type);
      assert.equal(String(s.overview.deviceCount), want.device_core_count);
      assert.equal(String(s.overview.hostCount), want.host_count);
      assert.equal(s.overview.deviceType, want.device_type);
      if (s.overview.hardware === 'TPU') {
        assert.equal(`${s.overview.idlePercent.toFixed(1)}%`, want.device_idle_time_percent);
        // Roofline from the capture's own FLOPs, bytes and peaks: xprof's bound_by, op by op.
        for (const r of rows) assert.equal(s.ops.find((o) => o.program === r.program_id && o.name === r.hlo_op_name)?.boundBy, r.bound_by, r.hlo_op_name);
      }
      // xprof's average, shortest and longest step time, rounded as it prints them; no steps where it finds none.
      const ms = s.steps.map((st) => st.totalUs / 1000);
      const avgMs = ms.length ? ms.reduce((a, x) => a + x, 0) / ms.length : 0;
      const decimals = want.steptime_ms_average.split('.')[1]?.length ?? 0;
      assert.equal(avgMs.toFixed(decimals), want.steptime_ms_average);
      assert.equal((ms.length ? Math.min(...ms) : 0).toFixed(decimals), want.steptime_ms_minimum);
      assert.equal((ms.length ? Math.max(...ms) : 0).toFixed(decimals), want.steptime_ms_maximum);
    });
  }

  it('groups GPU steps under jax.profiler.StepTraceAnnotation as xprof does, and counts no op for kernels run inside a CUDA command buffer', () => {
    const plain = analyzeProfileFile(path.join(dir, 'h200-jax-transformer-no-cmdbuf.xplane.pb'));
    // 8 annotated steps, each the span of the kernels its launches ran (xprof: 2.2 ms average, 2.1 to 2.6).
    assert.equal(plain.steps.length, 8);
    assert.equal(plain.overview.stepSource, 'annotations');
    assert.equal(plain.unattributedKernels.count, 0);
    // The roofline's peaks: the plane's own HBM bandwidth, and the H200's dense bf16 peak from chips.ts (the plane
    // names the model, NVIDIA H200, where the device type names only the architecture).
    assert.deepEqual([plain.overview.peakTflops, plain.overview.hbmGBs], [989, 4814.304]);
    const graphs = analyzeProfileFile(path.join(dir, 'h200-jax-transformer.xplane.pb'));
    assert.equal(graphs.steps.length, 8);
    assert.deepEqual(graphs.ops, []);
    // Every kernel of the 8 steps names the command buffer, which is no instruction of the program's HLO.
    assert.deepEqual(graphs.unattributedKernels.names, { command_buffer_1: 1720 });
    // No step annotation in the Pallas capture: no steps (xprof: 0.0 ms).
    const pallas = analyzeProfileFile(path.join(dir, 'h200-jax-pallas.xplane.pb'));
    assert.deepEqual([pallas.steps.length, pallas.overview.stepSource, pallas.unattributedKernels.count], [0, 'none', 24]);
  });

  it('groups the same steps when the planes are analyzed in chunks on two threads (the host plane apart from the device plane)', async () => {
    // The worker runs from a bundle, as in the extension: worker threads do not get tsx's loader.
    const workerJs = path.join(mkdtempSync(path.join(tmpdir(), 'tpw-real-worker-')), 'profile-worker.js');
    buildSync({ entryPoints: [path.resolve(__dirname, '../../extension/src/core/profiles/worker.ts')], bundle: true, platform: 'node', format: 'cjs', target: 'node20', outfile: workerJs, logLevel: 'warning' });
    for (const capture of ['h200-jax-transformer.xplane.pb', 'h200-jax-transformer-no-cmdbuf.xplane.pb']) {
      const file = path.join(dir, capture);
      const split = await analyzeProfileFileParallel(file, workerJs, { minParallelBytes: 0, threads: 2, chunks: 4 });
      assert.equal(split.steps.length, 8, capture);
      assert.deepEqual(split, analyzeProfileFile(file), capture);
    }
  });

  it('finds no ops in host-side launch events (the GPU runtime names the HLO op on them too)', () => {
    const s = analyzeProfileFile(path.join(dir, 'jax-mi300x-conv.xplane.pb'));
    const conv = s.ops.find((o) => o.name === 'cudnn-conv.1');
    // 79 kernels on the device planes; the host plane has as many hipModuleLaunchKernel events naming it.
    assert.equal(conv?.count, expected('jax-mi300x-conv.xplane.pb').find((r) => r.hlo_op_name === 'cudnn-conv.1')?.occurrences);
  });

  // A cut that falls exactly between two top-level fields leaves a valid, smaller XSpace (nothing in the format
  // says more was to come); 1 or 3 bytes cannot remove a whole field of these files (their last is a plane or a
  // hostname of several characters), so the cut lands inside one, and that must be noticed.
  it('notices a real capture that lost its last bytes', () => {
    const tmp = mkdtempSync(path.join(tmpdir(), 'tpw-real-'));
    for (const capture of captures) {
      const buf = readFileSync(path.join(dir, capture));
      for (const lost of [1, 3]) {
        const cut = path.join(tmp, capture);
        writeFileSync(cut, buf.subarray(0, buf.length - lost));
        assert.throws(() => analyzeProfileFile(cut), (e: Error) => e instanceof ProfileFormatError && /truncated|corrupt/.test(e.message), `${capture} less ${lost}`);
        assert.throws(() => decodeXSpace(buf.subarray(0, buf.length - lost)), ProfileFormatError, `${capture} less ${lost}, decoded whole`);
      }
    }
  });
});
