/**
 * Analysis of a large capture on several threads. The planes are cut into runs of about equal bytes ("chunks");
 * this thread and its helper threads each take the next unclaimed chunk (one shared atomic counter) until none
 * is left, so a thread that gets less CPU simply takes fewer chunks. Each chunk has its own partial summary, and
 * the partials are merged in chunk order (mergePartials), so the result is the one a single thread gives.
 *
 * Why: decoding is CPU-bound (a 200 MB capture is ~2.4 M events) and the profile worker already runs off the
 * extension host; free cores cut the wait. Less than one would hope, though: every helper is a fresh V8 isolate
 * that starts and compiles the decoder on its own, and most of its share of a 200 MB file runs before its code
 * is optimized (on a 16-core machine, four threads took 0.75× the time of one; BENCHMARKS.md). An earlier
 * version split the planes in two fixed halves and had to guess whether a core was free: a wrong guess left the
 * whole run waiting for the slower half. Small files stay on one thread, as a helper costs tens of milliseconds
 * to start. */
import { availableParallelism } from 'node:os';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { Analyzer, mergePartials, TIMELINE_MAX_EVENTS, timelineBuffers, type AnalyzeOptions, type PartialSummary, type ProfileSummary } from './analyze';
import { ColumnSlabs } from './slabs';
import { PlaneFile, scanXSpaceFile, type PlaneRange } from './stream';
import { ProfileFormatError } from './xplane';

/** Below this file size a helper's start-up costs more than it saves. */
const MIN_PARALLEL_BYTES = 16 << 20;
/** Chunks per thread, about: enough for the faster thread to make up for a slower one, few enough to merge cheaply. */
const CHUNKS_PER_THREAD = 12;

export interface ParallelOptions extends AnalyzeOptions {
  /** Files smaller than this are analyzed on the calling thread (tests set 0 to exercise the split). */
  minParallelBytes?: number;
  /** This thread and threads - 1 helpers; default defaultThreads(). */
  threads?: number;
  /** Number of chunks (default about 12 per thread); tests use it to exercise the claiming. */
  chunks?: number;
  /** Tests: this thread starts taking chunks only once a helper has taken one (else a small file is all done here first). */
  helperFirst?: boolean;
  /** Tests: the first helper thread dies right after taking its first chunk (implies helperFirst). */
  helperDiesAfterClaim?: boolean;
}

interface ShardRequest { file: string; chunks: PlaneRange[][]; claims: SharedArrayBuffer; chunkSize?: number; timeline?: boolean; grouping: boolean; dieAfterClaim?: boolean }
/** A chunk's partial summary, or why it could not be read. */
type ChunkFailure = { index: number; error: string; format: boolean };
type ChunkResult = { index: number; part: PartialSummary } | ChunkFailure;
const isFailure = (r: ChunkResult): r is ChunkFailure => 'error' in r;
type ShardReply = { results: ChunkResult[] };

/**
 * Slots of the shared claims array: the next chunk to take; 1 once a chunk failed (nobody takes more); events
 * analyzed so far, so that chunks stop collecting timeline columns once the capture is past the timeline's limit.
 */
const NEXT = 0;
const FAILED = 1;
const EVENTS = 2;
const CLAIM_SLOTS = 3;

/** Every buffer of the partials, once (their timeline columns share slabs). */
function transferList(parts: PartialSummary[]): ArrayBuffer[] {
  return [...new Set(parts.flatMap((p) => [p.ops.acc.buffer as ArrayBuffer, p.busy.buffer as ArrayBuffer, p.hostBusy.buffer as ArrayBuffer, ...timelineBuffers(p.timeline ?? [])]))];
}

/** Runs of consecutive planes of about `size / n` bytes each (a plane bigger than that is a run of its own). */
export function chunkPlanes(planes: readonly PlaneRange[], n: number): PlaneRange[][] {
  const total = planes.reduce((a, p) => a + p.end - p.start, 0);
  const target = total / Math.max(1, n);
  const out: PlaneRange[][] = [];
  let cur: PlaneRange[] = [];
  let bytes = 0;
  for (const p of planes) {
    if (cur.length && bytes + (p.end - p.start) / 2 > target) {
      out.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(p);
    bytes += p.end - p.start;
  }
  if (cur.length) out.push(cur);
  return out;
}

/**
 * Takes chunks until none is left (or one failed anywhere), analyzing each into its own partial. Chunks are
 * claimed in increasing order, so when chunk k fails every chunk before it was already taken by someone.
 */
function drain(file: string, chunks: PlaneRange[][], claims: Int32Array, opts: AnalyzeOptions, dieAfterClaim = false): ChunkResult[] {
  const results: ChunkResult[] = [];
  let f: PlaneFile | undefined;
  const slabs = new ColumnSlabs();
  try {
    for (;;) {
      if (Atomics.load(claims, FAILED)) break;
      const index = Atomics.add(claims, NEXT, 1);
      if (index >= chunks.length) break;
      Atomics.notify(claims, NEXT);
      if (dieAfterClaim) process.exit(70);
      try {
        f ??= new PlaneFile(file, opts);
        const a = new Analyzer(opts.timeline !== false && Atomics.load(claims, EVENTS) <= TIMELINE_MAX_EVENTS, slabs);
        f.stream(chunks[index], a);
        const part = a.partial();
        // Capped, so the int32 cannot wrap: past the limit is all that matters.
        if (Atomics.load(claims, EVENTS) <= TIMELINE_MAX_EVENTS) Atomics.add(claims, EVENTS, Math.min(part.eventCount, TIMELINE_MAX_EVENTS + 1));
        results.push({ index, part });
      } catch (e) {
        results.push({ index, error: e instanceof Error ? e.message : String(e), format: e instanceof ProfileFormatError });
        Atomics.store(claims, FAILED, 1);
        break;
      }
    }
  } finally {
    f?.close();
  }
  return results;
}

/**
 * Threads for a large capture on a machine with `cores` cores: one below four cores, then half the cores, at most
 * MAX_THREADS. Half, because the extension host and VS Code's renderer keep running; below four, because on a
 * 2-vCPU VM the two vCPUs are one core's hyperthreads, and a second thread there made each thread ~1.7× slower
 * per byte, plus its start and its own JIT warm-up: the same run took longer on two threads than on one.
 */
export function defaultThreads(cores = availableParallelism()): number {
  return cores < 4 ? 1 : Math.min(MAX_THREADS, Math.floor(cores / 2));
}

const MAX_THREADS = 4;

/**
 * Whether a capture of `size` bytes is split over `threads` threads (given it has two planes or more): the rule
 * analyzeProfileFileParallel applies.
 */
function splitsOverThreads(size: number, threads = defaultThreads(), minBytes = MIN_PARALLEL_BYTES): boolean {
  return threads >= 2 && size >= minBytes;
}

/**
 * Analyzes `file`, on several threads when it is large. `workerFile` is the bundled worker script that calls
 * runShardIfHelper() first (dist/profile-worker.js); the helper threads run it.
 */
export async function analyzeProfileFileParallel(file: string, workerFile: string, opts: ParallelOptions = {}): Promise<ProfileSummary> {
  const scan = scanXSpaceFile(file);
  const { planes, info, size } = scan;
  // Step grouping's stats are read only where a plane has step roots (stream.ts, scanXSpaceFile).
  const grouping = scan.stepRoots && opts.grouping !== false;
  const threads = Math.max(1, Math.floor(opts.threads ?? defaultThreads()));
  const parallel = splitsOverThreads(size, threads, opts.minParallelBytes) && planes.length >= 2;
  const chunks = parallel ? chunkPlanes(planes, opts.chunks ?? CHUNKS_PER_THREAD * threads) : [planes];
  const claims = new Int32Array(new SharedArrayBuffer(4 * CLAIM_SLOTS));
  const helpers: Worker[] = [];
  const theirs: Promise<ChunkResult[]>[] = [];
  const nHelpers = parallel ? Math.min(threads, chunks.length) - 1 : 0;
  for (let k = 0; k < nHelpers; k++) {
    // Only the first helper is made to die, in the tests that ask for it.
    const request: ShardRequest = { file, chunks, claims: claims.buffer as SharedArrayBuffer, chunkSize: opts.chunkSize, timeline: opts.timeline, grouping, dieAfterClaim: k === 0 && opts.helperDiesAfterClaim };
    const h = new Worker(workerFile, { workerData: { tpwProfileShard: request } });
    helpers.push(h);
    const done = new Promise<ChunkResult[]>((resolve, reject) => {
      h.once('message', (m: ShardReply) => resolve(m.results));
      h.once('error', reject);
      h.once('exit', (code) => reject(new Error(`profile helper thread exited (code ${code})`)));
    });
    // A helper that fails is not an error: its chunks are finished here.
    theirs.push(done.catch(() => []));
  }
  try {
    if (helpers.length && (opts.helperFirst || opts.helperDiesAfterClaim)) Atomics.wait(claims, NEXT, 0, 20_000);
    const results = drain(file, chunks, claims, { ...opts, grouping });
    for (const r of await Promise.all(theirs)) results.push(...r);
    // A helper that died took chunks with it: those before any failure are done here (nothing after one is read).
    const firstFailed = Math.min(chunks.length, ...results.filter(isFailure).map((r) => r.index));
    const seen = new Set(results.map((r) => r.index));
    const lost = chunks.map((_, k) => k).filter((k) => k < firstFailed && !seen.has(k));
    if (lost.length) results.push(...drainOnly(file, chunks, lost, Atomics.load(claims, EVENTS), { ...opts, grouping }));
    results.sort((a, b) => a.index - b.index);
    // The first failure in file order is the one to report, as one thread reading front to back would.
    const failed = results.find(isFailure);
    if (failed) throw failed.format ? new ProfileFormatError(failed.error) : new Error(failed.error);
    const parts = results.map((r) => (r as Exclude<ChunkResult, ChunkFailure>).part);
    return mergePartials(parts, info, opts.timeline !== false);
  } finally {
    for (const h of helpers) void h.terminate();
  }
}

/** Analyzes the given chunks here, in order, stopping at the first failure. */
function drainOnly(file: string, chunks: PlaneRange[][], which: number[], eventsSoFar: number, opts: AnalyzeOptions): ChunkResult[] {
  const claims = new Int32Array(CLAIM_SLOTS);
  claims[EVENTS] = eventsSoFar;
  const sub = which.map((k) => chunks[k]);
  return drain(file, sub, claims, opts).map((r) => ({ ...r, index: which[r.index] }));
}

/** In a helper thread started by analyzeProfileFileParallel: take chunks, answer, and return true. */
export function runShardIfHelper(): boolean {
  const req = (workerData as { tpwProfileShard?: ShardRequest } | null)?.tpwProfileShard;
  if (isMainThread || !req || !parentPort) return false;
  const results = drain(req.file, req.chunks, new Int32Array(req.claims), { chunkSize: req.chunkSize, timeline: req.timeline, grouping: req.grouping }, req.dieAfterClaim);
  const transfer = transferList(results.flatMap((r) => ('part' in r ? [r.part] : [])));
  parentPort.postMessage({ results } satisfies ShardReply, transfer);
  return true;
}
