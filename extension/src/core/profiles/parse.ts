/**
 * The run view's way to the profile analysis (WebAssembly, wasm-host.ts): a worker thread that keeps it loaded,
 * so that the extension host, single-threaded and shared by every extension, never decodes a big capture itself.
 * A capture the user is waiting for that is small (most real ones are) is analyzed on the calling thread instead:
 * it takes milliseconds, and it does not queue behind a background prefetch that holds the worker.
 */
import { existsSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { ProfileHosts, ProfileSummary } from '../../../../protocol/run-view-messages';
import { compileProfileWasm, compileProfileWasmAsync, profileWasmFile, ProfileFormatError, ProfileWasm, type WasmModule } from './wasm-host';

/** Captures up to this size the user is waiting for are analyzed on the calling thread (tens of milliseconds at most). */
export const INLINE_MAX_BYTES = 4 << 20;

type Request =
  | { op: 'analyze'; file: string; timeline: boolean }
  | { op: 'hosts'; files: string[] }
  | { op: 'export'; file: string; out: string };
export type WorkerRequest = Request & { id: number };
export type WorkerReply =
  | { id: number; ok: true; summary?: ProfileSummary; hosts?: ProfileHosts; events?: number }
  | { id: number; ok: false; error: string };

export interface ParserOptions {
  /** dist/profile.wasm (default: beside the worker file, else beside this bundle, else the repository's dist/). */
  wasmFile?: string;
  /** Captures up to this size the user waits for run on the calling thread (tests set -1 to use the worker). */
  inlineMaxBytes?: number;
}

export class ProfileParser {
  private module: WasmModule | undefined;
  /** The module's compilation under way (ready() starts it). */
  private compiling: Promise<WasmModule> | undefined;
  private inline: ProfileWasm | undefined;
  /** Whether `inline` ran the sample (ready() does it once per instance). */
  private inlineWarm = false;
  private worker: Worker | undefined;
  private next = 1;
  private readonly pending = new Map<number, { resolve(r: WorkerReply): void; reject(e: Error): void }>();
  private soon: NodeJS.Timeout | undefined;
  private readonly inlineMaxBytes: number;

  /** @param workerFile the built worker (dist/profile-worker.js). */
  constructor(private readonly workerFile: string, private readonly opts: ParserOptions = {}) {
    this.inlineMaxBytes = opts.inlineMaxBytes ?? INLINE_MAX_BYTES;
  }

  /**
   * Loads the analysis and starts its worker, `delayMs` from now (the run view calls it when it opens: the first
   * capture opened then finds them ready). The timer keeps no process alive.
   */
  readySoon(delayMs = 250): void {
    if (this.worker || this.soon) return;
    this.soon = setTimeout(() => {
      this.soon = undefined;
      // A failure is reported when a capture is analyzed.
      this.ready().catch(() => undefined);
    }, delayMs);
    this.soon.unref();
  }

  /**
   * Loads the analysis and starts its worker now; resolves once the worker has warmed the module (worker.ts) and
   * this thread's instance has analyzed each form of the module's sample capture once from a file, on the code the
   * worker's runs compiled and optimized (a few milliseconds here), so that a capture clicked next finds the code its
   * analysis calls compiled, and the hot part optimized, instead of waiting for V8 to do it.
   */
  async ready(): Promise<void> {
    await this.compiledAsync();
    const w = this.start();
    await new Promise<void>((resolve) => {
      const id = this.next++;
      this.pending.set(id, { resolve: () => resolve(), reject: () => resolve() });
      w.ref();
      w.postMessage({ id, op: 'hosts', files: [] } satisfies WorkerRequest);
    });
    if (this.inlineWarm) return;
    const inline = this.inlineWasm();
    inline.warmUp(inline.sampleForms);
    this.inlineWarm = true;
  }

  private wasmFile(): string {
    const beside = path.join(path.dirname(this.workerFile), 'profile.wasm');
    return this.opts.wasmFile ?? (existsSync(beside) ? beside : profileWasmFile());
  }

  /**
   * The module, compiled once for this parser's life, off this thread (the extension host's) when ready() or a
   * worker request asks first; its worker gets it compiled, and instances share its code.
   */
  private compiledAsync(): Promise<WasmModule> {
    if (this.module) return Promise.resolve(this.module);
    this.compiling ??= compileProfileWasmAsync(this.wasmFile()).then(
      (m) => (this.module ??= m),
      (e: unknown) => {
        // Tried again at the next call (a build may have made the file since).
        this.compiling = undefined;
        throw e;
      },
    );
    return this.compiling;
  }

  /** The module now: a capture clicked before ready() began compiles it here, once. */
  private compiled(): WasmModule {
    this.module ??= compileProfileWasm(this.wasmFile());
    return this.module;
  }

  /** This thread's instance, made once: the clicks of small captures all run on it. */
  private inlineWasm(): ProfileWasm {
    this.inline ??= new ProfileWasm(this.compiled());
    return this.inline;
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(this.workerFile, { workerData: { module: this.compiled() } });
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
    w.unref();
    this.worker = w;
    return w;
  }

  private async call(req: Request): Promise<WorkerReply & { ok: true }> {
    await this.compiledAsync();
    const id = this.next++;
    const r = await new Promise<WorkerReply>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      const w = this.start();
      // Referenced only while a request is out: an idle worker must not keep a CLI or test process alive.
      w.ref();
      w.postMessage({ ...req, id });
    });
    if (!r.ok) throw new ProfileFormatError(r.error);
    return r;
  }

  /**
   * The capture's summary, with its timeline. `background`: a prefetch (nobody waits for it): always on the worker,
   * so that the extension host's thread stays free for the UI and log streaming.
   */
  async analyze(file: string, background = false): Promise<ProfileSummary> {
    if (!background && statSync(file).size <= this.inlineMaxBytes) {
      if (!this.module && this.compiling) await this.compiling;
      return this.inlineWasm().analyze(file);
    }
    return (await this.call({ op: 'analyze', file, timeline: true })).summary!;
  }

  /** The captures side by side (one per host of a run); one that cannot be read is named in `errors`. */
  async compare(files: readonly string[]): Promise<ProfileHosts> {
    return (await this.call({ op: 'hosts', files: [...files] })).hosts!;
  }

  /** Writes the Chrome trace JSON of `file` to `out`; returns the number of events. */
  async exportChromeTrace(file: string, out: string): Promise<number> {
    return (await this.call({ op: 'export', file, out })).events ?? 0;
  }

  dispose(): void {
    if (this.soon) clearTimeout(this.soon);
    this.soon = undefined;
    void this.worker?.terminate();
    this.worker = undefined;
    this.inline = undefined;
    this.inlineWarm = false;
  }
}
