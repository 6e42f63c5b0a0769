/**
 * Parses profiles on a worker thread. The extension host is single-threaded and shared by every extension:
 * decoding a 200 MB capture on it would freeze the editor for seconds.
 */
import { statSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { analyzeProfileFile, type ProfileSummary } from './analyze';
import { DecoderWarmUp } from './warm-up';
import { ProfileFormatError } from './xplane';

/**
 * Captures up to this size are analyzed on the calling thread: the streaming decoder reads them in tens of
 * milliseconds, less than starting a worker thread costs (real captures are mostly 0.1 to a few MB). Not more: the
 * extension host is shared by every extension, and the first analysis (JIT-cold) runs 2–5× slower than later ones.
 */
export const INLINE_MAX_BYTES = 4 << 20;

type Request = { op: 'analyze'; file: string } | { op: 'export'; file: string; out: string };
export type WorkerRequest = Request & { id: number };
export type WorkerReply =
  | { id: number; ok: true; summary?: ProfileSummary; events?: number }
  | { id: number; ok: false; error: string };

/** The streaming decoder's errors already start with the file's path; fs errors name it too, but not first. */
function named(file: string, error: string): string {
  return error.startsWith(`${file}:`) ? error : `${file}: ${error}`;
}

export class ProfileParser {
  private worker: Worker | undefined;
  private next = 1;
  private readonly pending = new Map<number, { resolve(r: WorkerReply): void; reject(e: Error): void }>();
  /** Whether this thread's decoder has run (a capture, or the warm-up), or is warming. */
  private warm = false;
  private warming: { w: DecoderWarmUp; timer: NodeJS.Timeout } | undefined;

  /**
   * @param workerFile the built worker (dist/profile-worker.js), or worker.ts under tsx in tests.
   * @param inlineMaxBytes captures up to this size skip the worker (tests set -1 to exercise it).
   */
  constructor(private readonly workerFile: string, private readonly inlineMaxBytes = INLINE_MAX_BYTES) {}

  /**
   * Warms this thread's decoder (warm-up.ts) once, starting `delayMs` from now, one pass per turn of the event
   * loop, unless a capture is analyzed first (that warms it as well). The run view calls it when it opens, so
   * that the first capture opened in it runs on warm code.
   */
  warmUpSoon(delayMs = 250): void {
    if (this.warm) return;
    this.warm = true;
    const w = new DecoderWarmUp();
    const next = (ms: number): void => {
      const timer = setTimeout(() => { if (w.pass()) next(0); else this.warming = undefined; }, ms);
      // An idle extension host or CLI must not be kept alive by it.
      timer.unref();
      this.warming = { w, timer };
    };
    next(delayMs);
  }

  /** Warms this thread's decoder now, all passes (once; does nothing once warm). */
  warmUp(): void {
    if (this.warm) return;
    this.warm = true;
    const w = new DecoderWarmUp();
    while (w.pass());
  }

  private stopWarmUp(): void {
    this.warm = true;
    if (!this.warming) return;
    clearTimeout(this.warming.timer);
    this.warming.w.dispose();
    this.warming = undefined;
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(this.workerFile);
    w.on('message', (reply: WorkerReply) => {
      const p = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      if (this.pending.size === 0) w.unref();
      p?.resolve(reply);
    });
    const fail = (e: Error): void => {
      for (const p of this.pending.values()) p.reject(e);
      this.pending.clear();
      this.worker = undefined;
    };
    w.on('error', fail);
    w.on('exit', (code) => fail(new Error(`profile parser exited (code ${code})`)));
    this.worker = w;
    return w;
  }

  private call(req: Request): Promise<WorkerReply> {
    const id = this.next++;
    return new Promise<WorkerReply>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      const w = this.start();
      // Referenced only while a request is out: an idle worker must not keep a CLI or test process alive.
      w.ref();
      w.postMessage({ ...req, id });
    });
  }

  /**
   * The capture's summary. `offThread`: on the worker thread whatever its size (a background prefetch: the
   * extension host's thread stays free for the UI and log streaming; nobody waits for the result).
   */
  async analyze(file: string, offThread = false): Promise<ProfileSummary> {
    if (!offThread && statSync(file).size <= this.inlineMaxBytes) {
      // Analyzing warms the decoder as well as the warm-up would.
      this.stopWarmUp();
      try {
        return analyzeProfileFile(file);
      } catch (e) {
        if (e instanceof ProfileFormatError) throw new ProfileFormatError(named(file, e.message));
        throw e;
      }
    }
    const r = await this.call({ op: 'analyze', file });
    if (!r.ok) throw new ProfileFormatError(named(file, r.error));
    return r.summary!;
  }

  /** Writes the Chrome trace JSON of `file` to `out`; returns the number of events. */
  async exportChromeTrace(file: string, out: string): Promise<number> {
    const r = await this.call({ op: 'export', file, out });
    if (!r.ok) throw new ProfileFormatError(named(file, r.error));
    return r.events ?? 0;
  }

  dispose(): void {
    this.stopWarmUp();
    void this.worker?.terminate();
    this.worker = undefined;
  }
}
