/**
 * The run view's click on a capture not yet prefetched: what its speed rests on, asserted by what happens rather
 * than by how long it takes (BENCHMARKS.md `profiles-wasm` measures the time). The module is compiled once and its
 * calling-thread instance made once, both when the view opens (`ready()`), never on a click; `ready()` has that
 * instance analyze every form of the module's sample capture (its worker did the same, many times), so that the
 * code a real capture's analysis calls is compiled before the user clicks; and the sample's forms take their steps
 * from where real captures do (a TPU's Steps line, GPU kernels under the host's annotations, the host's dispatches).
 */
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { before, describe, it } from 'node:test';
import { ProfileParser } from '../../extension/src/core/profiles/parse';
import { ProfileWasm } from '../../extension/src/core/profiles/wasm-host';
import { profileBuilds, profileWasm, profileWorker, REAL } from '../helpers/profiles';

type Ctor = new (...args: never[]) => object;

/** Counts what this thread's WebAssembly global constructs (the parser's worker has a global of its own). */
class WasmCounts {
  modules = 0;
  instances = 0;
  private readonly wasm = (globalThis as unknown as { WebAssembly: Record<'Module' | 'Instance', Ctor> }).WebAssembly;
  private readonly saved = { Module: this.wasm.Module, Instance: this.wasm.Instance };

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

  it('compiles the module and makes its instance once, when the view opens, and nothing on a click', async () => {
    const forms = profileWasm().sampleForms;
    assert.ok(forms >= 3, `the sample has ${forms} forms`);
    const counts = new WasmCounts();
    const warmed: number[] = [];
    const warm = ProfileWasm.prototype.warm;
    counts.install();
    ProfileWasm.prototype.warm = function (this: ProfileWasm, form?: number) {
      warmed.push(form ?? 0);
      return warm.call(this, form);
    };
    const parser = new ProfileParser(worker);
    try {
      await parser.ready();
      assert.deepEqual({ modules: counts.modules, instances: counts.instances }, { modules: 1, instances: 1 });
      assert.deepEqual([...new Set(warmed)].sort(), [...Array(forms).keys()], 'ready() ran every form of the sample on this thread');
      warmed.length = 0;
      for (const file of [...small, ...small]) {
        const s = await parser.analyze(file);
        assert.ok(s.eventCount > 0 && s.timeline.lines.length > 0, file);
      }
      // A prefetch runs on the worker, with the module it was handed: this thread makes nothing for it either.
      assert.ok((await parser.analyze(small[1], true)).ops.length > 0);
      assert.deepEqual({ modules: counts.modules, instances: counts.instances, warmed }, { modules: 1, instances: 1, warmed: [] });
      // A second ready() (the view opened again) neither compiles, nor instantiates, nor warms again.
      await parser.ready();
      assert.deepEqual({ modules: counts.modules, instances: counts.instances, warmed }, { modules: 1, instances: 1, warmed: [] });
    } finally {
      parser.dispose();
      ProfileWasm.prototype.warm = warm;
      counts.restore();
    }
  });

  it("warms on each form of the sample, answered as a file's analysis is, with steps from where real captures take them", () => {
    const wasm = profileWasm();
    const seen = [...Array(wasm.sampleForms).keys()].map((form) => {
      const s = wasm.warm(form);
      assert.ok(s.ops.length >= 40 && s.steps.length >= 7 && s.timeline.lines.length > 0, `form ${form}: ${s.ops.length} ops, ${s.steps.length} steps`);
      assert.ok(s.timeline.lines.every((l) => l.start.length > 0 && l.start[0] >= 0), `form ${form}: timeline starts are relative to t0`);
      return s.overview.stepSource;
    });
    assert.deepEqual(seen.sort(), ['annotations', 'device', 'host']);
    // Past the last form, the forms repeat (the worker counts its runs through them).
    assert.equal(wasm.warm(wasm.sampleForms).overview.stepSource, wasm.warm(0).overview.stepSource);
  });

});
