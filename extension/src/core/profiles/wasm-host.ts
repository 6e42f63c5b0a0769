/**
 * The profile analysis as WebAssembly (dist/profile.wasm, built from native/profile: the same Rust as the native
 * `tpw profile`), and what it needs of its host: a WebAssembly module has no files, so it asks for them here (open,
 * read at an offset, list a directory, write), and hands the run view's timeline over one line at a time, copied
 * into typed-array slabs that cross threads without a copy. native/profile/src/wasm.rs is the other side.
 *
 * Nothing here analyzes anything: it moves bytes and strings across the module's boundary.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ProfileHosts, ProfileSummary, TimelineLine } from '../../../../protocol/run-view-messages';
import { ColumnSlabs } from './slabs';

/** A capture that cannot be analyzed; the message names the file and, where known, the byte at fault. */
export class ProfileFormatError extends Error {
  override name = 'ProfileFormatError';
}

/**
 * The part of V8's WebAssembly global used here (node has the global; @types/node does not declare it, and
 * TypeScript's declaration of it comes with the DOM's, which core does not use).
 */
export interface WasmModule {
  readonly __kind?: 'WebAssembly.Module';
}
interface WasmMemory {
  readonly buffer: ArrayBuffer;
}
interface WasmApi {
  Module: new (bytes: Uint8Array) => WasmModule;
  Instance: new (module: WasmModule, imports: Record<string, Record<string, unknown>>) => { exports: unknown };
  compile(bytes: Uint8Array): Promise<WasmModule>;
}
const WebAssemblyApi = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

/** dist/profile.wasm: beside this bundle (dist/*.js), or, from the sources (tests under tsx), the repository's dist/. */
export function profileWasmFile(): string {
  const beside = path.join(__dirname, 'profile.wasm');
  if (fs.existsSync(beside)) return beside;
  return path.resolve(__dirname, '../../../../dist/profile.wasm');
}

function missing(file: string): Error {
  return new Error(`${file} is missing: run \`npm run build\` (it needs Rust's cargo with the wasm32-unknown-unknown target)`);
}

/** Compiles the module (once per process or thread; instances are cheap to make from it). */
export function compileProfileWasm(file = profileWasmFile()): WasmModule {
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(file);
  } catch {
    throw missing(file);
  }
  return new WebAssemblyApi.Module(bytes);
}

/** compileProfileWasm off the calling thread: the file read asynchronously, the module validated on V8's threads. */
export async function compileProfileWasmAsync(file = profileWasmFile()): Promise<WasmModule> {
  let bytes: Buffer;
  try {
    bytes = await fs.promises.readFile(file);
  } catch {
    throw missing(file);
  }
  return WebAssemblyApi.compile(bytes);
}

interface Exports {
  memory: WasmMemory;
  alloc(len: number): number;
  free(ptr: number, len: number): void;
  out_ptr(): number;
  out_len(): number;
  err_ptr(): number;
  err_len(): number;
  analyze(path: number, len: number, timeline: number): number;
  hosts(paths: number, len: number): number;
  trace(path: number, len: number, out: number): number;
  cli(argv: number, len: number): number;
  warm(form: number): number;
  sample_forms(): number;
  sample_capture(form: number): number;
}

/** Node's error code of a failed fs call, as the module's negative codes (native/profile/src/wasm.rs io_words). */
function errorCode(e: unknown): number {
  const err = e as NodeJS.ErrnoException;
  if (err.code === 'ENOENT') return -1;
  if (err.code === 'EACCES' || err.code === 'EPERM') return -2;
  if (err.code === 'EISDIR') return -3;
  return -(100 + Math.abs(err.errno ?? 0));
}

const utf8 = new TextDecoder();

/** What `tpw profile` printed, and its exit status. */
export interface CliAnswer {
  code: number;
  out: string;
  err: string;
}

/** One instance of the module: its memory grows with the largest capture it read (see memoryBytes). */
export class ProfileWasm {
  private readonly x: Exports;
  /** The directory listing that `list` staged for `take`. */
  private staged = Buffer.alloc(0);
  /** The timeline of the analysis under way (undefined: none asked for, or dropped past its limit). */
  private lines: TimelineLine[] | undefined;
  private slabs = new ColumnSlabs();

  constructor(module: WasmModule = compileProfileWasm()) {
    const text = (ptr: number, len: number): string => utf8.decode(this.bytes(ptr, len));
    const guarded = <A extends unknown[]>(f: (...a: A) => number) => (...a: A): number => {
      try {
        return f(...a);
      } catch (e) {
        return errorCode(e);
      }
    };
    const tpw = {
      open: guarded((p: number, n: number) => fs.openSync(text(p, n), 'r')),
      close: (fd: number) => fs.closeSync(fd),
      file_size: (fd: number) => fs.fstatSync(fd).size,
      read_at: guarded((fd: number, off: number, ptr: number, len: number) => fs.readSync(fd, this.bytes(ptr, len), 0, len, off)),
      kind: (p: number, n: number): number => {
        try {
          const st = fs.statSync(text(p, n));
          return st.isFile() ? 0 : st.isDirectory() ? 1 : 2;
        } catch {
          return -1;
        }
      },
      list: guarded((p: number, n: number) => {
        const entries = fs.readdirSync(text(p, n), { withFileTypes: true });
        this.staged = Buffer.from(entries.map((e) => `${e.isFile() ? 0 : e.isDirectory() ? 1 : 2} ${e.name}\0`).join(''), 'utf8');
        return this.staged.length;
      }),
      take: (ptr: number) => { this.bytes(ptr, this.staged.length).set(this.staged); },
      write: guarded((fd: number, ptr: number, len: number) => {
        const b = this.bytes(ptr, len);
        for (let done = 0; done < len;) done += fs.writeSync(fd, b, done, len - done);
        return 0;
      }),
      timeline_line: (planeP: number, planeN: number, nameP: number, nameN: number, start: number, dur: number, ids: number, depth: number, n: number) => {
        if (!this.lines) return;
        const buf = this.x.memory.buffer;
        const line: TimelineLine = {
          plane: text(planeP, planeN), name: text(nameP, nameN),
          start: this.slabs.f64.take(n), dur: this.slabs.f64.take(n), name_: this.slabs.i32.take(n), depth: this.slabs.u8.take(n),
        };
        line.start.set(new Float64Array(buf, start, n));
        line.dur.set(new Float64Array(buf, dur, n));
        line.name_.set(new Int32Array(buf, ids, n));
        line.depth.set(new Uint8Array(buf, depth, n));
        this.lines.push(line);
      },
      timeline_drop: () => {
        this.lines = undefined;
        this.slabs = new ColumnSlabs();
      },
    };
    this.x = new WebAssemblyApi.Instance(module, { tpw }).exports as Exports;
  }

  /** Bytes of memory the instance holds (WebAssembly memory only grows: a host drops a big one and makes another). */
  get memoryBytes(): number {
    return this.x.memory.buffer.byteLength;
  }

  private bytes(ptr: number, len: number): Uint8Array {
    return new Uint8Array(this.x.memory.buffer, ptr, len);
  }

  /** Calls `f` with `s` in the module's memory. */
  private withText<T>(s: string, f: (ptr: number, len: number) => T): T {
    const b = Buffer.from(s, 'utf8');
    const ptr = this.x.alloc(b.length);
    this.bytes(ptr, b.length).set(b);
    try {
      return f(ptr, b.length);
    } finally {
      this.x.free(ptr, b.length);
    }
  }

  private out(): string {
    return utf8.decode(this.bytes(this.x.out_ptr(), this.x.out_len()));
  }

  /** The capture's summary; with the timeline (the run view's), its columns in slabs (see timelineBuffers). */
  analyze(file: string, timeline = true): ProfileSummary {
    return this.summary(timeline, () => this.withText(file, (p, n) => this.x.analyze(p, n, timeline ? 1 : 0)));
  }

  /**
   * The summary of the module's own sample capture in its `form`-th form (native/profile/src/sample.rs; any
   * number, taken modulo the forms there are), answered as `analyze` answers for a file: what the profile worker
   * runs when it starts, so that the code a capture's analysis calls, here and in the module, is compiled before
   * the user opens one (V8 compiles a WebAssembly function on its first call, and optimizes it once it ran enough).
   */
  warm(form = 0): ProfileSummary {
    return this.summary(true, () => this.x.warm(form));
  }

  /** How many forms the sample capture has (`warm` with 0 up to this runs each). */
  get sampleForms(): number {
    return this.x.sample_forms();
  }

  /**
   * `runs` analyses of the sample capture, its forms in turn, each as a click's is: from a file (written to a
   * temporary folder, removed after), so that the file reads and their glue here are compiled too. Where no
   * temporary folder can be written, the sample is analyzed from the module's memory (`warm`).
   */
  warmUp(runs: number): void {
    let dir: string | undefined;
    try {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-profile-warm-'));
      const files = [...Array(this.sampleForms).keys()].map((form) => {
        const file = path.join(dir!, `sample-${form}.xplane.pb`);
        const n = this.x.sample_capture(form);
        fs.writeFileSync(file, this.bytes(this.x.out_ptr(), n));
        return file;
      });
      for (let k = 0; k < runs; k++) this.analyze(files[k % files.length]);
    } catch {
      for (let k = 0; k < runs; k++) this.warm(k);
    } finally {
      if (dir) fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  /** Runs `analyze` (the module's call, timeline lines to `timeline_line`) and reads its answer. */
  private summary(timeline: boolean, analyze: () => number): ProfileSummary {
    this.lines = timeline ? [] : undefined;
    this.slabs = new ColumnSlabs();
    try {
      if (analyze() !== 0) throw new ProfileFormatError(this.out());
      const { t0, summary } = JSON.parse(this.out()) as { t0: number; summary: ProfileSummary };
      const lines = this.lines ?? [];
      for (const l of lines) for (let k = 0; k < l.start.length; k++) l.start[k] -= t0;
      summary.timeline.lines = lines;
      return summary;
    } finally {
      this.lines = undefined;
      this.slabs = new ColumnSlabs();
    }
  }

  /** Several hosts' captures side by side; a capture that cannot be read is named in `errors`. */
  hosts(files: readonly string[]): ProfileHosts {
    this.withText(files.join('\0'), (p, n) => this.x.hosts(p, n));
    return JSON.parse(this.out()) as ProfileHosts;
  }

  /** Writes `file` to `out` as Chrome trace JSON; returns the number of events. */
  exportTrace(file: string, out: string): number {
    const fd = fs.openSync(out, 'w');
    try {
      const status = this.withText(file, (p, n) => this.x.trace(p, n, fd));
      if (status !== 0) throw new ProfileFormatError(this.out());
      return Number(this.out());
    } finally {
      fs.closeSync(fd);
    }
  }

  /** `tpw profile ARGV`; undefined where the full CLI answers (--help, a flag `tpw profile` does not take). */
  cli(argv: readonly string[]): CliAnswer | undefined {
    const code = this.withText(argv.join('\0'), (p, n) => this.x.cli(p, n));
    if (code < 0) return undefined;
    return { code, out: this.out(), err: utf8.decode(this.bytes(this.x.err_ptr(), this.x.err_len())) };
  }
}

/** The timeline columns' buffers, each once (columns share slabs), to transfer (not copy) a summary across threads. */
export function timelineBuffers(lines: readonly TimelineLine[]): ArrayBuffer[] {
  return [...new Set(lines.flatMap((l) => [l.start.buffer, l.dur.buffer, l.name_.buffer, l.depth.buffer] as ArrayBuffer[]))];
}
