/**
 * The size of dist/profile.wasm's functions that an XSpace's analysis runs. V8 optimizes a WebAssembly function
 * once it ran enough (the profile worker's warm-up runs them all), and each compilation holds memory in proportion
 * to its function's size, several at once on node's threads: with the plane decoder at 33 KB, the line collector
 * at 26 KB and the summary at 21 KB, the worker's peak memory was ~20 MB higher than with no function over 18 KB
 * (BENCHMARKS.md, `profiles-wasm`; native/profile/src/lib.rs, "Function size"). The release build keeps the
 * functions' names (the "name" section), which is what tells them apart here.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { profileBuilds } from '../helpers/profiles';

/** Above this many bytes of code, a function of the analysis is to be split (kept out of line). */
const MAX_FUNCTION_BYTES = 18_000;

/** The crate's modules an XSpace's analysis runs (not torch traces, the CLI's text, or the warm-up's sample). */
const ANALYSIS = /^_ZN\d+tpw_profile\d+(decode|analyze|op_stats|devices|step_groups|steps|timeline|intervals|windows|view)|^_ZN\d+_\$LT\$tpw_profile\.\.analyze/;

/** Each function's (mangled) name and its body's size in bytes, from the code and "name" sections. */
function functionSizes(wasm: Buffer): Map<string, number> {
  let at = 8;
  const leb = (): number => {
    let v = 0;
    for (let shift = 0; ; shift += 7) {
      const b = wasm[at++];
      v += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return v;
    }
  };
  const skip = (): void => {
    const len = leb();
    at += len;
  };
  let imported = 0;
  const sizes: number[] = [];
  const names = new Map<number, string>();
  while (at < wasm.length) {
    const id = wasm[at++];
    const end = leb() + at;
    if (id === 2) {
      for (let n = leb(); n > 0; n--) {
        skip();
        skip();
        const kind = wasm[at++];
        assert.equal(kind, 0, 'the module imports functions only');
        leb();
        imported++;
      }
    } else if (id === 10) {
      for (let n = leb(); n > 0; n--) {
        const len = leb();
        sizes.push(len);
        at += len;
      }
    } else if (id === 0) {
      const nameLen = leb();
      const section = wasm.toString('utf8', at, at + nameLen);
      at += nameLen;
      while (section === 'name' && at < end) {
        const sub = wasm[at++];
        const subEnd = leb() + at;
        if (sub === 1) {
          for (let n = leb(); n > 0; n--) {
            const index = leb();
            const len = leb();
            names.set(index, wasm.toString('utf8', at, at + len));
            at += len;
          }
        }
        at = subEnd;
      }
    }
    at = end;
  }
  return new Map(sizes.map((size, k) => [names.get(k + imported) ?? `#${k + imported}`, size]));
}

test('no function of the WebAssembly build that an XSpace analysis runs is over 18 KB, and the per-line steps are functions of their own', () => {
  const sizes = functionSizes(readFileSync(profileBuilds().wasm));
  const analysis = [...sizes].filter(([name]) => ANALYSIS.test(name));
  assert.ok(analysis.length > 20, `the build's function names are missing (${analysis.length} of the analysis found)`);
  const big = analysis.filter(([, size]) => size > MAX_FUNCTION_BYTES).map(([name, size]) => `${name}: ${size} bytes`);
  assert.deepEqual(big, [], 'keep these functions small (native/profile/src/lib.rs, "Function size")');
  for (const step of ['4line11decode_line', '4meta17decode_event_meta', '7OpStats4line', '14GroupCollector4line', '11DeviceStats4line']) {
    assert.ok([...sizes.keys()].some((name) => name.includes(step)), `${step} was inlined into its caller`);
  }
});
