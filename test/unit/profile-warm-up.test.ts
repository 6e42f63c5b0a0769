/**
 * The decoder's warm-up (core/profiles/warm-up.ts): its synthetic capture reads as the capture it describes
 * (TPU ops by their metadata, device clock and 64-bit program ids; GPU kernels by their hlo_op stats; device
 * steps; GPU steps from step annotations), so warming runs the paths real captures take; and warming leaves
 * nothing behind.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { analyzeProfileFile } from '../../extension/src/core/profiles/analyze';
import { ProfileParser } from '../../extension/src/core/profiles/parse';
import { DecoderWarmUp, warmUpCapture, warmUpStepsCapture } from '../../extension/src/core/profiles/warm-up';

const warmDirs = (): string[] => readdirSync(tmpdir()).filter((d) => d.startsWith('tpw-warm-')).sort();

/** The summary of a synthetic capture, written to a file of its own as the warm-up writes it. */
function analyzeWritten(capture: Uint8Array): ReturnType<typeof analyzeProfileFile> {
  const dir = mkdtempSync(path.join(tmpdir(), 'tpw-warmtest-'));
  try {
    const file = path.join(dir, 'w.xplane.pb');
    writeFileSync(file, capture);
    return analyzeProfileFile(file);
  } finally {
    rmSync(dir, { recursive: true });
  }
}

describe('decoder warm-up', () => {
  it('writes a capture with TPU ops, GPU kernels and device steps that the analysis reads', () => {
    const s = analyzeWritten(warmUpCapture());
    assert.deepEqual(s.warnings, []);
    assert.equal(s.overview.hardware, 'TPU');
    assert.equal(s.overview.deviceType, 'TPU v6 lite');
    assert.equal(s.overview.stepSource, 'device');
    assert.ok(s.steps.length > 0, 'steps from the Steps line');
    // TPU ops: eight fusions, each a row of its program; odd ones of a program id past 2^53, kept exactly.
    const gpuPrograms = ['7', '8', '9'];
    const tpu = s.ops.filter((o) => /^fusion\.\d$/.test(o.name) && !gpuPrograms.includes(o.program));
    assert.equal(tpu.length, 8);
    assert.ok(tpu.some((o) => o.program === String(2n ** 60n)), tpu.map((o) => o.program).join());
    assert.ok(tpu.every((o) => o.category === 'loop fusion' && o.selfUs <= o.totalUs));
    assert.ok(tpu.some((o) => o.selfUs < o.totalUs), 'ops with a nested op have less self time than total');
    // GPU kernels: the ops named by their hlo_op stats (refs and plain strings), of programs 7 to 9.
    const gpu = s.ops.filter((o) => gpuPrograms.includes(o.program));
    assert.deepEqual([...new Set(gpu.map((o) => o.name))].sort(), ['convolution.2', 'fusion.1']);
    // Program 7's HLO (the /host:metadata plane) makes its fusion.1 an input fusion; the others are named so.
    assert.equal(gpu.find((o) => o.program === '7' && o.name === 'fusion.1')?.category, 'input fusion');
    assert.equal(gpu.find((o) => o.program === '8' && o.name === 'fusion.1')?.category, 'loop fusion');
    assert.ok(s.eventCount > 3000, String(s.eventCount));
  });

  it('writes a GPU capture whose steps come from its step annotations (the grouping path)', () => {
    const s = analyzeWritten(warmUpStepsCapture());
    assert.deepEqual(s.warnings, []);
    assert.equal(s.overview.hardware, 'GPU');
    assert.equal(s.overview.stepSource, 'annotations');
    assert.equal(s.steps.length, 16);
    // Each step runs from its first kernel to its consumer thread's, 155 µs later.
    assert.ok(s.steps.every((st) => st.totalUs >= 155), s.steps.map((st) => st.totalUs).join());
    assert.deepEqual(s.ops.map((o) => o.name).sort(), ['convolution.2', 'fusion.1']);
  });

  it('removes its temporary file when done, and when stopped early', async () => {
    const before = warmDirs();
    const w = new DecoderWarmUp(3);
    assert.equal(w.pass(), true);
    assert.equal(warmDirs().length, before.length + 1, 'the capture is written on the first pass');
    assert.equal(w.pass(), true);
    assert.equal(w.pass(), false);
    assert.deepEqual(warmDirs(), before);

    const parser = new ProfileParser(path.join(tmpdir(), 'no-worker.js'));
    parser.warmUpSoon(0);
    await new Promise((r) => setTimeout(r, 20));
    // A capture opened while warming stops the warm-up.
    const dir = mkdtempSync(path.join(tmpdir(), 'tpw-warmtest-'));
    const file = path.join(dir, 'w.xplane.pb');
    writeFileSync(file, warmUpCapture());
    assert.ok((await parser.analyze(file)).ops.length > 0);
    rmSync(dir, { recursive: true });
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(warmDirs(), before);
    parser.dispose();
  });
});
