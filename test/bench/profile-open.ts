/**
 * One capture opened in the run view before its prefetch ended, in a process of its own: the parser made and
 * readied as the run view does when it opens (ProfileParser: its worker started and the analysis loaded), then
 * the click (`analyze(file)`, the user waiting), timed; or, with --prefetch, the background analysis that the run
 * view queues when it lists a capture (`analyze(file, true)`, always on the worker thread). Prints one JSON line;
 * the process's peak RSS (what profiles_open_bench.py reads from wait4) is the parser's memory with its worker.
 *
 *   node profile-open.js WORKER FILE [--prefetch]   (bundled by profiles_open_bench.py)
 *
 * Written against the parser's public surface only (constructor, analyze, dispose; `ready()`, or the older
 * parser's `warmUp()`), so that the same script, bundled against an older checkout, measures that checkout.
 */
import { ProfileParser } from '../../extension/src/core/profiles/parse';

type AnyParser = ProfileParser & { ready?(): Promise<void>; warmUp?(): void };

async function main(): Promise<void> {
  const [worker, file] = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  const background = process.argv.includes('--prefetch');
  const t0 = performance.now();
  const parser = new ProfileParser(worker) as AnyParser;
  // What the run view starts when it opens, done before the click (the user clicks after the view appeared).
  if (parser.ready) await parser.ready();
  else parser.warmUp?.();
  const readyMs = performance.now() - t0;
  const t = performance.now();
  const s = await parser.analyze(file, background);
  const ms = performance.now() - t;
  parser.dispose();
  const timelineEvents = s.timeline.lines.reduce((a, l) => a + l.start.length, 0);
  process.stdout.write(`${JSON.stringify({ readyMs, ms, events: s.eventCount, ops: s.ops.length, steps: s.steps.length, timelineEvents })}\n`);
}

void main();
