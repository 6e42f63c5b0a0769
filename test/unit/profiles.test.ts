/**
 * Profiles made by real XLA: the trainer runs on torch_xla (PJRT CPU) with profile_step set, and the
 * xplane.pb it writes is analyzed on the parser's worker thread; totals are checked against what the run did.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { ProfileParser } from '../../extension/src/core/profiles/parse';
import { ProfileFormatError } from '../../extension/src/core/profiles/wasm-host';
import { healthFindings, parseQuantity, parseXlaMetricsReport } from '../../extension/src/core/profiles/xla-metrics';
import { profileBuilds, profileWasm, profileWorker } from '../helpers/profiles';
import { XLA_VENV, xlaTrainerCommand } from '../helpers/trainer-venv';

const PROFILE_STEP = 5;
const PROFILE_STEPS = 3;

function findXplane(dir: string): string | undefined {
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile() && e.name.endsWith('.xplane.pb')) return path.join(e.parentPath, e.name);
  }
  return undefined;
}

describe('profiles from a real torch_xla run', () => {
  before(() => assert.ok(existsSync(XLA_VENV), `the torch_xla venv is missing at ${XLA_VENV}: run bash scripts/setup.sh --test`));
  const out = mkdtempSync(path.join(tmpdir(), 'tpw-profile-'));
  // Every capture on the worker thread, as a prefetch runs (the run view analyzes small ones it waits for inline).
  const parser = new ProfileParser(profileWorker(), { inlineMaxBytes: -1 });
  let xplane = '';

  before(async () => {
    const run = xlaTrainerCommand(['model=tiny-llama', 'max_steps=9', `output_dir=${out}`, `profile_step=${PROFILE_STEP}`, `profile_steps=${PROFILE_STEPS}`]);
    await promisify(execFile)(run.file, run.args, { cwd: out, env: run.env, timeout: 240_000 });
    xplane = findXplane(out) ?? '';
    assert.ok(xplane, 'the trainer wrote an xplane.pb');
  });
  after(() => parser.dispose());

  it('parses the capture off the main thread: steps, ops, timeline', async () => {
    const s = await parser.analyze(xplane);
    assert.equal(s.steps.length, PROFILE_STEPS, 'one step per profiled training step');
    for (const st of s.steps) {
      assert.ok(st.totalUs > 0 && st.executeUs >= 0 && st.executeUs <= st.totalUs, JSON.stringify(st));
    }
    // One step's window may hold none of its device work when the machine is busy (torch_xla dispatches a step's
    // program asynchronously, and it can run in the next step's window), but the profiled steps together do.
    assert.ok(s.steps.reduce((a, st) => a + st.executeUs, 0) > 0, JSON.stringify(s.steps));
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
    const trace = JSON.parse(readFileSync(file, 'utf8')) as { traceEvents: { ph: string; name: string; ts: number }[] };
    const events = trace.traceEvents.filter((e) => e.ph === 'X');
    assert.equal(events.length, n);
    assert.equal(n, (await parser.analyze(xplane)).eventCount);
    assert.ok(trace.traceEvents.some((e) => e.name === 'StepMarker'));
    assert.equal(Math.min(...events.map((e) => e.ts)), 0, 'times from the capture\'s first event');
  });

  it('gives the same summary on the worker, on the calling thread and by the native build', async () => {
    const worker = await parser.analyze(xplane);
    const inline = profileWasm().analyze(xplane);
    assert.deepEqual(inline, worker);
    // The native `tpw profile` reads the capture mapped whole, and, at twice its size, on two threads.
    const twice = path.join(out, 'twice.xplane.pb');
    writeFileSync(twice, Buffer.concat([readFileSync(xplane), readFileSync(xplane)]));
    const json = (env: NodeJS.ProcessEnv, file: string) => JSON.parse(execFileSync(profileBuilds().native, ['profile', file, '--json', '--top', '0'], { env: { ...process.env, ...env }, encoding: 'utf8' })) as { ops: { name: string; count: number }[] };
    assert.deepEqual(json({ TPW_THREADS: '1' }, xplane).ops.map((o) => [o.name, o.count]), worker.ops.map((o) => [o.name, o.count]));
    assert.deepEqual(json({ TPW_THREADS: '2' }, twice), json({ TPW_THREADS: '1' }, twice));
    assert.deepEqual(json({ TPW_THREADS: '1' }, twice).ops.map((o) => [o.name, o.count]).sort(), worker.ops.map((o) => [o.name, 2 * o.count]).sort());
  });

  it('gives a clear error for truncated and corrupt files', async () => {
    const buf = readFileSync(xplane);
    const truncated = path.join(out, 'truncated.xplane.pb');
    writeFileSync(truncated, buf.subarray(0, Math.floor(buf.length / 2)));
    await assert.rejects(parser.analyze(truncated), (e: Error) => e instanceof ProfileFormatError && e.message.startsWith(`${truncated}: the profile is truncated or corrupt: a field at byte `));
    const text = path.join(out, 'text.xplane.pb');
    writeFileSync(text, 'this is not a protobuf at all');
    await assert.rejects(parser.analyze(text), (e: Error) => e instanceof ProfileFormatError && e.message.startsWith(`${text}: not a valid XSpace profile: invalid field tag `));
    const empty = path.join(out, 'empty.xplane.pb');
    writeFileSync(empty, '');
    await assert.rejects(parser.analyze(empty), (e: Error) => e instanceof ProfileFormatError && e.message === `${empty}: the profile file is empty`);
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

