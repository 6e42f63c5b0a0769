/**
 * The union of many intervals that arrive as sorted runs: the device-busy intervals of a capture, one run per
 * XLine (a line's intervals come sorted by start and already merged along it).
 *
 * Why runs and not one sort at the end: a 200 MB capture has ~440,000 busy intervals over ~1,800 lines, and
 * sorting them all (starts and ends) took ~8% of the analysis. Runs are merged pairwise as they come, the way a
 * merge sort merges its runs (the run below is kept more than twice as long as the one above it, so every
 * interval takes part in O(log n) linear merges), and a merge that overlaps shrinks: many lines that cover the
 * same busy time (threads of one device, planes of a repeated capture) stay one short run.
 */
import { grown } from './xplane';

/** What a union starts with: nothing allocated (there is one per device plane, and a repeated capture has thousands). */
const NONE = new Float64Array(0);

export class IntervalUnion {
  private s = NONE;
  private e = NONE;
  private n = 0;
  /** Start index of each run on the stack; the open run (being appended to) starts at `open`. */
  private readonly runs: number[] = [];
  private open = 0;
  private tmpS = NONE;
  private tmpE = NONE;

  /** Appends [s, e) to the open run: it must start after the run's last interval ends. */
  push(s: number, e: number): void {
    if (this.n === this.s.length) {
      this.s = grown(this.s, Math.max(64, this.n + 1));
      this.e = grown(this.e, Math.max(64, this.n + 1));
    }
    this.s[this.n] = s;
    this.e[this.n++] = e;
  }

  /** Closes the open run (an empty one is dropped) and merges runs while the one below is not more than twice as long. */
  endRun(): void {
    if (this.n > this.open) {
      this.runs.push(this.open);
      while (this.runs.length >= 2) {
        const top = this.runs[this.runs.length - 1];
        const below = this.runs[this.runs.length - 2];
        if (top - below > 2 * (this.n - top)) break;
        this.mergeTop();
      }
    }
    this.open = this.n;
  }

  /** Appends a whole run given flat [s0, e0, s1, e1, ...], sorted and disjoint (another union's result). */
  pushRun(flat: ArrayLike<number>): void {
    for (let k = 0; k + 1 < flat.length; k += 2) this.push(flat[k], flat[k + 1]);
    this.endRun();
  }

  /** The union, flat [s0, e0, s1, e1, ...], sorted; touching intervals are merged. */
  result(): Float64Array {
    this.endRun();
    while (this.runs.length >= 2) this.mergeTop();
    const out = new Float64Array(2 * this.n);
    for (let k = 0; k < this.n; k++) {
      out[2 * k] = this.s[k];
      out[2 * k + 1] = this.e[k];
    }
    return out;
  }

  /** Merges the top two runs, [a, b) and [b, n), into one at a. */
  private mergeTop(): void {
    const b = this.runs.pop() as number;
    const a = this.runs[this.runs.length - 1];
    const { s, e } = this;
    const end = this.n;
    if (this.tmpS.length < end - a) {
      this.tmpS = new Float64Array(end - a);
      this.tmpE = new Float64Array(end - a);
    }
    const ts = this.tmpS;
    const te = this.tmpE;
    let i = a;
    let j = b;
    let m = 0;
    let cs = NaN;
    let ce = NaN;
    while (i < b || j < end) {
      let xs: number;
      let xe: number;
      if (j >= end || (i < b && s[i] <= s[j])) { xs = s[i]; xe = e[i++]; }
      else { xs = s[j]; xe = e[j++]; }
      if (xs <= ce) { if (xe > ce) ce = xe; }
      else {
        if (ce === ce) { ts[m] = cs; te[m++] = ce; }
        cs = xs;
        ce = xe;
      }
    }
    if (ce === ce) { ts[m] = cs; te[m++] = ce; }
    s.set(ts.subarray(0, m), a);
    e.set(te.subarray(0, m), a);
    this.n = a + m;
    this.open = this.n;
  }
}
