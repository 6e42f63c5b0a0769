/**
 * worker_threads entry (dist/profile-worker.js): the profile analysis (WebAssembly, compiled once by the parser
 * and handed over in workerData) off the extension host's main thread, kept between captures. Answers each request
 * in turn; a summary's timeline columns are transferred, not copied.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ProfileWasm, timelineBuffers, type WasmModule } from './wasm-host';
import type { WorkerReply, WorkerRequest } from './parse';

/**
 * Analyses of the module's own sample capture when the worker starts, through its forms in turn (about a
 * millisecond each once optimized): fewer leave V8 optimizing the hot code while the user clicks (with 30, the
 * first click was slower than the TypeScript analysis's again in profiles_open_bench.py; BENCHMARKS.md).
 */
const WARM_RUNS = 100;

/** An instance whose memory grew past this (a big capture) is dropped after its request: memory never shrinks. */
const KEEP_BYTES = 64 << 20;

const module = (workerData as { module: WasmModule }).module;
// Warmed before the first request, off the extension host's thread: the module's code is compiled once for this
// thread and the parser's, and run often enough for V8 to optimize what is hot (it compiles a module's functions
// on their first call with a baseline compiler, and optimizes them as they run).
let wasm: ProfileWasm | undefined = new ProfileWasm(module);
wasm.warmUp(WARM_RUNS);

function handle(req: WorkerRequest): WorkerReply {
  try {
    wasm ??= new ProfileWasm(module);
    if (req.op === 'analyze') return { id: req.id, ok: true, summary: wasm.analyze(req.file, req.timeline) };
    if (req.op === 'hosts') return { id: req.id, ok: true, hosts: wasm.hosts(req.files) };
    return { id: req.id, ok: true, events: wasm.exportTrace(req.file, req.out) };
  } catch (e) {
    return { id: req.id, ok: false, error: e instanceof Error ? e.message : String(e) };
  } finally {
    if (wasm && wasm.memoryBytes > KEEP_BYTES) wasm = undefined;
  }
}

parentPort?.on('message', (req: WorkerRequest) => {
  const reply = handle(req);
  parentPort?.postMessage(reply, reply.ok && reply.summary ? timelineBuffers(reply.summary.timeline.lines) : []);
});
