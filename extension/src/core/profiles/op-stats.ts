/**
 * The op table by xprof's rules (its hlo_stats / op profile), one line at a time:
 * - Only device planes count. Host-side events that name an HLO op (a GPU runtime's kernel launches and
 *   copies carry `hlo_op` too) are launches, not executions. A capture with no device plane at all (XLA on
 *   CPU) falls back to the host's op events, so it still shows something; mergeOps drops those otherwise.
 * - TPU: every event of a device plane's `XLA Ops` line is one execution of the op its metadata names (the
 *   short display name; the metadata name is the whole HLO text), of the program and category its metadata
 *   stats give, timed by the device's own clock (device_offset_ps / device_duration_ps). Ops nest on that
 *   line (a while or call around its body): self time is the duration less that of the direct children.
 * - GPU: every kernel (any other device line) with an `hlo_op` stat is one execution of that op of its
 *   program_id (the last name of a `::`-joined hlo_op), its whole duration self time; its category comes from
 *   the program's HLO (the /host:metadata plane), as xprof derives it. As xprof (xplane_to_op_metrics_db.cc,
 *   ConvertDeviceTraceXPlaneToOpMetricsDb: GetHloInstruction), a kernel whose op is not an instruction of its
 *   program's HLO counts for no op: XLA names the CUDA command buffer (`command_buffer_1`) on the kernels it ran
 *   inside one. Unlike xprof, a program whose HLO the capture lacks keeps its kernels' rows (uncategorized).
 * Rows are per (program, op name). Sums stay in a Float64Array until mergeOps, which is plain data across threads.
 * Each sum is kept exactly (addExact): a capture's op time in picoseconds passes 2^53 (2.5 hours of op time, a
 * big capture of many chips), where a plain running sum of doubles would round at each step and the total would
 * depend on the order of the additions, and so on how the planes were split between threads.
 */
import type { OpRow, UnattributedKernels } from '../../../../protocol/run-view-messages';
import { HloDecoder } from './hlo-categories';
import type { EventInfo, LineView, PlaneView } from './view';
import { grown } from './xplane';

/** Lines of a TPU device plane that are not op executions (XLA Ops is handled on its own). */
const NOT_OP_LINES = new Set(['XLA Modules', 'Async XLA Ops', 'XLA TraceMe', 'Steps', 'Framework Ops', 'Framework Name Scope', 'Source code', 'SparseCore']);

/** XLA on CPU records no category; a coarse one from the op name, used only where nothing better is known. */
export function categoryFromName(op: string): string {
  const base = op.replace(/(\.clone)?(\.\d+)*(\.clone)?$/, '');
  if (base.endsWith('fusion')) return /dot|convolution/.test(base) ? 'convolution fusion' : 'loop fusion';
  if (base === 'dot' || base === 'convolution') return 'convolution';
  if (/^(copy|transpose|bitcast|reshape|broadcast|concatenate|slice|pad|gather|scatter|wrapped_scatter)/.test(base)) return 'data formatting';
  if (/^(all-reduce|all-gather|reduce-scatter|collective-permute|all-to-all)/.test(base)) return 'collective';
  if (/^reduce/.test(base)) return 'reduction';
  if (base === 'call' || base === 'while' || base === 'conditional') return 'control flow';
  return 'elementwise';
}

function finiteOr0(x: number | undefined): number {
  return x !== undefined && Number.isFinite(x) ? x : 0;
}

/** Numbers per row in OpPartial.acc: the count, then four exact sums (total ps, self ps, flops, bytes) as hi/lo pairs. */
export const ACC_STRIDE = 9;

/** Where addExact splits a number: hi counts units of 2^26, lo holds the rest. */
const SPLIT = 2 ** 26;

/**
 * Adds x to the exact sum kept as the pair acc[at] (units of 2^26) and acc[at + 1] (the rest, in [0, 2^26) per
 * addend). Both stay exact integers for any whole x below 2^53 and up to 2^26 additions, so the pair's value
 * (exactTotal) is the true sum, rounded once, in whatever order the additions came.
 */
export function addExact(acc: Float64Array, at: number, x: number): void {
  const hi = Math.floor(x * (1 / SPLIT));
  acc[at] += hi;
  acc[at + 1] += x - hi * SPLIT;
}

/** The value of an exact sum kept by addExact. */
export function exactTotal(acc: ArrayLike<number>, at: number): number {
  return acc[at] * SPLIT + acc[at + 1];
}

/** A row's identity; category '' until resolved (GPU: from the program's HLO, in mergeOps). */
export interface OpKey { program: string; name: string; module: string; category: string; host: boolean; kernel: boolean }


/** What an OpStats saw, as plain data: rows and their sums (ACC_STRIDE per row: count, then the exact sums of total ps, self ps, flops, bytes). */
export interface OpPartial {
  rows: OpKey[];
  acc: Float64Array;
  /** Category by program id, then instruction name (from the programs' HLO). */
  hlo: Record<string, Map<string, string>>;
  /** Module name by program id (TPU's XLA Modules line names them `name(id)`). */
  modules: Record<string, string>;
}

export class OpStats {
  private readonly rows: OpKey[] = [];
  private acc = new Float64Array(ACC_STRIDE * 256);
  private readonly index = new Map<string, number>();
  private readonly hlo: OpPartial['hlo'] = {};
  private readonly modules: OpPartial['modules'] = {};
  private readonly hloDecoder = new HloDecoder();
  /** Row by metadata id on the current plane's XLA Ops line (TPU); -1: not resolved. */
  private rowOfMeta = new Int32Array(256).fill(-1);
  /** Row by (hlo_op key, program key), for kernels (GPU). */
  private readonly rowOfKernel = new Map<number, number>();
  private strings: string[] | undefined;
  private isDevice = false;
  private meta: PlaneView['meta'] | undefined;
  // Scratch: the op events of a line in start order, and the nesting stack.
  private idx = new Uint32Array(1024);
  private off = new Float64Array(1024);
  private dur = new Float64Array(1024);
  private row = new Int32Array(1024);
  private fl = new Float64Array(1024);
  private by = new Float64Array(1024);
  private ord = new Uint32Array(1024);
  /** Per-execution FLOPs and bytes by metadata id on the current plane (TPU: the metadata carries them). */
  private flopsOfMeta = new Float64Array(256);
  private bytesOfMeta = new Float64Array(256);
  private stackI = new Int32Array(64);
  private stackEnd = new Float64Array(64);
  private stackChild = new Float64Array(64);

  plane(p: PlaneView): void {
    this.isDevice = p.name.startsWith('/device:');
    this.meta = p.meta;
    this.rowOfMeta.fill(-1);
    if (p.strings !== this.strings) {
      this.strings = p.strings;
      this.rowOfKernel.clear();
    }
    if (p.name === '/host:metadata') {
      p.meta.forEach((info, id) => {
        if (!info.hloProto) return;
        try {
          const prog = this.hloDecoder.decode(info.hloProto);
          const key = prog.id || String(id);
          this.hlo[key] = prog.categories;
          if (prog.name) this.modules[key] ??= prog.name;
        } catch {
          // A program whose HLO cannot be read keeps its ops uncategorized rather than failing the capture.
        }
      });
    }
  }

  line(p: PlaneView, l: LineView): void {
    const n = l.count;
    if (n === 0) return;
    if (this.isDevice && l.name === 'XLA Modules') return this.moduleNames(l);
    if (this.isDevice && NOT_OP_LINES.has(l.name)) return;
    const tpu = this.isDevice && l.name === 'XLA Ops';
    // Collect the line's op executions with their times and rows.
    if (this.idx.length < n) {
      const m = Math.max(n, this.idx.length * 2);
      this.idx = new Uint32Array(m); this.off = new Float64Array(m); this.dur = new Float64Array(m); this.row = new Int32Array(m);
      this.fl = new Float64Array(m); this.by = new Float64Array(m); this.ord = new Uint32Array(m);
    }
    const { idx, off, dur, row, fl, by } = this;
    let k = 0;
    let sorted = true;
    for (let i = 0; i < n; i++) {
      let r: number;
      let o = l.offsetPs[i];
      let d = l.durationPs[i];
      let f: number, b: number;
      if (tpu) {
        const m = l.metaId[i];
        r = this.tpuRow(m);
        if (r < 0) continue;
        // tpuRow cached the metadata's FLOPs and bytes by id (ids past the cache: looked up).
        if (m >= 0 && m < this.flopsOfMeta.length) { f = this.flopsOfMeta[m]; b = this.bytesOfMeta[m]; }
        else { const info = this.meta?.get(m); f = finiteOr0(info?.flops); b = finiteOr0(info?.bytes); }
        const dOff = l.devOffsetPs[i], dDur = l.devDurationPs[i];
        if (dOff === dOff && dDur === dDur) { o = dOff; d = dDur; }
      } else {
        if (l.op[i] < 0) continue;
        r = this.kernelRow(p, l, i);
        if (r < 0) continue;
        const info = l.flops[i] === l.flops[i] && l.bytes[i] === l.bytes[i] ? undefined : this.meta?.get(l.metaId[i]);
        f = finiteOr0(l.flops[i] === l.flops[i] ? l.flops[i] : info?.flops);
        b = finiteOr0(l.bytes[i] === l.bytes[i] ? l.bytes[i] : info?.bytes);
      }
      fl[k] = f; by[k] = b;
      if (k && (o < off[k - 1] || (o === off[k - 1] && d > dur[k - 1]))) sorted = false;
      idx[k] = i; off[k] = o; dur[k] = d; row[k] = r; k++;
    }
    if (k === 0) return;
    const order = sorted ? undefined : this.sortedOrder(k);
    // Self time: a parent's duration less its direct children's, by nesting on the line. GPU kernels do not nest
    // (a line may still show two streams' kernels overlapping): each is its own self time, as xprof counts them.
    const nest = tpu || !this.isDevice;
    let top = 0;
    for (let j = 0; j < k; j++) {
      const q = order ? order[j] : j;
      while (top && this.stackEnd[top - 1] <= off[q]) top = this.pop(top);
      if (top === this.stackI.length) {
        this.stackI = grown(this.stackI, top + 1);
        this.stackEnd = grown(this.stackEnd, top + 1);
        this.stackChild = grown(this.stackChild, top + 1);
      }
      this.stackI[top] = q;
      this.stackEnd[top] = off[q] + dur[q];
      this.stackChild[top++] = 0;
      if (!nest) top = this.pop(top);
    }
    while (top) top = this.pop(top);
  }

  partial(): OpPartial {
    return { rows: this.rows.map((r) => ({ ...r })), acc: this.acc.slice(0, ACC_STRIDE * this.rows.length), hlo: this.hlo, modules: this.modules };
  }

  /** Pops the top of the nesting stack into its row; returns the new depth. */
  private pop(top: number): number {
    const t = top - 1;
    const q = this.stackI[t];
    const d = this.dur[q];
    const self = d > this.stackChild[t] ? d - this.stackChild[t] : 0;
    if (t) this.stackChild[t - 1] += d;
    const a = ACC_STRIDE * this.row[q];
    const acc = this.acc;
    acc[a]++;
    addExact(acc, a + 1, d);
    addExact(acc, a + 3, self);
    addExact(acc, a + 5, this.fl[q]);
    addExact(acc, a + 7, this.by[q]);
    return t;
  }

  /**
   * The first k collected events in start order, longer first on equal starts. Lines are nearly sorted (the
   * device clock reorders a few neighbours): insertion sort, which is linear then; a line far from sorted
   * (over 8 moves per event) falls back to a comparison sort.
   */
  private sortedOrder(k: number): Uint32Array {
    const { off, dur } = this;
    const o = this.ord.subarray(0, k);
    for (let j = 0; j < k; j++) o[j] = j;
    const before = (a: number, b: number): boolean => off[a] < off[b] || (off[a] === off[b] && dur[a] > dur[b]);
    let moves = 0;
    for (let j = 1; j < k; j++) {
      const x = o[j];
      let m = j - 1;
      while (m >= 0 && before(x, o[m])) { o[m + 1] = o[m]; m--; moves++; }
      o[m + 1] = x;
      if (moves > 8 * k) {
        for (let z = 0; z < k; z++) o[z] = z;
        return o.sort((a, b) => off[a] - off[b] || dur[b] - dur[a]);
      }
    }
    return o;
  }

  private moduleNames(l: LineView): void {
    for (let i = 0; i < l.count; i++) {
      const name = this.meta?.get(l.metaId[i])?.name;
      const m = name ? /^(.*)\((\d+)\)$/.exec(name) : null;
      if (m) this.modules[m[2]] ??= m[1];
    }
  }

  private tpuRow(metaId: number): number {
    if (metaId >= 0 && metaId < this.rowOfMeta.length && this.rowOfMeta[metaId] >= 0) return this.rowOfMeta[metaId];
    const info: EventInfo | undefined = this.meta?.get(metaId);
    if (!info) return -1;
    const name = info.displayName || info.name;
    const r = this.rowFor(info.program ?? '', name, '', info.category ?? '', false, false);
    if (metaId >= 0 && metaId < 1 << 24) {
      this.rowOfMeta = grown(this.rowOfMeta, metaId + 1, -1);
      this.flopsOfMeta = grown(this.flopsOfMeta, metaId + 1);
      this.bytesOfMeta = grown(this.bytesOfMeta, metaId + 1);
      this.rowOfMeta[metaId] = r;
      this.flopsOfMeta[metaId] = finiteOr0(info.flops);
      this.bytesOfMeta[metaId] = finiteOr0(info.bytes);
    }
    return r;
  }

  private kernelRow(p: PlaneView, l: LineView, i: number): number {
    const opK = l.op[i];
    const progK = l.program[i];
    const cacheKey = opK * 16777216 + (progK + 1);
    const cached = this.rowOfKernel.get(cacheKey);
    if (cached !== undefined && this.rows[cached].host === !this.isDevice) return cached;
    const s = p.strings;
    const catK = l.category[i];
    const info = this.meta?.get(l.metaId[i]);
    const category = catK >= 0 ? s[catK] : info?.category ?? '';
    const op = s[opK];
    const last = op.lastIndexOf('::');
    const r = this.rowFor(progK >= 0 ? s[progK] : '', last < 0 ? op : op.slice(last + 2), l.module[i] >= 0 ? s[l.module[i]] : '', category, !this.isDevice, this.isDevice);
    if (opK < 1 << 24 && progK < (1 << 24) - 1) this.rowOfKernel.set(cacheKey, r);
    return r;
  }

  private rowFor(program: string, name: string, module: string, category: string, host: boolean, kernel: boolean): number {
    const key = `${host ? 'h' : 'd'}${program}\u0000${name}`;
    let r = this.index.get(key);
    if (r === undefined) {
      r = this.rows.length;
      this.rows.push({ program, name, module, category, host, kernel });
      this.acc = grown(this.acc, ACC_STRIDE * (r + 1));
      this.index.set(key, r);
    } else if (!this.rows[r].category && category) this.rows[r].category = category;
    return r;
  }
}

/**
 * The op table of several partials (threads, or the captures of one host): rows merged by (program, name),
 * categories and module names resolved from any partial's HLO, host rows kept only when no device ran an op.
 */
export function mergeOps(parts: readonly OpPartial[], unattributed?: UnattributedKernels): OpRow[] {
  const hlo: OpPartial['hlo'] = {};
  const modules: OpPartial['modules'] = {};
  for (const p of parts) {
    Object.assign(hlo, p.hlo);
    for (const [k, v] of Object.entries(p.modules)) modules[k] ??= v;
  }
  const anyDevice = parts.some((p) => p.rows.some((r) => !r.host));
  const out: OpRow[] = [];
  const index = new Map<string, number>();
  // Exact sums (addExact) of the parts' exact sums, made µs once at the end, so that the table does not depend on
  // how the planes were split between threads: total ps, self ps, flops, bytes, a hi/lo pair each.
  let sums = new Float64Array(8 * 256);
  const unattributedPs = new Float64Array(2);
  const S = ACC_STRIDE;
  for (const p of parts) {
    p.rows.forEach((r, k) => {
      if (r.host && anyDevice) return;
      const a = p.acc;
      const program = hlo[r.program];
      if (r.kernel && program && !program.has(r.name)) {
        if (unattributed) {
          unattributed.count += a[S * k];
          unattributedPs[0] += a[S * k + 3];
          unattributedPs[1] += a[S * k + 4];
          unattributed.names[r.name] = (unattributed.names[r.name] ?? 0) + a[S * k];
        }
        return;
      }
      const key = `${r.program}\u0000${r.name}`;
      let j = index.get(key);
      if (j === undefined) {
        const category = r.category || hlo[r.program]?.get(r.name) || categoryFromName(r.name);
        j = out.length;
        out.push({ program: r.program, name: r.name, module: r.module || modules[r.program] || '', category, count: 0, selfUs: 0, totalUs: 0, flops: 0, bytes: 0, intensity: 0, boundBy: '' });
        index.set(key, j);
        sums = grown(sums, 8 * (j + 1));
      }
      out[j].count += a[S * k];
      for (let m = 0; m < 8; m++) sums[8 * j + m] += a[S * k + 1 + m];
    });
  }
  out.forEach((row, j) => {
    row.totalUs = exactTotal(sums, 8 * j) / 1e6;
    row.selfUs = exactTotal(sums, 8 * j + 2) / 1e6;
    row.flops = exactTotal(sums, 8 * j + 4);
    row.bytes = exactTotal(sums, 8 * j + 6);
  });
  if (unattributed) unattributed.selfUs += exactTotal(unattributedPs, 0) / 1e6;
  return out.sort((a, b) => b.selfUs - a.selfUs);
}
