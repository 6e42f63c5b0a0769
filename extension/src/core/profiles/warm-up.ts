/**
 * Warming the decoder before the first capture is opened.
 *
 * Why: the first capture a process decodes runs on cold code. V8 interprets the decoder, then compiles its hot
 * functions with its optimizing compiler on the fly, throwing some of that away when later data takes a path
 * the early data did not: on a 0.86 MB TPU capture the first analysis took ~15× as long as the same analysis
 * once warm (BENCHMARKS.md, `profiles-real`). The extension host lives for hours, so the run view pays that
 * once, in advance, on a small synthetic capture shaped like the real ones (a TPU chip's XLA Ops, XLA Modules
 * and Steps lines with their metadata stats, GPU kernels that name their HLO op and program, host threads with
 * stats the op table does not read), written to a temporary file and read through the same streaming path.
 * A second, GPU-only capture with step annotations takes the GPU step-grouping path (step-groups.ts), which a TPU
 * plane turns off in the first: without it an H200 capture's first analysis after warming took about twice
 * its warm time (BENCHMARKS.md, `profiles-real`).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import protobuf from 'protobufjs/minimal.js';
import { analyzeProfileFile } from './analyze';

type Writer = protobuf.Writer;

/** Events per line of the synthetic capture, and passes over it: enough for the hot loops to be optimized. */
const EVENTS_PER_LINE = 400;
const PASSES = 12;

/** Stat metadata ids of the synthetic planes (names as XLA writes them). */
const STATS: [number, string][] = [
  [1, 'hlo_op'], [2, 'hlo_module'], [3, 'hlo_category'], [4, 'program_id'], [5, 'flops'], [6, 'bytes_accessed'],
  [7, 'device_offset_ps'], [8, 'device_duration_ps'], [9, 'run_id'], [10, 'correlation_id'], [11, 'long_name'],
  [12, 'device_type_string'], [13, 'peak_teraflops_per_second'], [14, 'Hlo Proto'], [20, 'fusion.1'], [21, 'convolution.2'],
  [22, 'loop fusion'], [15, '_r'], [16, 'step_num'], [17, '_pt'], [18, '_p'], [19, '_ct'], [23, '_c'],
];

/** Instructions per computation of the synthetic program (four computations). */
const HLO_INSTRUCTIONS = 100;

class CaptureWriter {
  readonly w: Writer = protobuf.Writer.create();

  msg(field: number, body: () => void): void {
    this.w.uint32((field << 3) | 2).fork();
    body();
    this.w.ldelim();
  }

  num(field: number, v: number): void {
    this.w.uint32(field << 3).uint64(v);
  }

  str(field: number, v: string): void {
    this.w.uint32((field << 3) | 2).string(v);
  }

  dbl(field: number, v: number): void {
    this.w.uint32((field << 3) | 1).double(v);
  }

  /**
   * An XStat: metadata id, then a uint64 (3), string (5), ref (7) or double (2) value. It is field 4 of an
   * XEvent, 5 of an XEventMetadata, 6 of an XPlane.
   */
  stat(meta: number, kind: 3 | 5 | 7 | 2, v: number | string, field = 4): void {
    this.msg(field, () => {
      this.num(1, meta);
      if (kind === 5) this.str(5, String(v));
      else if (kind === 2) this.dbl(2, Number(v));
      else this.num(kind, Number(v));
    });
  }

  /** An XLine of `n` back-to-back events; each event gets `stats(k)` and metadata `meta(k)`. */
  line(id: number, name: string, n: number, meta: (k: number) => number, stats: (k: number, offsetPs: number, durationPs: number) => void, nested = false, shuffled = false, pairs = false): void {
    this.msg(3, () => {
      this.num(1, id);
      this.str(2, name);
      this.num(3, 1_700_000_000_000_000_000);
      // Offsets of 5 to 7 varint bytes, as a capture of milliseconds to minutes has.
      const base = [3_000_000_000, 100_000_000_000, 5_000_000_000_000][id % 3];
      for (let k = 0; k < n; k++) {
        this.msg(4, () => {
          this.num(1, meta(k));
          // Every fourth event nests in the one before it (a while around its body).
          const child = nested && k % 4 === 3;
          // Shuffled: out of start order, and in pairs that start together (the longer one is the parent).
          const slot = shuffled ? (k * 37) % n : k;
          const off = 7_000_000 * (shuffled || pairs ? slot - (slot % 2) : k) + (child ? -6_000_000 : 0) + base;
          const dur = (child ? 2_000_000 : 6_000_000 + (k % 7) * 10_000 + (k === n - 1 ? 2 ** 36 : 0)) - (pairs && k % 2 ? 1_000_000 : 0);
          this.num(2, off);
          this.num(3, dur);
          stats(k, off, dur);
        });
      }
      this.num(9, 7_000_000 * n);
      if (id % 2) this.str(11, `${name} (display)`);
    });
  }

  eventMeta(id: number, name: string, display: string, stats: () => void): void {
    this.msg(4, () => {
      this.num(1, id);
      this.msg(2, () => {
        this.num(1, id);
        this.str(2, name);
        if (display) this.str(4, display);
        stats();
      });
    });
  }

  /** Stat metadata: the named stats, and `extra` more of names no decoder looks for (TensorFlow planes have ~1,400). */
  statMeta(extra = 0): void {
    const named: [number, string][] = [...STATS];
    for (let k = 0; k < extra; k++) named.push([100 + k, `tf_op_attribute_${k}`]);
    for (const [id, name] of named) this.msg(5, () => { this.num(1, id); this.msg(2, () => { this.num(1, id); this.str(2, name); }); });
    // One without a name, as some writers leave them.
    this.msg(5, () => { this.num(1, 30); this.msg(2, () => this.num(1, 30)); });
  }
}

/**
 * A serialized HloProto as a GPU capture's /host:metadata plane holds one per program: instructions with the
 * fields XLA writes (shape, metadata, id and operands with two-byte tags, now and then a long backend config)
 * around the name, opcode and fusion kind that the op table reads.
 */
function hloProgram(id: number): Uint8Array {
  const c = new CaptureWriter();
  const opcodes = ['fusion', 'convolution', 'add', 'copy', 'custom-call', 'parameter', 'get-tuple-element', 'all-reduce'];
  c.msg(1, () => {
    c.str(1, 'jit_train_step');
    for (let k = 0; k < 4; k++) {
      c.msg(3, () => {
        c.str(1, `computation.${k}`);
        for (let i = 0; i < HLO_INSTRUCTIONS; i++) {
          const op = opcodes[(i + k) % opcodes.length];
          c.msg(2, () => {
            // The first two are the ops the GPU kernels name.
            c.str(1, k === 0 && i < 2 ? ['fusion.1', 'convolution.2'][i] : `${op}.${k * 1000 + i}`);
            c.str(2, op);
            c.msg(3, () => { c.num(2, 11); c.num(3, 128); c.num(3, 256); });
            c.msg(7, () => { c.str(1, 'dot_general'); c.str(2, `jit(train_step)/jvp(main)/dot_general[${i}]`); });
            if (op === 'fusion') c.str(11, i % 3 ? 'kLoop' : 'kInput');
            c.num(35, 1000 * k + i);
            c.msg(36, () => { c.w.uint64(i); c.w.uint64(i + 1); });
            if (i % 9 === 0) c.str(43, `{"operation_queue_id":"0","fused_computation":"${'x'.repeat(150)}"}`);
          });
        }
      });
    }
    c.num(5, id);
  });
  return c.w.finish();
}

/** A synthetic XSpace with a TPU chip, a GPU and a host plane, laid out as XLA writes it (lines before metadata). */
export function warmUpCapture(): Uint8Array {
  const c = new CaptureWriter();
  const n = EVENTS_PER_LINE;
  c.msg(1, () => {
    c.num(1, 1);
    c.str(2, '/device:TPU:0');
    c.line(1, 'XLA Ops', n, (k) => 1 + (k % 8), (k, off, dur) => {
      // The device clock reorders a few neighbours now and then, as on real chips.
      c.stat(7, 3, off - 1_000_000_000 + (k % 16 === 5 ? 7_500_000 : 0));
      c.stat(8, 3, dur - 50_000);
      c.stat(9, 3, k);
    }, true);
    c.line(2, 'XLA Modules', n / 20, () => 9, () => c.stat(9, 3, 1));
    c.line(3, 'Steps', n / 40, () => 10, () => c.stat(9, 3, 1));
    for (let m = 1; m <= 8; m++) {
      c.eventMeta(m, `%fusion.${m} = f32[128,256]{1,0} fusion(%p0, %p1), kind=kLoop, calls=%fused_computation.${m}`, `fusion.${m}`, () => {
        c.stat(3, 7, 22, 5);
        // Program ids past 2^53 are kept as digits: some ops take that path, one of them a negative int64 (ten bytes).
        c.stat(4, 3, m % 2 ? (m === 3 ? -(2 ** 40) : 2 ** 60) : 12 + m, 5);
        c.stat(5, 3, 1_000_000 * m, 5);
        c.stat(6, 3, 4096 * m, 5);
      });
    }
    c.eventMeta(9, 'jit_step(13)', '', () => undefined);
    // An id past 32 bits (the metadata table keeps such ids apart from the dense ones).
    c.eventMeta(2 ** 40, 'unreferenced', '', () => undefined);
    c.eventMeta(10, '1', '', () => undefined);
    c.statMeta();
    c.stat(12, 5, 'TPU v6 lite', 6);
    c.stat(13, 2, 918, 6);
  });
  c.msg(1, () => {
    c.num(1, 2);
    c.str(2, '/device:GPU:0');
    for (let s = 0; s < 2; s++) {
      c.line(10 + s, `Stream #${13 + s}(Compute)`, n, (k) => 1 + (k % 4), (k) => {
        // hlo_op as XLA writes it (a ref to a stat metadata name), now and then as a plain string.
        if (k % 5) c.stat(1, 7, 20 + (k % 2));
        else c.stat(1, 5, 'fusion.1');
        c.stat(2, 5, 'jit_train_step');
        if (k % 3 === 0) { c.stat(5, 3, 1000 * k); c.stat(6, 2, 512.5 * k); }
        if (k % 4 === 1) c.stat(3, 5, 'convolution');
        c.stat(4, 3, 7 + (k % 3));
        c.stat(10, 3, k);
        // A string stat the op table does not read, now and then longer than 127 bytes (a two-byte length).
        c.stat(11, 5, k % 8 ? 'a kernel name' : `void xla::gpu::kernel<${'float, '.repeat(24)}128>(float const*, float*, int)`);
      });
    }
    for (let m = 1; m <= 4; m++) c.eventMeta(m, `void kernel_${m}<float, 128>(float const*, float*, int)`, '', () => undefined);
    c.statMeta();
  });
  c.msg(1, () => {
    c.num(1, 3);
    c.str(2, '/host:CPU');
    for (let t = 0; t < 2; t++) {
      // One line longer than the decoder's first columns (1024 events), so that growing them is warm too; some
      // events are launches that name the HLO op they launch (GPU runtimes write hlo_op on them too).
      c.line(20 + t, `python3/${100 + t}`, t ? 3 * n : n, (k) => 1 + (k % 7), (k) => {
        c.stat(10, 3, k);
        if (k % 3 === 0) c.stat(11, 5, 'launch');
        if (k % 5 === 2) c.stat(1, 7, 20);
        // A stat of an id past 127 (a two-byte varint; TensorFlow's planes name ~1,400 stats).
        if (k % 4 === 1) c.stat(300 + (k % 50), 3, k);
        // num_occurrences, which the decoder skips (aggregated events).
        if (k % 50 === 7) c.num(5, 1);
      }, true);
    }
    // Events in start order where some start together (a parent before the child it begins with).
    c.line(29, 'tf_pjrt', n / 4, (k) => 1 + (k % 7), () => undefined, false, false, true);
    const names = ['ExecuteComputation', 'StepMarker', 'cuLaunchKernel', 'XlaCompile', 'SyncTensorsGraphInternal', 'TransferToDevice', 'ThunkExecutor'];
    names.forEach((name, k) => c.eventMeta(k + 1, name, '', () => undefined));
    // Many metadata entries with long names, as GPU and TensorFlow captures have (thousands of kernel and op
    // names), named by events of a line whose events come out of start order (so it is sorted).
    const many = 10 * EVENTS_PER_LINE / 4;
    // Most with a display name, as TensorFlow's host and GPU planes have (each then an entry of its own).
    for (let m = 0; m < many; m++) {
      c.eventMeta(100 + m, `void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_${m}_128x128_32x3_nn_align4>(Params)`, m % 8 ? `gemm_${m}` : '', () => undefined);
    }
    c.line(30, 'tf_Compute', n, (k) => 100 + ((k * 7) % many), () => undefined, false, true);
    c.statMeta(many);
  });
  // The programs' HLO, which the op table reads for the GPU kernels' categories.
  c.msg(1, () => {
    c.num(1, 4);
    c.str(2, '/host:metadata');
    c.eventMeta(1, 'jit_train_step', '', () => c.msg(5, () => { c.num(1, 14); c.w.uint32((6 << 3) | 2).bytes(hloProgram(7)); }));
    c.statMeta();
  });
  c.str(4, 'warm-up');
  return c.w.finish();
}

/**
 * A synthetic GPU capture as JAX writes one with step annotations (no Steps line: its steps come from grouping,
 * step-groups.ts): host steps (`_r`, step_num) with the launches of their kernels nested in them, a producer in
 * each step and a consumer on another thread that launches more, and the GPU's kernels with the launches'
 * correlation ids (a CUDA graph's two kernels share one).
 */
export function warmUpStepsCapture(): Uint8Array {
  const c = new CaptureWriter();
  const steps = 16;
  const launches = 24;
  const stepPs = 200_000_000;
  // Offsets past 2^31 ps, as in any capture longer than 2 ms (the op table's sums then leave small integers).
  const event = (meta: number, off: number, dur: number, stats: () => void): void =>
    c.msg(4, () => { c.num(1, meta); c.num(2, 100_000_000_000 + off); c.num(3, dur); stats(); });
  const hostLine = (id: number, body: () => void): void =>
    c.msg(3, () => { c.num(1, id); c.str(2, `python3/${id}`); c.num(3, 1_700_000_000_000_000_000); body(); });
  c.msg(1, () => {
    c.num(1, 1);
    c.str(2, '/device:GPU:0');
    c.msg(3, () => {
      c.num(1, 10);
      c.str(2, 'Stream #13(Compute)');
      c.num(3, 1_700_000_000_000_000_000);
      for (let s = 0; s < steps; s++) {
        for (let k = 0; k < 2 * launches; k++) {
          event(1 + (k % 4), s * stepPs + 5_000_000 + k * 3_000_000, 2_500_000, () => {
            c.stat(1, 7, 20 + (k % 2));
            c.stat(4, 3, 7);
            c.stat(10, 3, 1 + s * launches + (k >> 1));
          });
        }
        // The consumer thread's launches.
        event(1, s * stepPs + 160_000_000, 4_000_000, () => { c.stat(1, 7, 20); c.stat(4, 3, 7); c.stat(10, 3, 10_000 + s); });
      }
    });
    // Hundreds of kernel names before the stat names, as a real GPU plane has: op names then have string keys
    // past 2^7, and the op table's (op, program) keys pass 2^31.
    for (let m = 1; m <= 300; m++) c.eventMeta(m, `void kernel_${m}<float, 128>(float const*, float*, int)`, '', () => undefined);
    c.statMeta();
    // A stat id past 2^31 (XLA's GPU planes have them): the stat table's sparse side.
    c.msg(5, () => { c.num(1, 2 ** 40); c.msg(2, () => { c.num(1, 2 ** 40); c.str(2, 'cuda_graph_id'); }); });
    // Plane stats of each kind XLA's GPU captures have: an integer, a string, and bytes (a plane of call stacks).
    c.stat(9, 3, 132, 6);
    c.stat(12, 5, 'NVIDIA H200', 6);
    c.msg(6, () => { c.num(1, 9); c.w.uint32((6 << 3) | 2).bytes(new Uint8Array([8, 1, 16, 2])); });
  });
  c.msg(1, () => {
    c.num(1, 2);
    c.str(2, '/host:CPU');
    hostLine(100, () => {
      for (let s = 0; s < steps; s++) {
        event(1, s * stepPs, stepPs - 10_000_000, () => { c.stat(15, 3, 1); c.stat(16, 3, s); });
        event(2, s * stepPs + 1_000, 500_000, () => { c.stat(17, 3, 3); c.stat(18, 3, s); });
        for (let k = 0; k < launches; k++) event(3, s * stepPs + 2_000_000 + k * 5_000_000, 1_000_000, () => c.stat(10, 3, 1 + s * launches + k));
      }
    });
    hostLine(101, () => {
      for (let s = 0; s < steps; s++) {
        event(4, s * stepPs + 150_000_000, 8_000_000, () => { c.stat(19, 3, 3); c.stat(23, 3, s); });
        event(3, s * stepPs + 151_000_000, 1_000_000, () => c.stat(10, 3, 10_000 + s));
      }
    });
    ['train_step', 'ExecuteComputation', 'cuLaunchKernel', 'ThunkExecutor'].forEach((name, k) => c.eventMeta(k + 1, name, '', () => undefined));
    c.statMeta();
  });
  return c.w.finish();
}

/**
 * The synthetic capture in a temporary file, analyzed one pass at a time: the run view spreads the passes over
 * several turns of the extension host's event loop (a pass takes a few to a few tens of milliseconds), so
 * warming never holds it for long. Errors end the warm-up quietly (a failed warm-up only leaves the decoder cold).
 */
export class DecoderWarmUp {
  private dir: string | undefined;
  private file: string | undefined;
  private stepsFile: string | undefined;
  private left: number;

  constructor(passes = PASSES) {
    this.left = passes;
  }

  /** Runs one pass; false once all passes ran (or one failed), and the file is gone. */
  pass(): boolean {
    if (this.left <= 0) return false;
    try {
      if (!this.file) {
        this.dir = mkdtempSync(path.join(tmpdir(), 'tpw-warm-'));
        this.file = path.join(this.dir, 'warm-up.xplane.pb');
        writeFileSync(this.file, warmUpCapture());
        this.stepsFile = path.join(this.dir, 'warm-up-steps.xplane.pb');
        writeFileSync(this.stepsFile, warmUpStepsCapture());
      }
      // GPU step grouping (a TPU plane turns it off in the other capture), first: the paths both take are left
      // compiled for the fuller capture.
      if (this.stepsFile) analyzeProfileFile(this.stepsFile);
      analyzeProfileFile(this.file);
      this.left--;
    } catch {
      this.left = 0;
    }
    if (this.left > 0) return true;
    this.dispose();
    return false;
  }

  dispose(): void {
    this.left = 0;
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
    this.dir = this.file = this.stepsFile = undefined;
  }
}

/** All passes at once, on this thread (benchmarks time it so). */
export function warmUpDecoder(passes = PASSES): void {
  const w = new DecoderWarmUp(passes);
  while (w.pass());
}
