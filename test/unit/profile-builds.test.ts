/**
 * One analysis, two targets: the native `tpw profile` (dist/tpw-profile, which bin/tpw runs) and the WebAssembly
 * build (dist/profile.wasm, which `node bin/tpw.js profile`, a .vsix's `tpw profile` and the run view run) print
 * the same bytes, exit status included, on every real capture, their directory, and 200 damaged copies of them
 * (bytes flipped, cut short, inserted, zeroed; seeded, so a failure is found again). The native build splits big
 * captures over threads and maps the file; the WebAssembly build reads it through its host a window at a time.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { freshProfileCli, profileBuilds, profileWasm, REAL, REPO, TORCH } from '../helpers/profiles';

// The real XSpaces, and torch.profiler's Chrome trace that the trainer wrote on CPU.
const captures = [...readdirSync(REAL).filter((f) => f.endsWith('.xplane.pb')).map((f) => path.join(REAL, f)), path.join(TORCH, 'tiny-llama-cpu.pt.trace.json')];
const tmp = mkdtempSync(path.join(tmpdir(), 'tpw-builds-'));
before(freshProfileCli);
after(() => rmSync(tmp, { recursive: true, force: true }));

interface Answer { code: number | null; out: string; err: string }

function native(argv: string[]): Answer {
  const r = spawnSync(profileBuilds().native, ['profile', ...argv], { encoding: 'utf8', maxBuffer: 64 << 20 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

function nodeCli(argv: string[]): Answer {
  const r = spawnSync(process.execPath, [path.join(REPO, 'bin/tpw.js'), 'profile', ...argv], { encoding: 'utf8', maxBuffer: 64 << 20 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

test('the native and the WebAssembly tpw profile print the same bytes on every real capture and on their directory', () => {
  assert.equal(captures.length, 9);
  for (const target of [...captures, REAL, TORCH]) {
    for (const flags of [['--json', '--top', '0'], [], ['--top', '3']]) {
      const n = native([target, ...flags]);
      assert.equal(n.code, 0, `${target}: ${n.err}`);
      assert.deepEqual(nodeCli([target, ...flags]), n, `${target} ${flags.join(' ')}`);
    }
  }
});

/** A deterministic generator (so that a failing copy can be made again from its seed). */
function rng(seed: number): (n: number) => number {
  let s = seed >>> 0 || 1;
  return (n) => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s % n;
  };
}

/** Copy `seed` of a real capture, damaged one of four ways. */
function damaged(seed: number): { file: string; how: string } {
  const r = rng(seed * 2654435761);
  const src = captures[seed % captures.length];
  let b = Buffer.from(readFileSync(src));
  const at = r(b.length);
  let how: string;
  switch (seed % 4) {
    case 0: {
      const n = 1 + r(8);
      for (let k = 0; k < n; k++) b[r(b.length)] ^= 1 + r(255);
      how = `${n} bytes flipped`;
      break;
    }
    case 1:
      b = b.subarray(0, at);
      how = `cut at ${at}`;
      break;
    case 2: {
      const extra = Buffer.from(Array.from({ length: 1 + r(16) }, () => r(256)));
      b = Buffer.concat([b.subarray(0, at), extra, b.subarray(at)]);
      how = `${extra.length} bytes inserted at ${at}`;
      break;
    }
    default: {
      const n = 1 + r(64);
      b.fill(0, at, at + n);
      how = `${n} bytes zeroed at ${at}`;
    }
  }
  const file = path.join(tmp, `damaged-${seed}-${path.basename(src)}`);
  writeFileSync(file, b);
  return { file, how: `${path.basename(src)}, ${how}` };
}

test('the native and the WebAssembly tpw profile print the same bytes on 200 damaged copies of the real captures (XSpaces and a Chrome trace)', () => {
  // The WebAssembly build's command in this process: the module `node bin/tpw.js profile` runs (the test above
  // holds the two to each other), without a node start per copy.
  const wasm = profileWasm();
  let errors = 0;
  for (let seed = 1; seed <= 200; seed++) {
    const { file, how } = damaged(seed);
    for (const flags of seed % 2 ? [['--json', '--top', '0']] : [[], ['--top', '5']]) {
      const n = native([file, ...flags]);
      const w = wasm.cli([file, ...flags]);
      assert.ok(w, 'the command answers');
      assert.deepEqual({ code: w.code, out: w.out, err: w.err }, n, `seed ${seed} (${how}) ${flags.join(' ')}`);
      assert.ok(n.code === 0 || n.code === 1, `seed ${seed} (${how}): exit ${n.code}, ${n.err}`);
      if (n.code === 1) {
        errors++;
        // One line naming the file; where the fault is in the bytes, the byte.
        const why = [
          'the profile is truncated or corrupt: a field at byte \\d+ runs past the end of (its message|the file \\(\\d+ bytes\\))',
          'not a valid XSpace profile: .* at byte \\d+',
          'no planes in the profile: not an XSpace file, or an empty capture',
          'the profile file is empty',
          // torch.profiler's Chrome trace (JSON).
          'not valid Chrome trace JSON: .* at byte \\d+',
          'the trace is truncated: its JSON ends at byte \\d+ before .*',
          'not a Chrome trace: .*',
        ];
        assert.match(n.err, new RegExp(`^tpw: ${file.replace(/[.]/g, '\\.')}: (${why.join('|')})\\n$`), `seed ${seed} (${how})`);
      }
    }
  }
  // Most damage is noticed; some lands where any bytes are valid (a time, a name) and the capture still reads.
  assert.ok(errors > 100, `${errors} errors`);
});
