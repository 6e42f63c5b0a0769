/**
 * The run view's path for one capture, in one process as the extension host keeps it: ProfileParser.analyze
 * (on this thread up to INLINE_MAX_BYTES, on the worker bundle above), first call (cold JIT) and the median of
 * further calls. Prints one JSON line. Used by profiles_real_bench.py.
 *
 *   node --import tsx test/bench/profile-warm.ts FILE [REPS]
 */
import * as path from 'node:path';
import { ProfileParser } from '../../extension/src/core/profiles/parse';

async function main(): Promise<void> {
  const [file, repsArg] = process.argv.slice(2);
  const reps = Number(repsArg ?? 5);
  const parser = new ProfileParser(path.resolve(__dirname, '../../dist/profile-worker.js'));
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
  process.stdout.write(`${JSON.stringify({ firstMs: times[0], warmMedianMs: warm[Math.floor(warm.length / 2)] ?? NaN, ops })}\n`);
}

void main();
