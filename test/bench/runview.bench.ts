/**
 * Run view benchmarks, in headless Chromium on the built bundle (dist/webview.js):
 *  1. Logs: 64 workers × 20,000 lines posted as the host posts them (batches of 500 per worker) → time to
 *     first paint (first batch on screen), total ingest, scroll frame time at 1.28 M lines, JS heap.
 *     Peer, same run: the pane the run view replaced (one <pre> per worker, text appended), on the same lines.
 *  2. Profiles: stream + analyze a large xplane.pb (a real torch_xla capture's XSpace repeated to ~BENCH_XPLANE_MB)
 *     through ProfileParser and the bundled profile worker, as the extension does; time and peak RSS of the whole
 *     process; peer: xprof's trace-viewer JSON conversion of the same file, alternating with ours
 *     (BENCH_PROFILE_REPS each), when an xprof venv is given (BENCH_XPROF_PYTHON).
 *     BENCH_ONLY=profile runs this part alone.
 * Writes test-artifacts/bench/runview.json.
 */
/// <reference lib="dom" />
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, writeFileSync, statSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { buildSync } from 'esbuild';
import type { Page } from 'playwright-core';
import { shJoin } from '../../extension/src/core/ssh/quote';
import { openHarness, repo } from '../webview/harness';

const WORKERS = 64;
const LINES = 20_000;
const BATCH = 500;

async function logs(page: Page, naive: boolean): Promise<Record<string, number>> {
  return page.evaluate(async ({ WORKERS, LINES, BATCH, naive }) => {
    // A realistic mix: one trainer step line in 20, the rest library chatter of typical length.
    const line = (w: number, i: number): string => i % 20 === 0
      ? `step ${i} loss ${(5 - i / 1e4).toFixed(4)} lr 3.000e-04 grad_norm 2.1 step_time_s 0.0805 tokens_per_s 12727 mfu - mem 924.5MiB`
      : `I1122 04:00:${String(i % 60).padStart(2, '0')}.${i} ${1000 + w} dataloader.py:${i % 400}] worker ${w} batch ${i} shard ${i % 7} fetched in ${(i % 13) / 10} ms`;
    const frame = (): Promise<number> => new Promise((r) => requestAnimationFrame(() => r(performance.now())));
    const pres = new Map<number, HTMLPreElement>();
    const peer = (w: number, lines: string[]): void => {
      let pre = pres.get(w);
      if (!pre) {
        pre = document.createElement('pre');
        document.body.append(pre);
        pres.set(w, pre);
      }
      pre.append(document.createTextNode(lines.join('\n') + '\n'));
    };
    if (naive) {
      document.body.replaceChildren();
      document.body.style.overflow = 'auto';
    }
    const t0 = performance.now();
    let firstPaint = 0;
    for (let start = 0; start < LINES; start += BATCH) {
      for (let w = 0; w < WORKERS; w++) {
        const lines = Array.from({ length: BATCH }, (_, k) => line(w, start + k));
        if (naive) peer(w, lines);
        else window.postMessage({ type: 'logLines', worker: w, lines }, '*');
      }
      // Let the page handle the batch and paint, as it would between IPC messages.
      const painted = await frame();
      if (!firstPaint) firstPaint = painted - t0;
    }
    await frame();
    const ingest = (await frame()) - t0;
    const scroller = (naive ? document.scrollingElement : document.querySelector('.log-scroller')) as HTMLElement;
    // Frame cost = the synchronous work a scroll causes: our render() of the rows on screen, or for the peer
    // the style and layout the browser does for the scrolled <pre> (forced with a layout read).
    const view = (window as unknown as { tpwRunView?: { logs: { setFollow(on: boolean): void; render(): void } } }).tpwRunView?.logs;
    view?.setFollow(false);
    const frames: number[] = [];
    for (let k = 0; k < 120; k++) {
      const f0 = performance.now();
      scroller.scrollTop = (scroller.scrollHeight * ((k * 37) % 120)) / 120;
      if (naive) void document.body.getBoundingClientRect().height;
      else view?.render();
      void scroller.firstElementChild?.getBoundingClientRect();
      frames.push(performance.now() - f0);
      await frame();
    }
    frames.sort((a, b) => a - b);
    const mem = (performance as unknown as { memory?: { usedJSHeapSize: number } }).memory?.usedJSHeapSize ?? 0;
    return { firstPaintMs: firstPaint, ingestMs: ingest, frameP50Ms: frames[60], frameP95Ms: frames[114], heapMB: mem / 2 ** 20, domNodes: document.getElementsByTagName('*').length };
  }, { WORKERS, LINES, BATCH, naive });
}

async function main(): Promise<void> {
  // BENCH_ONLY=profile: the profile part alone (the logs part takes minutes: its peer ingests for 5 of them).
  if (process.env.BENCH_ONLY === 'profile') {
    const profile = profileBench();
    mkdirSync(path.join(repo, 'test-artifacts/bench'), { recursive: true });
    writeFileSync(path.join(repo, 'test-artifacts/bench/runview-profile.json'), JSON.stringify({ profile }, null, 2));
    return;
  }
  execFileSync('node', ['scripts/build.mjs'], { cwd: repo, stdio: 'inherit' });
  const results: Record<string, Record<string, number>> = {};
  for (const variant of ['run view', 'naive <pre> pane (peer)']) {
    const { browser, page } = await openHarness();
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('HeapProfiler.enable');
    // tsx compiles with keepNames: the evaluated function calls __name(), which the page must define.
    await page.evaluate('globalThis.__name = (f) => f');
    results[variant] = await logs(page, variant.startsWith('naive'));
    await cdp.send('HeapProfiler.collectGarbage');
    const { usedSize } = await cdp.send('Runtime.getHeapUsage');
    results[variant].heapAfterGcMB = usedSize / 2 ** 20;
    results[variant].chromiumRssMB = treeRssMB(process.pid);
    await browser.close();
  }
  console.log(`\n### Logs: ${WORKERS} workers × ${LINES} lines (${(WORKERS * LINES).toLocaleString()} lines), headless Chromium\n`);
  const keys = ['firstPaintMs', 'ingestMs', 'frameP50Ms', 'frameP95Ms', 'heapAfterGcMB', 'chromiumRssMB', 'domNodes'];
  console.log(`| variant | ${keys.join(' | ')} |\n|---|${keys.map(() => '---').join('|')}|`);
  for (const [v, r] of Object.entries(results)) console.log(`| ${v} | ${keys.map((k) => r[k].toFixed(k === 'domNodes' ? 0 : 1)).join(' | ')} |`);
  const [ours, peer] = Object.values(results);
  console.log(`| ratio ours / peer | ${keys.map((k) => (ours[k] / peer[k]).toFixed(3)).join(' | ')} |`);

  const profile = profileBench();
  mkdirSync(path.join(repo, 'test-artifacts/bench'), { recursive: true });
  writeFileSync(path.join(repo, 'test-artifacts/bench/runview.json'), JSON.stringify({ logs: results, profile }, null, 2));
}

/** Large-file parse: a capture from the trainer (BENCH_XPLANE, or the newest under /tmp), repeated. */
function profileBench(): Record<string, number> | undefined {
  const src = process.env.BENCH_XPLANE ?? findNewest(tmpdir());
  if (!src) {
    console.log('\n(no xplane.pb to repeat: set BENCH_XPLANE; profile bench skipped)');
    return undefined;
  }
  const mb = Number(process.env.BENCH_XPLANE_MB ?? 200);
  const big = path.join(tmpdir(), `tpw-bench-${mb}mb.xplane.pb`);
  if (!existsSync(big)) {
    // Repeated top-level fields of a message concatenate: N copies of an XSpace is one XSpace with N× the planes.
    const one = readFileSync(src);
    const n = Math.max(1, Math.round((mb * 1e6) / one.length));
    writeFileSync(big, Buffer.concat(Array.from({ length: n }, () => one)));
  }
  // Ours runs as the extension runs it: ProfileParser.analyze → the bundled profile worker (dist/profile-worker.js
  // is this same esbuild bundle) running the analysis (dist/profile.wasm), which reads the file a window at a time.
  // Plain node, no tsx: its on-the-fly TypeScript compile is a dev-only cost.
  const dir = path.join(tmpdir(), 'tpw-bench-profile');
  const workerJs = path.join(dir, 'profile-worker.js');
  const script = path.join(dir, 'drive.js');
  const bundle = { bundle: true, platform: 'node', format: 'cjs', target: 'node20', logLevel: 'warning' } as const;
  buildSync({ ...bundle, entryPoints: [path.join(repo, 'extension/src/core/profiles/worker.ts')], outfile: workerJs });
  buildSync({
    ...bundle,
    stdin: {
      contents: `import { ProfileParser } from './extension/src/core/profiles/parse';
const parser = new ProfileParser(process.argv[2], { wasmFile: process.argv[4] });
const t = performance.now();
void parser.analyze(process.argv[3]).then((s) => {
  console.log(JSON.stringify({ ms: performance.now() - t, events: s.eventCount, ops: s.ops.length, steps: s.steps.length, timelineLines: s.timeline.lines.length }));
  parser.dispose();
});`,
      resolveDir: repo, loader: 'ts', sourcefile: 'bench-profile.ts',
    },
    outfile: script,
  });
  const py = process.env.BENCH_XPROF_PYTHON;
  const withPeer = py !== undefined && existsSync(py);
  const conv = `import sys\nfrom xprof.convert import raw_to_tool_data as r\nd,_=r.xspace_to_tool_data([sys.argv[1]],'trace_viewer',{'use_saved_result': False})\nprint(len(d))`;
  // Ours and the peer alternate, BENCH_PROFILE_REPS times each, so that both see the same load (this machine is
  // shared): profile_pairs.py times each process (wall, peak RSS) and prints every rep, the medians and the
  // median of the per-rep ratios. The same script runs on machines without node_modules (BENCHMARKS.md).
  const reps = Number(process.env.BENCH_PROFILE_REPS ?? 3);
  const out = path.join(repo, 'test-artifacts/bench/runview-profile.json');
  mkdirSync(path.dirname(out), { recursive: true });
  const cmds = [`ours=${shJoin(['node', script, workerJs, big, path.join(repo, 'dist/profile.wasm')])}`];
  if (withPeer) cmds.push(`xprof=${shJoin([py, '-c', conv, big])}`);
  const fileMB = statSync(big).size / 1e6;
  console.log(`\n### Profiles: stream + analyze ${fileMB.toFixed(0)} MB xplane.pb\n`);
  if (!withPeer) console.log('(xprof not run: set BENCH_XPROF_PYTHON to a python with xprof)\n');
  const table = execFileSync('python3', [path.join(repo, 'test/bench/profile_pairs.py'), '--reps', String(reps), '--json', out, ...cmds.flatMap((c) => ['--cmd', c])], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  console.log(table);
  const r = JSON.parse(readFileSync(out, 'utf8')) as { samples: Record<string, { out: string }[]>; medians: Record<string, { wallMs: number; maxRssMB: number }>; ratios: Record<string, { time: number; memory: number }> };
  const events = (JSON.parse(/\{.*\}/.exec(r.samples.ours[0].out)?.[0] ?? '{}') as { events?: number }).events ?? 0;
  console.log(`${events.toLocaleString()} events (the capture repeated to ${fileMB.toFixed(0)} MB)`);
  const res: Record<string, number> = { fileMB, events, reps, oursWallMs: r.medians.ours.wallMs, oursMaxRssMB: r.medians.ours.maxRssMB };
  if (r.medians.xprof) {
    res.peerWallMs = r.medians.xprof.wallMs;
    res.peerMaxRssMB = r.medians.xprof.maxRssMB;
    res.timeRatioMedian = r.ratios.xprof.time;
    res.memoryRatioMedian = r.ratios.xprof.memory;
  }
  return res;
}

/** RSS of every process below `pid` (the browser and its renderers), from /proc. */
function treeRssMB(pid: number): number {
  const children = new Map<number, number[]>();
  const rss = new Map<number, number>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ppid = Number(f[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(d)]);
      rss.set(Number(d), Number(f[21]) * 4096);
    } catch {
      // exited meanwhile
    }
  }
  let total = 0;
  const walk = (p: number): void => {
    for (const c of children.get(p) ?? []) {
      total += rss.get(c) ?? 0;
      walk(c);
    }
  };
  walk(pid);
  return total / 2 ** 20;
}

function findNewest(dir: string): string | undefined {
  let best: { f: string; t: number } | undefined;
  const walk = (d: string, depth: number): void => {
    if (depth > 7) return;
    let entries;
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = path.join(d, e.name);
      if (e.isDirectory() && (depth > 0 || e.name.startsWith('tpw-'))) walk(p, depth + 1);
      else if (e.isFile() && e.name.endsWith('.xplane.pb') && !e.name.startsWith('tpw-bench')) {
        const t = statSync(p).mtimeMs;
        if (!best || t > best.t) best = { f: p, t };
      }
    }
  };
  walk(dir, 0);
  return best?.f;
}

void main();
