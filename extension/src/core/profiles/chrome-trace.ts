/**
 * XSpace → Chrome trace event JSON (the format Perfetto and chrome://tracing open), written in 1 MB pieces so a
 * capture with millions of events never becomes one giant string. A file is streamed twice (the first pass
 * only finds the earliest event, which timestamps are relative to), so it is never held whole either.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { streamXSpaceFile, type StreamOptions } from './stream';
import { visitXSpace, type LineView, type PlaneView, type XSpaceVisitor } from './view';
import type { XSpaceData } from './xplane';

/** Earliest event start (ns) over all lines. */
class FirstEvent implements XSpaceVisitor {
  t0 = Infinity;
  plane(): void {}
  line(_p: PlaneView, l: LineView): void {
    for (let i = 0; i < l.count; i++) this.t0 = Math.min(this.t0, l.timestampNs + l.offsetPs[i] / 1000);
  }
}

class TraceWriter implements XSpaceVisitor {
  count = 0;
  private buffered: string[] = [];
  private size = 0;
  private first = true;
  private tid = 0;

  constructor(private readonly fd: number, private readonly t0: number) {
    this.push('{"displayTimeUnit":"ns","traceEvents":[');
  }

  plane(p: PlaneView): void {
    this.tid = 0;
    this.push(`${this.sep()}{"ph":"M","name":"process_name","pid":${p.index},"args":{"name":${JSON.stringify(p.name)}}}`);
  }

  line(p: PlaneView, l: LineView): void {
    const pid = p.index;
    const tid = this.tid++;
    this.push(`${this.sep()}{"ph":"M","name":"thread_name","pid":${pid},"tid":${tid},"args":{"name":${JSON.stringify(l.displayName || l.name)}}}`);
    // Names repeat millions of times: quote each once.
    const quoted = new Map<number, string>();
    for (let i = 0; i < l.count; i++) {
      let name = quoted.get(l.metaId[i]);
      if (name === undefined) {
        name = JSON.stringify(p.meta.get(l.metaId[i])?.name ?? `event#${l.metaId[i]}`);
        quoted.set(l.metaId[i], name);
      }
      const ts = ((l.timestampNs - this.t0) + l.offsetPs[i] / 1000) / 1000;
      this.push(`${this.sep()}{"ph":"X","pid":${pid},"tid":${tid},"name":${name},"ts":${ts.toFixed(3)},"dur":${(l.durationPs[i] / 1e6).toFixed(3)}}`);
      this.count++;
    }
  }

  end(): void {
    this.push(']}\n');
    this.flush();
  }

  private sep(): string {
    if (!this.first) return ',\n';
    this.first = false;
    return '';
  }

  private push(s: string): void {
    this.buffered.push(s);
    this.size += s.length;
    if (this.size >= 1 << 20) this.flush();
  }

  private flush(): void {
    writeSync(this.fd, this.buffered.join(''));
    this.buffered = [];
    this.size = 0;
  }
}

function write(out: string, walk: (v: XSpaceVisitor) => void): number {
  const first = new FirstEvent();
  walk(first);
  const fd = openSync(out, 'w');
  try {
    const w = new TraceWriter(fd, Number.isFinite(first.t0) ? first.t0 : 0);
    walk(w);
    w.end();
    return w.count;
  } finally {
    closeSync(fd);
  }
}

/** Writes a decoded `space` to `file`; returns the number of trace events written. */
export async function writeChromeTrace(space: XSpaceData, file: string): Promise<number> {
  return write(file, (v) => visitXSpace(space, v));
}

/** Streams the profile `src` to Chrome trace JSON in `out` (what the extension's worker runs); returns the event count. */
export function exportChromeTraceFile(src: string, out: string, opts?: StreamOptions): number {
  return write(out, (v) => streamXSpaceFile(src, v, opts));
}
