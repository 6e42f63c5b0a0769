/**
 * The run view's path for one capture, in one process as the extension host keeps it: ProfileParser.analyze
 * (on this thread up to INLINE_MAX_BYTES, on the worker bundle above), first call and the median of further
 * calls. With --warm-up, the parser's warm-up (what the run view starts when it opens) runs first, timed on its
 * own, so the first call is the first capture opened in a run view that had warmed up. Prints one JSON line.
 * Used by profiles_real_bench.py.
 *
 *   node --import tsx test/bench/profile-warm.ts FILE [REPS] [--warm-up]
 *
 * profiles_real_bench.py runs it bundled by esbuild as the extension is (tsx compiles each module on its own, and
 * its cross-module bindings are slower than a bundle's); TPW_PROFILE_WORKER then names dist/profile-worker.js.
 */
import * as path from 'node:path';
import { ProfileParser } from '../../extension/src/core/profiles/parse';

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const warmUp = args.includes('--warm-up');
  const [file, repsArg] = args.filter((a) => a !== '--warm-up');
  const reps = Number(repsArg ?? 5);
  const parser = new ProfileParser(process.env.TPW_PROFILE_WORKER ?? path.resolve(__dirname, '../../dist/profile-worker.js'));
  let warmUpMs = 0;
  if (warmUp) {
    const t = performance.now();
    parser.warmUp();
    warmUpMs = performance.now() - t;
  }
  const times: number[] = [];
  let ops = 0;
  for (let k = 0; k <= reps; k++) {
    const t = performance.now();
    const s = await parser.analyze(file);
    times.push(performance.now() - t);
    ops = s.ops.length;
  }
  parser.dispose();
  const warm = times.slice(1).sort((a, b) => a - b);
  process.stdout.write(`${JSON.stringify({ warmUpMs, firstMs: times[0], warmMedianMs: warm[Math.floor(warm.length / 2)] ?? NaN, ops })}\n`);
}

void main();
