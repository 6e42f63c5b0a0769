/**
 * Fuzzy matching for completion and did-you-mean. Small enough to own: a subsequence scorer in the spirit of VS
 * Code's (prefix and word-start matches score higher) and a bounded edit distance.
 */

/** Higher is better; undefined when `query` is not a subsequence of `candidate`. Case-insensitive. */
export function fuzzyScore(query: string, candidate: string): number | undefined {
  if (query === '') return 0;
  const q = query.toLowerCase();
  const c = candidate.toLowerCase();
  if (c.startsWith(q)) return 10_000 - c.length;
  const sub = c.indexOf(q);
  if (sub >= 0) return 5_000 - sub - c.length + (c[sub - 1] === '_' ? 500 : 0);
  let score = 0;
  let ci = 0;
  let prev = -2;
  for (const ch of q) {
    const at = c.indexOf(ch, ci);
    if (at < 0) return undefined;
    // Contiguous runs and matches at the start of a `_`-separated word are what people type.
    if (at === prev + 1) score += 5;
    if (at === 0 || c[at - 1] === '_' || c[at - 1] === '.' || c[at - 1] === '-') score += 10;
    score -= at - ci;
    prev = at;
    ci = at + 1;
  }
  return score;
}

/** Levenshtein distance, giving up (returning max + 1) once it must exceed `max`. */
export function editDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const v = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      cur.push(v);
      if (v < rowMin) rowMin = v;
    }
    if (rowMin > max) return max + 1;
    prev = cur;
  }
  return prev[b.length];
}

/** Up to `limit` candidates close to `word`, best first: small edit distance, or the same words in any order. */
export function didYouMean(word: string, candidates: Iterable<string>, limit = 3): string[] {
  const max = Math.max(2, Math.floor(word.length / 4));
  const words = new Set(word.toLowerCase().split(/[_.\-/]/).filter(Boolean));
  const scored: { c: string; d: number }[] = [];
  for (const c of candidates) {
    let d = editDistance(word.toLowerCase(), c.toLowerCase(), max);
    if (d > max && words.size > 1) {
      // `xla_tpu_fusion_enable_async` for `xla_tpu_enable_async_fusion`: same words, other order.
      const cw = c.toLowerCase().split(/[_.\-/]/).filter(Boolean);
      if (cw.length === words.size && cw.every((w) => words.has(w))) d = max;
    }
    if (d <= max) scored.push({ c, d });
  }
  scored.sort((x, y) => x.d - y.d || x.c.localeCompare(y.c));
  return scored.slice(0, limit).map((s) => s.c);
}
