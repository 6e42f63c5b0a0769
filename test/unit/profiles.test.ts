/**
 * Profiles made by real XLA: the trainer runs on torch_xla (PJRT CPU) with profile_step set, and the
 * xplane.pb it writes is parsed on a worker thread; totals are checked against what the run did.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { buildSync } from 'esbuild';
import protobuf from 'protobufjs/minimal.js';
import { analyzeProfileFile, analyzeXSpace } from '../../extension/src/core/profiles/analyze';
import { exportChromeTraceFile, writeChromeTrace } from '../../extension/src/core/profiles/chrome-trace';
import { analyzeProfileFileParallel, chunkPlanes, defaultThreads } from '../../extension/src/core/profiles/parallel';
import { ProfileParser } from '../../extension/src/core/profiles/parse';
import { decodeXSpace, ProfileFormatError } from '../../extension/src/core/profiles/xplane';
import { healthFindings, parseQuantity, parseXlaMetricsReport } from '../../extension/src/core/profiles/xla-metrics';

const repo = path.resolve(__dirname, '../..');
const venvPython = path.join(process.env.TPW_VENV ?? path.join(process.env.HOME ?? '', '.cache/tpu-workbench/venv'), 'bin/python3');
const PROFILE_STEP = 5;
const PROFILE_STEPS = 3;

function findXplane(dir: string): string | undefined {
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile() && e.name.endsWith('.xplane.pb')) return path.join(e.parentPath, e.name);
  }
  return undefined;
}

describe('profiles from a real torch_xla run', () => {
  before(() => assert.ok(existsSync(venvPython), `the trainer's venv is missing at ${venvPython}: run bash scripts/setup.sh`));
  const out = mkdtempSync(path.join(tmpdir(), 'tpw-profile-'));
  // The worker runs from a bundle, as in the extension (dist/profile-worker.js): worker threads do not get tsx's loader.
  const workerJs = path.join(out, 'profile-worker.js');
  buildSync({ entryPoints: [path.join(repo, 'extension/src/core/profiles/worker.ts')], bundle: true, platform: 'node', format: 'cjs', target: 'node20', outfile: workerJs, logLevel: 'warning' });
  const parser = new ProfileParser(workerJs, -1);
  let xplane = '';

  before(async () => {
    await promisify(execFile)(venvPython, ['-m', 'tpu_trainer.train', 'model=tiny-llama', 'max_steps=9', `output_dir=${out}`, `profile_step=${PROFILE_STEP}`, `profile_steps=${PROFILE_STEPS}`], {
      cwd: out,
      env: { ...process.env, PYTHONPATH: path.join(repo, 'trainer'), PJRT_DEVICE: 'CPU' },
      timeout: 240_000,
    });
    xplane = findXplane(out) ?? '';
    assert.ok(xplane, 'the trainer wrote an xplane.pb');
  });
  after(() => parser.dispose());

  it('parses the capture off the main thread: steps, ops, timeline', async () => {
    const s = await parser.analyze(xplane);
    assert.equal(s.steps.length, PROFILE_STEPS, 'one step per profiled training step');
    for (const st of s.steps) {
      assert.ok(st.totalUs > 0 && st.executeUs > 0 && st.executeUs <= st.totalUs, JSON.stringify(st));
    }
    const names = new Set(s.ops.map((o) => o.name));
    assert.ok([...names].some((n) => /^dot(\.\d+)?$/.test(n)), 'matmuls (dot) of the model are in the op profile');
    // Each op of the step graph ran once per profiled step; once more when the previous step's program, dispatched
    // asynchronously, started after tracing did (its step is left out of the breakdown, its ops are still counted).
    // Categories come from the program's HLO (the /host:metadata plane), by XLA's rules: a dot is 'dot'.
    const dots = s.ops.filter((o) => o.category === 'dot');
    assert.ok(dots.length > 0 && dots.every((o) => o.count === PROFILE_STEPS || o.count === PROFILE_STEPS + 1), dots.map((o) => o.count).join());
    assert.ok(s.ops.every((o) => o.selfUs <= o.totalUs + 1e-6));
    assert.ok(s.planes.some((p) => p.name === '/host:CPU'));
    assert.equal(s.timeline.lines.reduce((a, l) => a + l.start.length, 0), s.eventCount);
    assert.ok(s.spanUs > 0);
  });

  it('exports Chrome trace JSON with every event', async () => {
    const file = path.join(out, 'trace.json');
    const n = await parser.exportChromeTrace(xplane, file);
    const trace = JSON.parse(readFileSync(file, 'utf8')) as { traceEvents: { ph: string; name: string }[] };
    assert.equal(trace.traceEvents.filter((e) => e.ph === 'X').length, n);
    assert.equal(n, decodeXSpace(readFileSync(xplane)).planes.reduce((a, p) => a + p.lines.reduce((b, l) => b + l.count, 0), 0));
    assert.ok(trace.traceEvents.some((e) => e.name === 'StepMarker'));
  });

  it('streams the capture in chunks to the same result as decoding it whole', () => {
    const whole = analyzeXSpace(decodeXSpace(readFileSync(xplane)));
    // 64 KiB reads: the capture (~0.5 MB) spans many, and its planes and lines straddle their boundaries.
    assert.deepEqual(analyzeProfileFile(xplane, { chunkSize: 64 << 10 }), whole);
    // Two captures back to back are one XSpace with twice the planes; a 1 MiB window splits the second one.
    const twice = path.join(out, 'twice.xplane.pb');
    writeFileSync(twice, Buffer.concat([readFileSync(xplane), readFileSync(xplane)]));
    const s = analyzeProfileFile(twice, { chunkSize: 1 << 20 });
    assert.equal(s.eventCount, 2 * whole.eventCount);
    assert.deepEqual(s.ops.map((o) => [o.name, o.count]).sort(), whole.ops.map((o) => [o.name, 2 * o.count]).sort());
  });

  it('splits a capture across two threads to the same result as one', async () => {
    const twice = path.join(out, 'twice.xplane.pb');
    writeFileSync(twice, Buffer.concat([readFileSync(xplane), readFileSync(xplane)]));
    assert.deepEqual(await analyzeProfileFileParallel(twice, workerJs, { minParallelBytes: 0, threads: 2 }), analyzeProfileFile(twice));
  });

  it('sums op times the same however the planes are split (a real GPU capture ×12 in 12 chunks on two threads)', async () => {
    // Per-chunk sums made µs and then added differed from one thread's in the last bits; now summed in ps first.
    const real = path.join(__dirname, '..', 'fixtures', 'profiles', 'real', 'jax-te-fused-attn.xplane.pb');
    const twelve = path.join(out, 'te-x12.xplane.pb');
    writeFileSync(twelve, Buffer.concat(Array.from({ length: 12 }, () => readFileSync(real))));
    const one = analyzeProfileFile(twelve);
    const split = await analyzeProfileFileParallel(twelve, workerJs, { minParallelBytes: 0, threads: 2, chunks: 12 });
    assert.deepEqual(split.ops, one.ops);
  });

  it('sums command-buffer kernel time the same however the planes are split (a real H200 capture ×12 in 12 chunks)', async () => {
    // unattributedKernels.selfUs was summed in µs per chunk, so its last digits followed the split; now in ps first.
    const real = path.join(__dirname, '..', 'fixtures', 'profiles', 'real', 'h200-jax-transformer.xplane.pb');
    const twelve = path.join(out, 'h200-x12.xplane.pb');
    writeFileSync(twelve, Buffer.concat(Array.from({ length: 12 }, () => readFileSync(real))));
    const one = analyzeProfileFile(twelve, { timeline: false });
    const split = await analyzeProfileFileParallel(twelve, workerJs, { minParallelBytes: 0, threads: 2, chunks: 12, timeline: false });
    assert.ok(one.unattributedKernels.count > 0);
    assert.deepEqual(split.unattributedKernels, one.unattributedKernels);
  });

  it('leaves the timeline out when asked (tpw profile), on one thread or two, and the rest is the same', async () => {
    const twice = path.join(out, 'twice.xplane.pb');
    writeFileSync(twice, Buffer.concat([readFileSync(xplane), readFileSync(xplane)]));
    const full = analyzeProfileFile(twice);
    assert.ok(full.timeline.lines.length > 0);
    for (const s of [analyzeProfileFile(twice, { timeline: false }), await analyzeProfileFileParallel(twice, workerJs, { minParallelBytes: 0, threads: 2, timeline: false })]) {
      assert.deepEqual(s.timeline, { names: [], lines: [] });
      assert.deepEqual(s.warnings, full.warnings, 'no warning about a timeline nobody asked for');
      assert.deepEqual({ ...s, timeline: full.timeline }, full);
    }
  });

  it('gives a clear error for truncated and corrupt files', async () => {
    const buf = readFileSync(xplane);
    const truncated = path.join(out, 'truncated.xplane.pb');
    writeFileSync(truncated, buf.subarray(0, Math.floor(buf.length / 2)));
    await assert.rejects(parser.analyze(truncated), (e: Error) => e instanceof ProfileFormatError && /truncated or corrupt/.test(e.message));
    assert.throws(() => decodeXSpace(Buffer.from('this is not a protobuf at all')), ProfileFormatError);
    assert.throws(() => decodeXSpace(new Uint8Array(0)), /empty/);
    await assert.rejects(parser.analyze(path.join(out, 'missing.xplane.pb')), /ENOENT/);
  });

  it('reads the metrics report the run wrote and names its health', () => {
    const report = parseXlaMetricsReport(readFileSync(path.join(out, 'xla_metrics.txt'), 'utf8'));
    assert.ok(report.counters.UncachedCompile >= 1);
    assert.ok(report.metrics.CompileTime.total > 0);
    const steps = readFileSync(path.join(out, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { step: number; compiles: number });
    const findings = healthFindings(report, steps);
    assert.match(findings[0].title, /No recompilation/);
  });
});

/** A small XSpace written with protobufjs's Writer, laid out as XLA writes it (lines before the metadata). */
function syntheticXSpace(): Uint8Array {
  const w = protobuf.Writer.create();
  const msg = (field: number, body: (w: protobuf.Writer) => void): void => { w.uint32((field << 3) | 2).fork(); body(w); w.ldelim(); };
  const num = (field: number, v: number): void => { w.uint32(field << 3).uint64(v); };
  const str = (field: number, v: string): void => { w.uint32((field << 3) | 2).string(v); };
  // Event metadata: 1 StepMarker, 2 ExecuteComputation, 3 dot.1, 4 call.2, 5 fusion.3. Stat metadata: 1 hlo_op,
  // 2 hlo_module, 3 flops, 4 _pt (not kept), 5 hlo_category, 10.. op names (ref values), 20 'loop fusion'.
  type Stat = [meta: number, kind: 'ref' | 'str' | 'num', value: number | string];
  const us = 1e6;
  const module: Stat = [2, 'str', 'SyncTensorsGraph.7'];
  const ops: [number, number, number, Stat[]][] = [];
  for (let k = 0; k < 3; k++) {
    const t = k * 100 * us;
    ops.push([4, t + 20 * us, 10 * us, [[1, 'ref', 11], module, [4, 'num', 99]]]);
    ops.push([3, t + 22 * us, 3 * us, [[1, 'ref', 10], module, [3, 'num', 1000]]]);
    ops.push([5, t + 40 * us, 2 * us, [[1, 'ref', 12], module]]);
  }
  const line = (id: number, name: string, events: [number, number, number, Stat[]][]): void => msg(3, () => {
    num(1, id); str(2, name); num(3, 1_000_000_000);
    for (const [meta, off, dur, stats] of events) {
      msg(4, () => {
        num(1, meta); num(2, off); num(3, dur);
        for (const [m, kind, v] of stats) msg(4, () => { num(1, m); if (kind === 'ref') num(7, Number(v)); else if (kind === 'str') str(5, String(v)); else num(3, Number(v)); });
      });
    }
  });
  msg(1, () => {
    num(1, 1);
    str(2, '/host:CPU');
    line(1, 'python3', [0, 1, 2].map((k) => [1, k * 100 * us, 90 * us, []]));
    // Out of start order, so the line has to be sorted.
    line(2, 'tf_XLAEigen', [...ops].reverse());
    line(3, 'tf_pjrt', [0, 1, 2].map((k) => [2, k * 100 * us + 10 * us, 5 * us, []]));
    const names = ['StepMarker', 'ExecuteComputation', 'dot.1', 'call.2', 'fusion.3'];
    names.forEach((n, k) => msg(4, () => {
      num(1, k + 1);
      msg(2, () => { num(1, k + 1); str(2, n); if (n === 'fusion.3') msg(5, () => { num(1, 5); num(7, 20); }); });
    }));
    const statNames: [number, string][] = [[1, 'hlo_op'], [2, 'hlo_module'], [3, 'flops'], [4, '_pt'], [5, 'hlo_category'], [10, 'dot.1'], [11, 'call.2'], [12, 'fusion.3'], [20, 'loop fusion']];
    for (const [id, n] of statNames) msg(5, () => { num(1, id); msg(2, () => { num(1, id); str(2, n); }); });
  });
  str(4, 'vm');
  return w.finish();
}

describe('streaming decoder', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tpw-stream-'));
  const buf = syntheticXSpace();
  const file = path.join(dir, 'synthetic.xplane.pb');
  writeFileSync(file, buf);
  const workerJs = path.join(dir, 'profile-worker.js');
  buildSync({ entryPoints: [path.join(repo, 'extension/src/core/profiles/worker.ts')], bundle: true, platform: 'node', format: 'cjs', target: 'node20', outfile: workerJs, logLevel: 'warning' });

  it('gives the same summary as decoding the whole file, for any read size', () => {
    const whole = analyzeXSpace(decodeXSpace(buf));
    assert.equal(whole.steps.length, 3);
    assert.deepEqual(whole.hosts, ['vm']);
    const call = whole.ops.find((o) => o.name === 'call.2');
    const dot = whole.ops.find((o) => o.name === 'dot.1');
    const fusion = whole.ops.find((o) => o.name === 'fusion.3');
    assert.ok(call && dot && fusion);
    assert.deepEqual([call.count, call.totalUs, call.selfUs], [3, 30, 21], 'self time leaves out the nested dot');
    assert.deepEqual([dot.flops, dot.module, fusion.category], [3000, 'SyncTensorsGraph.7', 'loop fusion']);
    // Reads smaller than a tag, than a line, than the plane, and bigger than the file: lines and the plane straddle reads.
    for (const chunkSize of [16, 37, 100, 256, buf.length - 1, 1 << 20]) {
      assert.deepEqual(analyzeProfileFile(file, { chunkSize }), whole, `chunk ${chunkSize}`);
    }
  });

  it('names the file and the byte offset when the file is truncated or corrupt', () => {
    for (const cut of [1, 7, Math.floor(buf.length / 2), buf.length - 3]) {
      const f = path.join(dir, `cut-${cut}.xplane.pb`);
      writeFileSync(f, buf.subarray(0, cut));
      assert.throws(() => analyzeProfileFile(f, { chunkSize: 64 }), (e: Error) => {
        assert.ok(e instanceof ProfileFormatError, String(e));
        assert.match(e.message, new RegExp(`^${f.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: .*truncated or corrupt.* byte \\d+`));
        return true;
      });
    }
    const bad = path.join(dir, 'bad.xplane.pb');
    writeFileSync(bad, Buffer.from('this is not a protobuf at all'));
    assert.throws(() => analyzeProfileFile(bad), ProfileFormatError);
    const empty = path.join(dir, 'empty.xplane.pb');
    writeFileSync(empty, '');
    assert.throws(() => analyzeProfileFile(empty), /empty/);
  });

  it('gives the same summary on two threads, and the same errors', async () => {
    // Three copies: three planes, split 1 + 2 (by bytes) between this thread and the helper.
    const three = path.join(dir, 'three.xplane.pb');
    writeFileSync(three, Buffer.concat([buf, buf, buf]));
    const one = analyzeProfileFile(three);
    assert.equal(one.planes.length, 3);
    assert.deepEqual(await analyzeProfileFileParallel(three, workerJs, { minParallelBytes: 0, threads: 2, chunkSize: 64 }), one);
    const cut = path.join(dir, 'three-cut.xplane.pb');
    writeFileSync(cut, Buffer.concat([buf, buf, buf]).subarray(0, 2 * buf.length + 40));
    await assert.rejects(analyzeProfileFileParallel(cut, workerJs, { minParallelBytes: 0, threads: 2 }), (e: Error) => e instanceof ProfileFormatError && e.message.startsWith(`${cut}: `) && /truncated or corrupt.*byte \d+/.test(e.message));
    // A bad wire type inside the last plane's first line: the helper thread meets it, and reports it as one thread would.
    const bad = Buffer.concat([buf, buf, buf]);
    const at = bad.lastIndexOf(Buffer.from('python3')) + 7;
    assert.equal(bad[at], 0x18, 'the timestamp_ns tag follows the line name');
    bad[at] = 0x0f; // field 1 (id, skipped) with wire type 7, which does not exist
    const badFile = path.join(dir, 'three-bad.xplane.pb');
    writeFileSync(badFile, bad);
    assert.throws(() => analyzeProfileFile(badFile), (e: Error) => e instanceof ProfileFormatError && e.message.startsWith(`${badFile}: not a valid XSpace profile`) && /at byte \d+/.test(e.message));
    const expected = (() => { try { analyzeProfileFile(badFile); } catch (e) { return (e as Error).message; } return ''; })();
    await assert.rejects(analyzeProfileFileParallel(badFile, workerJs, { minParallelBytes: 0, threads: 2 }), (e: Error) => e instanceof ProfileFormatError && e.message === expected);
  });

  it('exports the same Chrome trace streamed as from the decoded file', async () => {
    const n = exportChromeTraceFile(file, path.join(dir, 'a.json'), { chunkSize: 32 });
    assert.equal(await writeChromeTrace(decodeXSpace(buf), path.join(dir, 'b.json')), n);
    assert.equal(n, 15);
    assert.equal(readFileSync(path.join(dir, 'a.json'), 'utf8'), readFileSync(path.join(dir, 'b.json'), 'utf8'));
  });
});

describe('metrics report health', () => {
  it('parses durations', () => {
    assert.equal(parseQuantity('06s057ms494.266us'), 6 + 0.057 + 494.266e-6);
    assert.equal(parseQuantity('63.00'), 63);
  });

  it('names recompilation after step 2 and host syncs', () => {
    const text = ['Metric: CompileTime', '  TotalSamples: 5', '  Accumulator: 10s', 'Metric: TransferFromDeviceTime', '  TotalSamples: 40', '  Accumulator: 002ms',
      'Counter: UncachedCompile', '  Value: 5', 'Counter: MarkStep', '  Value: 10', 'Counter: aten::_local_scalar_dense', '  Value: 30', 'Counter: aten::nonzero', '  Value: 7'].join('\n');
    const f = healthFindings(parseXlaMetricsReport(text), [{ step: 1, compiles: 2 }, { step: 2, compiles: 2 }, { step: 5, compiles: 3 }, { step: 8, compiles: 5 }]);
    assert.equal(f[0].title, 'Recompiled 3 times after step 2');
    assert.match(f[0].detail, /step 5/);
    assert.match(f[1].title, /40 host syncs.*4\.0 per step/);
    assert.match(f[2].detail, /aten::nonzero \(7×\)/);
  });
});

describe('profile threads', () => {
  it('uses one thread below four cores, then half the cores, at most four', () => {
    assert.deepEqual([1, 2, 3, 4, 5, 6, 8, 16, 64].map((c) => defaultThreads(c)), [1, 1, 1, 2, 2, 3, 4, 4, 4]);
  });

  it('cuts the planes into runs of about equal bytes, each plane once and in order', () => {
    const planes = [10, 10, 10, 10, 50, 5, 5, 5, 5, 5, 5].map((n, index, a) => {
      const start = a.slice(0, index).reduce((x, y) => x + y, 0);
      return { index, start, end: start + n };
    });
    const chunks = chunkPlanes(planes, 4);
    assert.deepEqual(chunks.flat().map((p) => p.index), planes.map((p) => p.index));
    assert.deepEqual(chunks.map((c) => c.map((p) => p.index)), [[0, 1, 2], [3], [4], [5, 6, 7, 8, 9, 10]]);
    assert.deepEqual(chunkPlanes(planes, 1).map((c) => c.length), [11]);
    assert.equal(chunkPlanes(planes, 100).length, 11, 'never more chunks than planes');
  });
});

describe('profile chunks on several threads', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tpw-chunks-'));
  const buf = syntheticXSpace();
  const workerJs = path.join(dir, 'profile-worker.js');
  buildSync({ entryPoints: [path.join(repo, 'extension/src/core/profiles/worker.ts')], bundle: true, platform: 'node', format: 'cjs', target: 'node20', outfile: workerJs, logLevel: 'warning' });
  const twelve = path.join(dir, 'twelve.xplane.pb');
  writeFileSync(twelve, Buffer.concat(Array.from({ length: 12 }, () => buf)));

  it('merges twelve chunks taken by two or four threads into the one-thread summary', async () => {
    const one = analyzeProfileFile(twelve);
    assert.equal(one.planes.length, 12);
    for (const threads of [2, 4]) {
      for (const chunks of [2, 5, 12]) {
        for (const helperFirst of [false, true]) assert.deepEqual(await analyzeProfileFileParallel(twelve, workerJs, { minParallelBytes: 0, threads, chunks, helperFirst }), one, `${threads} threads, ${chunks} chunks`);
      }
    }
  });

  it('finishes the chunks of a helper thread that died holding them', async () => {
    const one = analyzeProfileFile(twelve);
    for (const threads of [2, 4]) assert.deepEqual(await analyzeProfileFileParallel(twelve, workerJs, { minParallelBytes: 0, threads, chunks: 12, helperDiesAfterClaim: true }), one);
    // And a helper that cannot start at all.
    assert.deepEqual(await analyzeProfileFileParallel(twelve, path.join(dir, 'no-such-worker.js'), { minParallelBytes: 0, threads: 2, chunks: 12 }), one);
  });

  it('reports the first corrupt place in file order, whichever thread met it', async () => {
    // Two bad lines, in planes 5 and 9: one thread reading front to back stops at plane 5's.
    const bad = Buffer.concat(Array.from({ length: 12 }, () => buf));
    const marks: number[] = [];
    for (let at = bad.indexOf('python3'); at >= 0; at = bad.indexOf('python3', at + 1)) marks.push(at + 7);
    assert.equal(marks.length, 12);
    for (const k of [5, 9]) {
      assert.equal(bad[marks[k]], 0x18);
      bad[marks[k]] = 0x0f;
    }
    const badFile = path.join(dir, 'twelve-bad.xplane.pb');
    writeFileSync(badFile, bad);
    const expected = (() => { try { analyzeProfileFile(badFile); } catch (e) { return (e as Error).message; } return ''; })();
    const at = Number(/at byte (\d+)/.exec(expected)?.[1]);
    assert.ok(at >= 5 * buf.length && at < 6 * buf.length, `${expected}: not in the sixth copy`);
    // Two chunks, the helper first: it takes planes 0-5 and meets plane 5's error, while this thread takes 6-11
    // and meets plane 9's; then twelve chunks.
    for (const chunks of [2, 12]) {
      await assert.rejects(analyzeProfileFileParallel(badFile, workerJs, { minParallelBytes: 0, threads: 2, chunks, helperFirst: true }), (e: Error) => e instanceof ProfileFormatError && e.message === expected);
    }
  });
});
