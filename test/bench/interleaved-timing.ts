import { performance } from 'node:perf_hooks';

/**
 * Variants of one task timed rep by rep in rotating order (so drift on the machine hits them all alike), their
 * statistics, and the markdown tables of medians and ours/peer ratios that fanout.bench.ts prints.
 */

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  // Nearest rank: p90 of 15 samples is the 14th, an observed value.
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
  return sorted[rank - 1];
}

export interface Stats {
  n: number;
  medianMs: number;
  p90Ms: number;
  minMs: number;
  maxMs: number;
  samplesMs: number[];
}

function stats(samples: number[]): Stats {
  const s = [...samples].sort((a, b) => a - b);
  const r = (x: number) => Math.round(x * 10) / 10;
  return { n: s.length, medianMs: r(quantile(s, 0.5)), p90Ms: r(quantile(s, 0.9)), minMs: r(s[0]), maxMs: r(s[s.length - 1]), samplesMs: samples.map(r) };
}

async function timed(fn: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

export interface Variant {
  name: string;
  kind: 'ours' | 'peer' | 'diagnostic';
  /** Name of the variant this one is compared with (ratio = this / that). */
  vs?: string;
  once: () => Promise<void>;
  samples: number[];
}

/** Runs every variant once per rep, in rotating order, so drift on the machine hits them all alike. */
export async function measure(variants: Variant[], reps: number): Promise<void> {
  for (const v of variants) {
    await v.once(); // warm-up (JIT, first host-key record, page cache): not timed
  }
  for (let i = 0; i < reps; i++) {
    for (let j = 0; j < variants.length; j++) {
      const v = variants[(i + j) % variants.length];
      v.samples.push(await timed(v.once));
      if (process.env.BENCH_VERBOSE) process.stderr.write(`  ${v.name}: ${v.samples[v.samples.length - 1].toFixed(1)} ms\n`);
    }
  }
}

/** Like measure(), but the into-empty variants get their destination emptied (untimed) right before each of their runs. */
export async function measureSync(variants: Variant[], reps: number, emptyFull: (v: Variant) => Promise<void>): Promise<void> {
  const isFull = (v: Variant) => v.name.includes('into empty dest') && v.kind !== 'diagnostic';
  for (const v of variants) {
    if (isFull(v)) await emptyFull(v);
    await v.once();
  }
  for (let i = 0; i < reps; i++) {
    for (let j = 0; j < variants.length; j++) {
      const v = variants[(i + j) % variants.length];
      if (isFull(v)) await emptyFull(v);
      v.samples.push(await timed(v.once));
    }
  }
}

export interface Row {
  bench: string;
  target: string;
  variant: string;
  kind: Variant['kind'];
  stats: Stats;
}

export interface Ratio {
  bench: string;
  target: string;
  ours: string;
  peer: string;
  /** ours median / peer median: below 1 we are faster, above 1 slower. */
  ratio: number;
  /** ours p90 / peer p90. */
  ratioP90: number;
}

export function report(bench: string, target: string, variants: Variant[], extra: Array<[string, string]>, rows: Row[], ratios: Ratio[]): void {
  const by = new Map(variants.map((v) => [v.name, stats(v.samples)]));
  for (const v of variants) rows.push({ bench, target, variant: v.name, kind: v.kind, stats: by.get(v.name)! });
  const pairs: Array<[string, string]> = [...variants.filter((v) => v.vs).map((v): [string, string] => [v.name, v.vs!]), ...extra];
  for (const [a, b] of pairs) {
    const sa = by.get(a);
    const sb = by.get(b);
    if (!sa || !sb) continue;
    const r2 = (x: number) => Math.round(x * 100) / 100;
    ratios.push({ bench, target, ours: a, peer: b, ratio: r2(sa.medianMs / sb.medianMs), ratioP90: r2(sa.p90Ms / sb.p90Ms) });
  }
}

export function markdown(rows: Row[], ratios: Ratio[]): string {
  const esc = (x: string) => x.replace(/\|/g, '\\|');
  const out = ['| bench | target | variant | n | median ms | p90 ms | min ms |', '|---|---|---|---:|---:|---:|---:|'];
  for (const r of rows) out.push(`| ${r.bench} | ${r.target} | ${esc(r.variant)} | ${r.stats.n} | ${r.stats.medianMs.toFixed(1)} | ${r.stats.p90Ms.toFixed(1)} | ${r.stats.minMs.toFixed(1)} |`);
  out.push('', '| bench | target | ours | peer | ours/peer (median) | ours/peer (p90) |', '|---|---|---|---|---:|---:|');
  for (const r of ratios) out.push(`| ${r.bench} | ${r.target} | ${esc(r.ours)} | ${esc(r.peer)} | **${r.ratio.toFixed(2)}** | ${r.ratioP90.toFixed(2)} |`);
  return out.join('\n');
}
