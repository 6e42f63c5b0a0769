/**
 * Where each row of the log pane starts, in screen lines: one line per row, or, with Wrap on, as many as its
 * text needs at the pane's width (in a monospace font that is its length over the characters a line holds). The
 * pane stays virtual either way: it scrolls over screen lines and draws only the rows they land on. Kept as a
 * prefix sum that grows with appended rows (a million rows cost one pass when Wrap is turned on, then only the
 * new ones); a filter or width change starts it again. No DOM here: unit-tested in Node.
 */
export class WrapLayout {
  private starts = new Float64Array(1025);
  private count = 0;
  /** Characters per screen line; 0: no wrapping (every row one line). */
  private cols = 0;

  /** Screen lines a text of `length` characters takes at `cols` characters a line (0: no wrapping). */
  static linesOf(length: number, cols: number): number {
    return cols > 0 ? Math.max(1, Math.ceil(length / cols)) : 1;
  }

  get wrapping(): boolean {
    return this.cols > 0;
  }

  /** Wrap at `cols` characters a line (0: off); the layout is made again when it changes. */
  setCols(cols: number): void {
    const c = Math.max(0, Math.floor(cols));
    if (c === this.cols) return;
    this.cols = c;
    this.count = 0;
  }

  /** The rows changed other than by appending (a filter): laid out again on the next update. */
  reset(): void {
    this.count = 0;
  }

  /** Lays out rows up to `rows` (those laid out already are kept); `lengthOf(r)` is row r's text length. */
  update(rows: number, lengthOf: (r: number) => number): void {
    if (rows < this.count) this.count = 0;
    if (rows + 1 > this.starts.length) {
      let cap = this.starts.length;
      while (cap < rows + 1) cap *= 2;
      const next = new Float64Array(cap);
      next.set(this.starts.subarray(0, this.count + 1));
      this.starts = next;
    }
    for (let r = this.count; r < rows; r++) this.starts[r + 1] = this.starts[r] + WrapLayout.linesOf(lengthOf(r), this.cols);
    this.count = rows;
  }

  /** Screen lines of every row laid out. */
  get total(): number {
    return this.starts[this.count];
  }

  /** The screen line row `r` starts on. */
  startOf(r: number): number {
    return this.starts[Math.max(0, Math.min(r, this.count))];
  }

  linesOfRow(r: number): number {
    return this.startOf(r + 1) - this.startOf(r);
  }

  /** The row screen line `line` is in (the last row for a line past the end). */
  rowAt(line: number): number {
    let lo = 0;
    let hi = this.count - 1;
    if (hi < 0) return 0;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid] <= line) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }
}
