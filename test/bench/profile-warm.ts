/**
 * The run view's path for one capture, in one process as the extension host keeps it: ProfileParser.analyze
 * (the WebAssembly analysis: on this thread up to INLINE_MAX_BYTES, on the worker bundle above), first call and
 * the median of further calls. With --warm-up, the parser is readied first (what the run view starts when it
 * opens: the module compiled, the worker started with it), timed on its own, so the first call is the first
 * capture opened in a run view that had opened a moment before. With --prefetched, what the run view does when it
 * lists a capture (core/profiles/prefetch.ts): the capture is analyzed in the background (on the worker thread),
 * and then opened: the open is timed (a lookup), and so is the open plus a structured clone of the message the
 * panel posts (about what handing it to the webview copies). Prints one JSON line. Used by profiles_real_bench.py.
 *
 *   node --import tsx test/bench/profile-warm.ts FILE [REPS] [--warm-up | --prefetched]
 *
 * profiles_real_bench.py runs it bundled by esbuild as the extension is (tsx compiles each module on its own, and
 * its cross-module bindings are slower than a bundle's); TPW_PROFILE_WORKER then names dist/profile-worker.js.
 */
import { statSync } from 'node:fs';
import * as path from 'node:path';
import { ProfileParser } from '../../extension/src/core/profiles/parse';
import { CaptureAnalyses, captureKey, type CaptureJob } from '../../extension/src/core/profiles/prefetch';

/** Listed, analyzed in the background, then opened, as in the run view: how long the click waits. */
async function prefetched(parser: ProfileParser, file: string): Promise<void> {
  const analyses = new CaptureAnalyses((f, background) => parser.analyze(f, background));
  // The panel makes the job on each open: a stat, so that a rewritten file is not served from the cache.
  const job = (): CaptureJob => {
    const st = statSync(file);
    return { key: captureKey({ where: 'local', path: file, bytes: st.size, mtimeMs: st.mtimeMs }), bytes: st.size, file: () => Promise.resolve(file) };
  };
  const listed = performance.now();
  analyses.prefetch(job());
  await analyses.whenIdle();
  const prefetchMs = performance.now() - listed;
  const t = performance.now();
  const opened = await analyses.open(job());
  const openMs = performance.now() - t;
  structuredClone({ type: 'profile', id: 'c1', summary: opened.summary, prefetched: opened.prefetched });
  const postMs = performance.now() - t;
  parser.dispose();
  process.stdout.write(`${JSON.stringify({ prefetchMs, openMs, postMs, analyses: analyses.analyses, prefetched: opened.prefetched, ops: opened.summary.ops.length })}\n`);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const warmUp = args.includes('--warm-up');
  const [file, repsArg] = args.filter((a) => !a.startsWith('--'));
  const reps = Number(repsArg ?? 5);
  const parser = new ProfileParser(process.env.TPW_PROFILE_WORKER ?? path.resolve(__dirname, '../../dist/profile-worker.js'));
  if (args.includes('--prefetched')) return prefetched(parser, file);
  let warmUpMs = 0;
  if (warmUp) {
    const t = performance.now();
    await parser.ready();
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
