/**
 * Live metrics of a running run: each worker's `~/.tpw/runs/<id>/output/metrics.jsonl`, read from where the
 * previous read stopped, one short exec per worker per poll over the run's shared SSH connection. Only whole
 * lines are handed out (the trainer may be half-way through writing one); the rest waits for the next poll.
 * A file that shrank was written anew (a resumed run starting its file over): it is read again from the start.
 */
import { checkMetricRecord, type MetricRecord } from '../../../../protocol/metrics-record';
import { bashCommand } from '../ssh/quote';
import { runDirWord } from '../ssh/run-dir';
import type { ConnectionManager } from '../ssh/connection';
import { execCollectRaw } from '../ssh/exec';
import type { WorkerTarget } from '../ssh/types';

/** At most this much of a worker's file per poll: a long run's file catches up over a few polls. */
const MAX_BYTES_PER_POLL = 4 << 20;

interface WorkerCursor {
  offset: number;
  partial: Buffer;
}

/**
 * Parses whole lines into records checked against the metrics record's schema (protocol/); a line that is
 * not JSON (a torn line, a diverged step's NaN) or does not fit the schema is skipped. `worker` tags records
 * that do not say which worker wrote them.
 */
export function parseMetricsLines(text: string, worker?: number): MetricRecord[] {
  const out: MetricRecord[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      continue; // not a metrics line
    }
    const { record } = checkMetricRecord(value);
    if (record) out.push(worker === undefined || record.worker !== undefined ? record : { ...record, worker });
  }
  return out;
}

export class MetricsTail {
  private readonly cursors = new Map<number, WorkerCursor>();

  constructor(
    private readonly runId: string,
    private readonly workers: readonly WorkerTarget[],
    private readonly conns: ConnectionManager,
    private readonly runsRoot?: string | ((w: WorkerTarget) => string),
  ) {
    // Validates the id once, before any command is built from it.
    runDirWord(runId);
  }

  /** Bytes of the worker's file read so far (a torn last line included: it is kept until its end arrives). */
  offset(worker: number): number {
    return this.cursors.get(worker)?.offset ?? 0;
  }

  /**
   * The lines written since the last poll, every worker's, tagged with its index. A worker that cannot be
   * reached, or has no file yet, adds nothing this time and is asked again next time.
   */
  async poll(): Promise<MetricRecord[]> {
    const got = await Promise.all(this.workers.map((w) => this.pollWorker(w).catch(() => [] as MetricRecord[])));
    return got.flat();
  }

  private async pollWorker(w: WorkerTarget): Promise<MetricRecord[]> {
    const cur = this.cursors.get(w.index) ?? { offset: 0, partial: Buffer.alloc(0) };
    this.cursors.set(w.index, cur);
    const root = typeof this.runsRoot === 'function' ? this.runsRoot(w) : this.runsRoot;
    const file = `${runDirWord(this.runId, root)}/output/metrics.jsonl`;
    // First line: the file's size and the offset the bytes start at (0 when the file shrank); then the bytes.
    const script = [
      `f=${file}`,
      `s=$(stat -c %s -- "$f" 2>/dev/null) || exit 3`,
      `o=${cur.offset}`,
      `[ "$s" -lt "$o" ] && o=0`,
      `n=$((s - o)); [ "$n" -gt ${MAX_BYTES_PER_POLL} ] && n=${MAX_BYTES_PER_POLL}`,
      `echo "$s $o"`,
      `[ "$n" -gt 0 ] && tail -c +$((o + 1)) -- "$f" | head -c "$n"`,
      'exit 0',
    ].join('\n');
    const out = await execCollectRaw(await this.conns.get(w), bashCommand(script));
    if (out.code !== 0) return [];
    const nl = out.stdout.indexOf(0x0a);
    if (nl < 0) return [];
    const [, from] = out.stdout.subarray(0, nl).toString('utf8').trim().split(' ').map(Number);
    if (!Number.isFinite(from)) return [];
    if (from !== cur.offset) {
      cur.offset = from;
      cur.partial = Buffer.alloc(0);
    }
    const bytes = out.stdout.subarray(nl + 1);
    const data = cur.partial.length ? Buffer.concat([cur.partial, bytes]) : bytes;
    const end = data.lastIndexOf(0x0a) + 1;
    cur.partial = Buffer.from(data.subarray(end));
    cur.offset += bytes.length;
    return end > 0 ? parseMetricsLines(data.subarray(0, end).toString('utf8'), w.index) : [];
  }
}
