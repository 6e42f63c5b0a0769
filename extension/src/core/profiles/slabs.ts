/**
 * Typed-array columns cut from a few large buffers ("slabs") instead of one allocation per column.
 *
 * Why: the timeline keeps four columns per XLine, and a 200 MB capture has ~1,800 lines. Allocating each column
 * on its own (a zero-filled, page-faulted buffer, counted as external memory by the GC) was 40% of the
 * analysis pass. Columns cut from slabs also cross threads and postMessage as a few dozen buffers, not
 * thousands. One ColumnSlabs serves every chunk a thread analyzes; the columns stay valid as long as anyone
 * holds them (a slab is only ever handed out, never reused).
 */

/** Elements of the largest slab; a column longer than a quarter of it gets a buffer of its own. */
const SLAB = 1 << 18;
/** Elements of the first slab: slabs double up to SLAB, so a small profile takes little more than it needs. */
const FIRST_SLAB = 1 << 12;

class Slab<T extends Float64Array | Int32Array | Uint8Array> {
  private buf: T | undefined;
  private used = 0;
  private next = FIRST_SLAB;

  constructor(private readonly make: (n: number) => T) {}

  take(n: number): T {
    if (n > SLAB / 4) return this.make(n);
    if (!this.buf || this.used + n > this.buf.length) {
      while (this.next < n) this.next *= 2;
      this.buf = this.make(this.next);
      this.used = 0;
      this.next = Math.min(SLAB, this.next * 2);
    }
    const view = this.buf.subarray(this.used, this.used + n) as T;
    this.used += n;
    return view;
  }
}

export class ColumnSlabs {
  readonly f64 = new Slab((n) => new Float64Array(n));
  readonly i32 = new Slab((n) => new Int32Array(n));
  readonly u8 = new Slab((n) => new Uint8Array(n));
}
