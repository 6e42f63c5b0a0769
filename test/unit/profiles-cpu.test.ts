/**
 * Captures made with XLA on CPU (JAX, TensorFlow, torch_xla, and the trainer's own; test/fixtures/profiles/real/cpu/
 * README.md) against what xprof 2.24.2 reports on them (cpu/*.expected.json, made by make-expected.py): the steps
 * its input pipeline analysis lists, each step's time to the nanosecond, by both builds of the analysis. On CPU
 * xprof's hlo_stats lists no op; our table of the host's XLA ops is ours, and `tpw profile` says so above it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { before, describe, it } from 'node:test';
import { freshProfileCli, profileBuilds, profileWasm, REAL, stepDifferences, type XprofStep } from '../helpers/profiles';

const CPU = path.join(REAL, 'cpu');
const captures = readdirSync(CPU).filter((f) => f.endsWith('.xplane.pb')).sort();

interface Expected {
  overview: Record<string, string>;
  hlo_stats: unknown[];
  steps: XprofStep[];
}

function expected(capture: string): Expected {
  return JSON.parse(readFileSync(path.join(CPU, capture.replace('.xplane.pb', '.expected.json')), 'utf8')) as Expected;
}

interface JsonOut { device: { hardware: string }; steps: { total_us: number }[]; ops: unknown[] }

/** The native `tpw profile FILE` with `args`: its stdout. */
function nativeProfile(file: string, args: string[], threads: string): string {
  const r = spawnSync(profileBuilds().native, ['profile', file, ...args], { encoding: 'utf8', env: { ...process.env, TPW_THREADS: threads } });
  assert.equal(r.status, 0, `${file}: ${r.stderr}`);
  return r.stdout;
}

describe('steps on XLA:CPU captures agree with xprof, on both builds', () => {
  const wasm = profileWasm();
  before(freshProfileCli);

  it('has captures from JAX, TensorFlow, torch_xla and the trainer, and xprof finds steps in four', () => {
    assert.deepEqual(captures.map((c) => c.split('-')[1]), ['jax', 'tf', 'tf', 'torch', 'trainer']);
    assert.equal(captures.filter((c) => expected(c).steps.length > 0).length, 4);
  });

  for (const capture of captures) {
    it(capture, () => {
      const file = path.join(CPU, capture);
      const want = expected(capture);
      const s = wasm.analyze(file);
      assert.deepEqual(stepDifferences(s.steps.map((st) => st.totalUs), want.steps), [], `${capture}, WebAssembly`);
      assert.equal(s.overview.stepSource, want.steps.length ? 'host' : 'none');
      for (const threads of ['1', '2']) {
        const out = JSON.parse(nativeProfile(file, ['--json', '--top', '0'], threads)) as JsonOut;
        assert.equal(out.device.hardware, 'CPU');
        assert.deepEqual(stepDifferences(out.steps.map((st) => st.total_us), want.steps), [], `${capture}, native, ${threads} thread(s)`);
      }
      // xprof's average, as its overview page prints it.
      const ms = s.steps.map((st) => st.totalUs / 1000);
      const avg = ms.length ? ms.reduce((a, x) => a + x, 0) / ms.length : 0;
      assert.equal(avg.toFixed(1), want.overview.steptime_ms_average);
      // No op in xprof's table on CPU: ours (the host's XLA ops) is said to be ours wherever it lists one.
      assert.equal(want.hlo_stats.length, 0);
      const text = nativeProfile(file, [], '1');
      assert.equal(text.includes("by our count (xprof's hlo_stats lists no op on CPU)"), s.ops.length > 0, text);
    });
  }

  it('finds no step where an annotation has no step root (Keras 3 marks its profiled batches with step_num alone)', () => {
    const s = wasm.analyze(path.join(CPU, 'cpu-tf-keras-fit.xplane.pb'));
    assert.deepEqual([s.steps.length, s.overview.stepSource], [0, 'none']);
    assert.match(s.notes.steps, /^No steps: /);
  });

  it('leaves out the first and the last of more than five steps, as xprof does (torch_xla: 8 annotated, 6 steps)', () => {
    const want = expected('cpu-torch-xla-steptrace.xplane.pb').steps.map((st) => st.step);
    assert.deepEqual(want, [1, 2, 3, 4, 5, 6].map((k) => `train_step ${k}`));
    assert.equal(wasm.analyze(path.join(CPU, 'cpu-torch-xla-steptrace.xplane.pb')).steps.length, 6);
  });
});
