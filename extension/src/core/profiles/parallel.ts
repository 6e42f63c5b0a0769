/**
 * Analysis of a large capture on two threads: the planes are split in two runs of about equal bytes, a helper
 * thread streams the second run while this thread streams the first, and the two partial summaries are merged
 * in plane order (mergePartials), so the result is the one a single thread gives.
 *
 * Why: decoding is CPU-bound (a 200 MB capture is ~2 M events) and the profile worker already runs off the
 * extension host; a second core cuts the wait when the machine has one free. Small files stay on one thread,
 * as a helper costs tens of milliseconds to start. Machines with more than two cores always use two threads;
 * a 2-core machine only while its 1-minute load leaves a core free: on a shared 2-core VM under load two threads
 * were slower than one (1.35–1.78 s against 1.07–1.52 s for a 200 MB capture, and 45 MB more), while on the
 * same VM idle they were faster (median 1.04 s against 1.32 s over 14 runs each).
 */
import { availableParallelism, loadavg } from 'node:os';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { Analyzer, mergePartials, type PartialSummary, type ProfileSummary } from './analyze';
import { scanXSpaceFile, streamPlanes, type PlaneRange, type StreamOptions } from './stream';
import { ProfileFormatError } from './xplane';

/** Below this file size the helper's start-up costs more than it saves. */
const MIN_PARALLEL_BYTES = 16 << 20;

export interface ParallelOptions extends StreamOptions {
  /** Files smaller than this are analyzed on the calling thread (tests set 0 to exercise the split). */
  minParallelBytes?: number;
  /** 1 or 2; default 2 when the machine has more than two cores. */
  threads?: number;
}

interface ShardRequest { file: string; planes: PlaneRange[]; chunkSize?: number }
type ShardReply = { ok: true; part: PartialSummary } | { ok: false; error: string; format: boolean };

function analyzePlanes(file: string, planes: PlaneRange[], opts: StreamOptions): PartialSummary {
  const a = new Analyzer();
  streamPlanes(file, planes, a, opts);
  return a.partial();
}

function transferList(p: PartialSummary): ArrayBuffer[] {
  const out = [p.rowAcc.buffer, p.busy.buffer] as ArrayBuffer[];
  for (const l of p.timeline ?? []) out.push(l.start.buffer as ArrayBuffer, l.dur.buffer as ArrayBuffer, l.name_.buffer as ArrayBuffer, l.depth.buffer as ArrayBuffer);
  return out;
}

/**
 * Analyzes `file`, on two threads when it is large. `workerFile` is the bundled worker script that calls
 * runShardIfHelper() first (dist/profile-worker.js); the helper thread runs it.
 */
/** Two threads when a second core is free: more than two cores, or two with a 1-minute load under one. */
export function defaultThreads(cores = availableParallelism(), load1m = loadavg()[0]): 1 | 2 {
  if (cores > 2) return 2;
  return cores === 2 && load1m < 1 ? 2 : 1;
}

export async function analyzeProfileFileParallel(file: string, workerFile: string, opts: ParallelOptions = {}): Promise<ProfileSummary> {
  const { planes, info, size } = scanXSpaceFile(file);
  const threads = opts.threads ?? defaultThreads();
  if (threads < 2 || size < (opts.minParallelBytes ?? MIN_PARALLEL_BYTES) || planes.length < 2) {
    return mergePartials([analyzePlanes(file, planes, opts)], info);
  }
  // The first run of planes up to half the bytes stays here; the rest goes to the helper.
  let k = 1;
  for (let bytes = planes[0].end - planes[0].start; k < planes.length - 1 && bytes + planes[k].end - planes[k].start <= size / 2; k++) {
    bytes += planes[k].end - planes[k].start;
  }
  const helper = new Worker(workerFile, { workerData: { tpwProfileShard: { file, planes: planes.slice(k), chunkSize: opts.chunkSize } satisfies ShardRequest } });
  const theirs = new Promise<PartialSummary>((resolve, reject) => {
    helper.once('message', (m: ShardReply) => (m.ok ? resolve(m.part) : reject(m.format ? new ProfileFormatError(m.error) : new Error(m.error))));
    helper.once('error', reject);
    helper.once('exit', (code) => reject(new Error(`profile helper thread exited (code ${code})`)));
  });
  try {
    const mine = analyzePlanes(file, planes.slice(0, k), opts);
    return mergePartials([mine, await theirs], info);
  } catch (e) {
    // An error in the first planes comes first in the file: it is the one to report.
    void theirs.catch(() => undefined);
    throw e;
  } finally {
    void helper.terminate();
  }
}

/** In a helper thread started by analyzeProfileFileParallel: analyze its planes, answer, and return true. */
export function runShardIfHelper(): boolean {
  const req = (workerData as { tpwProfileShard?: ShardRequest } | null)?.tpwProfileShard;
  if (isMainThread || !req || !parentPort) return false;
  let reply: ShardReply;
  let transfer: ArrayBuffer[] = [];
  try {
    const part = analyzePlanes(req.file, req.planes, { chunkSize: req.chunkSize });
    reply = { ok: true, part };
    transfer = transferList(part);
  } catch (e) {
    reply = { ok: false, error: e instanceof Error ? e.message : String(e), format: e instanceof ProfileFormatError };
  }
  parentPort.postMessage(reply, transfer);
  return true;
}
