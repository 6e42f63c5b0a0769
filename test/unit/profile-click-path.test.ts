/**
 * The run view's click on a capture not yet prefetched: what its speed rests on, asserted by what happens rather
 * than by how long it takes (BENCHMARKS.md `profiles-wasm` measures the time). The module is compiled once, off
 * the calling thread, and the calling thread's instance made once, both when the view opens (`ready()`), never on
 * a click; `ready()` has that instance analyze every form of the module's sample capture (its worker did the
 * same, many times), so that the code a real capture's analysis calls is compiled before the user clicks; and the
 * sample's forms take their steps from where real captures do (a TPU's Steps line, GPU kernels under the host's
 * annotations, the host's own annotations where there is no device).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { before, describe, it } from 'node:test';
import { ProfileParser } from '../../extension/src/core/profiles/parse';
import { ProfileWasm } from '../../extension/src/core/profiles/wasm-host';
import { profileBuilds, profileWasm, profileWorker, REAL } from '../helpers/profiles';

type Ctor = new (...args: never[]) => object;
interface WasmGlobal {
  Module: Ctor;
  Instance: Ctor;
  compile(bytes: Uint8Array): Promise<object>;
}

/** Counts the modules this thread's WebAssembly global compiles and the instances it makes (the worker has its own). */
class WasmCounts {
  /** Compiled on this thread (new WebAssembly.Module) and on V8's threads (WebAssembly.compile). */
  modules = 0;
  compiles = 0;
  instances = 0;
  private readonly wasm = (globalThis as unknown as { WebAssembly: WasmGlobal }).WebAssembly;
  private readonly saved = { Module: this.wasm.Module, Instance: this.wasm.Instance, compile: this.wasm.compile };

  install(): void {
    const count = (Base: Ctor, bump: () => void): Ctor =>
      class extends Base {
        constructor(...args: never[]) {
          super(...args);
          bump();
        }
      };
    this.wasm.Module = count(this.saved.Module, () => this.modules++);
    this.wasm.Instance = count(this.saved.Instance, () => this.instances++);
    const compile = this.saved.compile.bind(this.wasm);
    this.wasm.compile = (bytes) => {
      this.compiles++;
      return compile(bytes);
    };
  }

  get made(): { modules: number; compiles: number; instances: number } {
    return { modules: this.modules, compiles: this.compiles, instances: this.instances };
  }

  restore(): void {
    Object.assign(this.wasm, this.saved);
  }
}

describe('the run view click path', () => {
  const small = ['h200-jax-pallas', 'tpu-v6e-4-inference', 'jax-te-fused-attn'].map((n) => path.join(REAL, `${n}.xplane.pb`));
  let worker: string;
  before(() => {
    profileBuilds();
    worker = profileWorker();
  });

  it('compiles the module once, off this thread, and makes its instance once, when the view opens; nothing on a click', async () => {
    const forms = profileWasm().sampleForms;
    assert.ok(forms >= 3, `the sample has ${forms} forms`);
    const counts = new WasmCounts();
    // What this thread's instance analyzes, and the step source it found (the sample's forms differ in it).
    const analyzed: { file: string; stepSource: string }[] = [];
    const analyze = ProfileWasm.prototype.analyze;
    counts.install();
    ProfileWasm.prototype.analyze = function (this: ProfileWasm, file: string, timeline?: boolean) {
      const s = analyze.call(this, file, timeline);
      analyzed.push({ file, stepSource: s.overview.stepSource });
      return s;
    };
    const parser = new ProfileParser(worker);
    try {
      await parser.ready();
      assert.deepEqual(counts.made, { modules: 0, compiles: 1, instances: 1 });
      // Each form of the sample analyzed once, from a file (a click's path, file reads and all), removed after.
      assert.equal(analyzed.length, forms, JSON.stringify(analyzed));
      assert.deepEqual(analyzed.map((a) => a.stepSource).sort(), ['annotations', 'device', 'host']);
      for (const { file } of analyzed) assert.ok(file.startsWith(os.tmpdir()) && !existsSync(file), `${file} is a temporary file, gone`);
      analyzed.length = 0;
      const clicks = [...small, ...small];
      for (const file of clicks) {
        const s = await parser.analyze(file);
        assert.ok(s.eventCount > 0 && s.timeline.lines.length > 0, file);
      }
      // A prefetch runs on the worker, with the module it was handed: this thread makes nothing for it either.
      assert.ok((await parser.analyze(small[1], true)).ops.length > 0);
      assert.deepEqual({ ...counts.made, analyzed: analyzed.map((a) => a.file) }, { modules: 0, compiles: 1, instances: 1, analyzed: clicks });
      // A second ready() (the view opened again) neither compiles, nor instantiates, nor warms again.
      analyzed.length = 0;
      await parser.ready();
      assert.deepEqual({ ...counts.made, analyzed }, { modules: 0, compiles: 1, instances: 1, analyzed: [] });
    } finally {
      parser.dispose();
      ProfileWasm.prototype.analyze = analyze;
      counts.restore();
    }
  });

  it('compiles once when a capture is clicked before the view was readied, and not again when it is', async () => {
    const counts = new WasmCounts();
    counts.install();
    const parser = new ProfileParser(worker);
    try {
      assert.ok((await parser.analyze(small[0])).eventCount > 0);
      assert.deepEqual(counts.made, { modules: 1, compiles: 0, instances: 1 });
      await parser.ready();
      assert.ok((await parser.analyze(small[1])).eventCount > 0);
      assert.deepEqual(counts.made, { modules: 1, compiles: 0, instances: 1 });
    } finally {
      parser.dispose();
      counts.restore();
    }
  });

  it("warms on each form of the sample, answered as a file's analysis is, with steps from where real captures take them", () => {
    const wasm = profileWasm();
    const seen = [...Array(wasm.sampleForms).keys()].map((form) => {
      const s = wasm.warm(form);
      assert.ok(s.steps.length >= 6 && s.timeline.lines.length > 0, `form ${form}: ${s.steps.length} steps`);
      assert.ok(s.timeline.lines.every((l) => l.start.length > 0 && l.start[0] >= 0), `form ${form}: timeline starts are relative to t0`);
      return s.overview.stepSource;
    });
    assert.deepEqual(seen.sort(), ['annotations', 'device', 'host']);
    // Past the last form, the forms repeat (the worker counts its runs through them).
    assert.equal(wasm.warm(wasm.sampleForms).overview.stepSource, wasm.warm(0).overview.stepSource);
  });

});
