import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * What an emulated worker's TPU chips are doing, read off the programs that run on it: an emulated worker has no
 * chips, so its "TPU" is the CPU its trainer processes use. This is the model behind the worker's libtpu metrics
 * service (libtpu-metrics.ts); it knows nothing of gRPC.
 *
 * - The trainer processes are the worker's processes (found by the marker every program it started carries in
 *   its environment) whose program is a Python interpreter. One process drives every chip of the host (as one
 *   SPMD process per host does); with several, chip c belongs to process c mod n.
 * - Duty cycle: the CPU time the chip's process used over the sampling window, per second of wall time, as a
 *   percentage of one core (capped at 100). Zero with no trainer.
 * - HBM in use: the process's resident memory, shared equally by the chips it drives (capped at the chip's HBM).
 * - HBM bandwidth: half the duty cycle: a model (a CPU process has no memory-bandwidth counter one could read).
 * - Idle duration: seconds since the chip's last window with any work (counted from the model's start).
 * - HLO queue: the chip's process's threads that are running or runnable now.
 * - HLO execution time: each busy window is one "execution" as long as the CPU time it used, in microseconds,
 *   into an exponential-bucket distribution.
 */

export interface ChipSpec {
  chips: number;
  hbmBytesPerChip: number;
}

export interface ChipNow {
  chip: number;
  dutyCyclePct: number;
  hbmUsedBytes: number;
  hbmTotalBytes: number;
  hbmBandwidthPct: number;
  idleSeconds: number;
  queueSize: number;
  exec: ExecDistribution;
}

export interface ExecDistribution {
  count: number;
  mean: number;
  min: number;
  max: number;
  sumOfSquaredDeviation: number;
  /** Bucket 0 is below `scale`; bucket i ≥ 1 holds [scale·growth^(i-1), scale·growth^i). */
  buckets: number[];
}

export const EXEC_BUCKETS = { scale: 1, growthFactor: 2, numFiniteBuckets: 32 } as const;

/** A window shorter than this gives rates too noisy to show: requests within it read the previous window. */
const MIN_WINDOW_MS = 400;
/** The first request waits this long for a window to measure over. */
const FIRST_WINDOW_MS = 250;
/** CPU use below this share of a core in a window is not "work" (a Python process idling in a poll loop). */
const BUSY_SHARE = 0.01;

const CLOCK_TICKS = 100; // USER_HZ on Linux
const PAGE_BYTES = 4096;

interface ProcSample {
  pid: number;
  cpuTicks: number;
  rssBytes: number;
  runnable: number;
}

interface Sample {
  at: number;
  procs: ProcSample[];
}

/** Pid → whether it is one of this marker's Python programs; a pid is checked once (its environment does not change). */
const checked = new Map<string, boolean>();

function isTrainer(pid: string, starttime: string, needle: Buffer): boolean {
  const key = `${pid}:${starttime}:${needle.toString('latin1')}`;
  const known = checked.get(key);
  if (known !== undefined) return known;
  let mine = false;
  try {
    const environ = fs.readFileSync(`/proc/${pid}/environ`);
    if (Buffer.concat([Buffer.from([0]), environ]).includes(needle)) {
      const argv0 = fs.readFileSync(`/proc/${pid}/cmdline`).toString('utf8').split('\0')[0] ?? '';
      mine = /^python/.test(path.basename(argv0));
    }
  } catch {
    mine = false; // exited meanwhile, or not ours to read
  }
  if (checked.size > 50_000) checked.clear();
  checked.set(key, mine);
  return mine;
}

/** `/proc/<pid>/stat`'s fields after the command name (which may hold spaces and parentheses). */
function statFields(pid: string): string[] | undefined {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

function runnableThreads(pid: string): number {
  let n = 0;
  let tasks: string[];
  try {
    tasks = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return 0;
  }
  for (const t of tasks) {
    const f = statFields(`${pid}/task/${t}`);
    if (f?.[0] === 'R') n++;
  }
  return n;
}

function sampleProcesses(marker: string, envVar: string): Sample {
  const needle = Buffer.from(`\0${envVar}=${marker}\0`);
  const procs: ProcSample[] = [];
  let entries: string[] = [];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    // not Linux: no trainer can be seen, the chips read idle
  }
  for (const pid of entries) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    const f = statFields(pid);
    // After the name: state(0) … utime(11) stime(12) … starttime(19) vsize(20) rss(21).
    if (!f || f.length < 22 || !isTrainer(pid, f[19], needle)) continue;
    procs.push({ pid: Number(pid), cpuTicks: Number(f[11]) + Number(f[12]), rssBytes: Number(f[21]) * PAGE_BYTES, runnable: runnableThreads(pid) });
  }
  procs.sort((a, b) => a.pid - b.pid);
  return { at: Date.now(), procs };
}

function emptyDistribution(): ExecDistribution {
  return { count: 0, mean: 0, min: 0, max: 0, sumOfSquaredDeviation: 0, buckets: new Array<number>(EXEC_BUCKETS.numFiniteBuckets + 2).fill(0) };
}

function bucketOf(us: number): number {
  if (us < EXEC_BUCKETS.scale) return 0;
  const i = 1 + Math.floor(Math.log(us / EXEC_BUCKETS.scale) / Math.log(EXEC_BUCKETS.growthFactor));
  return Math.min(i, EXEC_BUCKETS.numFiniteBuckets + 1);
}

/** Welford's update, so the mean and squared deviation stay exact over a long run. */
function observe(d: ExecDistribution, us: number): void {
  d.count++;
  const delta = us - d.mean;
  d.mean += delta / d.count;
  d.sumOfSquaredDeviation += delta * (us - d.mean);
  d.min = d.count === 1 ? us : Math.min(d.min, us);
  d.max = Math.max(d.max, us);
  d.buckets[bucketOf(us)]++;
}

export class ChipActivity {
  private prev: Sample | undefined;
  private cur: Sample | undefined;
  private pending: Promise<void> | undefined;
  private readonly startedAt = Date.now();
  private readonly lastBusyAt: number[];
  private readonly exec: ExecDistribution[];
  private chipsNow: ChipNow[] = [];

  constructor(
    private readonly spec: ChipSpec,
    private readonly marker: string,
    private readonly envVar: string,
  ) {
    this.lastBusyAt = new Array<number>(spec.chips).fill(this.startedAt);
    this.exec = Array.from({ length: spec.chips }, emptyDistribution);
  }

  get chips(): number {
    return this.spec.chips;
  }

  /** The chips now: measured over the latest window of at least MIN_WINDOW_MS (the first call waits for one). */
  async read(): Promise<ChipNow[]> {
    // A read in progress is waited for by everyone: until the first window is measured there are no chips.
    if (!this.pending && (!this.cur || Date.now() - this.cur.at >= MIN_WINDOW_MS)) this.pending = this.advance().finally(() => (this.pending = undefined));
    if (this.pending) await this.pending;
    return this.chipsNow;
  }

  private async advance(): Promise<void> {
    if (!this.cur) {
      this.cur = sampleProcesses(this.marker, this.envVar);
      await new Promise((r) => setTimeout(r, FIRST_WINDOW_MS));
    }
    this.prev = this.cur;
    this.cur = sampleProcesses(this.marker, this.envVar);
    this.chipsNow = this.measure(this.prev, this.cur);
  }

  private measure(prev: Sample, cur: Sample): ChipNow[] {
    const wallS = Math.max(1e-3, (cur.at - prev.at) / 1000);
    const before = new Map(prev.procs.map((p) => [p.pid, p.cpuTicks]));
    const n = cur.procs.length;
    const out: ChipNow[] = [];
    for (let chip = 0; chip < this.spec.chips; chip++) {
      const proc = n > 0 ? cur.procs[chip % n] : undefined;
      // The chips one process drives share its memory.
      const sharing = n > 0 ? Math.ceil((this.spec.chips - (chip % n)) / n) : 1;
      const cpuS = proc ? Math.max(0, proc.cpuTicks - (before.get(proc.pid) ?? proc.cpuTicks)) / CLOCK_TICKS : 0;
      const share = cpuS / wallS;
      const duty = Math.min(100, share * 100);
      if (share >= BUSY_SHARE) {
        this.lastBusyAt[chip] = cur.at;
        observe(this.exec[chip], cpuS * 1e6);
      }
      out.push({
        chip,
        dutyCyclePct: duty,
        hbmUsedBytes: proc ? Math.min(this.spec.hbmBytesPerChip, Math.round(proc.rssBytes / sharing)) : 0,
        hbmTotalBytes: this.spec.hbmBytesPerChip,
        hbmBandwidthPct: duty / 2,
        idleSeconds: share >= BUSY_SHARE ? 0 : (cur.at - this.lastBusyAt[chip]) / 1000,
        queueSize: proc?.runnable ?? 0,
        exec: { ...this.exec[chip], buckets: [...this.exec[chip].buckets] },
      });
    }
    return out;
  }
}
