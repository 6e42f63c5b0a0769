/**
 * The profile analysis as the tests run it: both builds of native/profile made fresh (cargo rebuilds what changed:
 * a no-op takes a second), and the worker the run view's parser starts, bundled from its source.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { buildSync } from 'esbuild';
import { ProfileWasm, compileProfileWasm, type WasmModule } from '../../extension/src/core/profiles/wasm-host';
import { buildAll, ensureFreshBundle, REPO } from './fresh-bundle';
// @ts-expect-error: a plain .mjs build script, typed by its use here.
import { buildNativeProfile, NATIVE_PROFILE, PROFILE_WASM } from '../../scripts/build-native.mjs';

export { REPO };
export const REAL = path.join(REPO, 'test/fixtures/profiles/real');
/** torch.profiler's Chrome traces, made by the trainer (test/fixtures/profiles/torch/SOURCE.md). */
export const TORCH = path.join(REPO, 'test/fixtures/profiles/torch');

let built = false;

/** dist/tpw-profile and dist/profile.wasm, built from the crate as it is now. */
export function profileBuilds(): { native: string; wasm: string } {
  if (!built) (buildNativeProfile as () => void)();
  built = true;
  return { native: NATIVE_PROFILE as string, wasm: PROFILE_WASM as string };
}

let module: WasmModule | undefined;

/** A fresh instance of the WebAssembly build (the module compiled once per test process). */
export function profileWasm(): ProfileWasm {
  module ??= compileProfileWasm(profileBuilds().wasm);
  return new ProfileWasm(module);
}

/** dist/profile-worker.js's source bundled (worker threads do not get tsx's loader), in a fresh folder. */
export function profileWorker(): string {
  profileBuilds();
  const out = path.join(mkdtempSync(path.join(tmpdir(), 'tpw-profile-worker-')), 'profile-worker.js');
  buildSync({ entryPoints: [path.join(REPO, 'extension/src/core/profiles/worker.ts')], bundle: true, platform: 'node', format: 'cjs', target: 'node20', outfile: out, logLevel: 'warning' });
  return out;
}

/** dist/profile-cli.js (what `node bin/tpw.js profile` loads) no older than its sources, and both builds fresh. */
export async function freshProfileCli(): Promise<void> {
  profileBuilds();
  const entry = path.join(REPO, 'extension/src/cli/profile-main.ts');
  await ensureFreshBundle({ entry, outfile: path.join(REPO, 'dist/profile-cli.js'), build: buildAll });
}

/** A step as xprof's input_pipeline_analyzer lists it (make-expected.py's `steps`): its name, its time in ms. */
export interface XprofStep { step: string; ms: number }

/** Step times (µs, ours) that differ from xprof's by more than a nanosecond, in words (empty when they agree). */
export function stepDifferences(totalUs: number[], want: XprofStep[]): string[] {
  if (totalUs.length !== want.length) return [`${totalUs.length} steps, xprof ${want.length} (${want.map((s) => s.step).join(', ')})`];
  return want.flatMap((w, k) => (Math.abs(totalUs[k] / 1000 - w.ms) > 1e-6 ? [`${w.step}: ${totalUs[k] / 1000} ms, xprof ${w.ms}`] : []));
}
