import * as fs from 'node:fs';
import type { Readable } from 'node:stream';

/**
 * Container logs as the kubelet keeps them (the CRI format: `<RFC 3339 nano time> <stream> <F|P> <text>` per
 * line), one file per container start, and read back as its /containerLogs endpoint answers: with or without
 * the timestamps, the last N lines, since a time, up to a byte limit, and followed while the container runs.
 */

export class LogWriter {
  private readonly fd: number;
  private partial: Record<'stdout' | 'stderr', string> = { stdout: '', stderr: '' };
  private closed = false;

  constructor(readonly file: string) {
    this.fd = fs.openSync(file, 'a', 0o600);
  }

  attach(stream: Readable, name: 'stdout' | 'stderr'): void {
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      const text = this.partial[name] + chunk;
      const lines = text.split('\n');
      this.partial[name] = lines.pop() ?? '';
      for (const line of lines) this.write(name, 'F', line);
    });
  }

  /** Writes what is left of an unfinished last line; the container has exited. */
  close(): void {
    if (this.closed) return;
    for (const name of ['stdout', 'stderr'] as const) if (this.partial[name]) this.write(name, 'P', this.partial[name]);
    this.closed = true;
    fs.closeSync(this.fd);
  }

  private write(stream: string, tag: 'F' | 'P', text: string): void {
    if (this.closed) return;
    fs.writeSync(this.fd, `${nanoTime()} ${stream} ${tag} ${text}\n`);
  }
}

/** Date's millisecond clock with nanosecond digits from hrtime, so lines in one millisecond still sort. */
function nanoTime(): string {
  const iso = new Date().toISOString(); // 2026-01-02T03:04:05.678Z
  const nanos = String(process.hrtime.bigint() % 1_000_000n).padStart(6, '0');
  return `${iso.slice(0, 23)}${nanos}Z`;
}

export interface LogQuery {
  follow: boolean;
  timestamps: boolean;
  tailLines?: number;
  sinceSeconds?: number;
  sinceTime?: string;
  limitBytes?: number;
}

interface Entry {
  time: string;
  stream: string;
  tag: string;
  text: string;
}

function parseLine(line: string): Entry | undefined {
  const m = /^(\S+) (stdout|stderr) ([FP]) (.*)$/.exec(line);
  return m ? { time: m[1], stream: m[2], tag: m[3], text: m[4] } : undefined;
}

function render(e: Entry, timestamps: boolean): string {
  const body = e.tag === 'F' ? `${e.text}\n` : e.text;
  return timestamps ? `${e.time} ${body}` : body;
}

/**
 * Writes the log `file` to `out` as the query asks; with `follow`, keeps writing new lines until `running()` is
 * false and the file is read to its end, or `signal` aborts (the client went away).
 */
export async function serveLog(file: string, q: LogQuery, out: { write(s: string): boolean }, running: () => boolean, signal: AbortSignal): Promise<void> {
  const since = q.sinceTime ? Date.parse(q.sinceTime) : q.sinceSeconds !== undefined ? Date.now() - q.sinceSeconds * 1000 : undefined;
  let budget = q.limitBytes ?? Number.POSITIVE_INFINITY;
  const emit = (e: Entry): boolean => {
    if (since !== undefined && Date.parse(e.time) < since) return true;
    let s = render(e, q.timestamps);
    if (Buffer.byteLength(s) > budget) s = Buffer.from(s).subarray(0, budget).toString('utf8');
    budget -= Buffer.byteLength(s);
    if (s) out.write(s);
    return budget > 0;
  };
  let offset = 0;
  let carry = '';
  const readNew = (): Entry[] => {
    let size: number;
    try {
      size = fs.statSync(file).size;
    } catch {
      return [];
    }
    if (size <= offset) return [];
    const fd = fs.openSync(file, 'r');
    const buf = Buffer.alloc(size - offset);
    fs.readSync(fd, buf, 0, buf.length, offset);
    fs.closeSync(fd);
    offset = size;
    const lines = (carry + buf.toString('utf8')).split('\n');
    carry = lines.pop() ?? '';
    return lines.map(parseLine).filter((e): e is Entry => e !== undefined);
  };
  let first = readNew();
  if (q.tailLines !== undefined) first = q.tailLines <= 0 ? [] : first.slice(-q.tailLines);
  for (const e of first) if (!emit(e)) return;
  if (!q.follow) return;
  while (!signal.aborted) {
    const wasRunning = running();
    for (const e of readNew()) if (!emit(e)) return;
    if (!wasRunning) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}
