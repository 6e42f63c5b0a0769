/**
 * XSpace → Chrome trace event JSON (the format Perfetto and chrome://tracing open), written as a stream so a
 * capture with millions of events never becomes one giant string.
 */
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import type { XSpaceData } from './xplane';

/** Writes `space` to `file`; returns the number of trace events written. */
export async function writeChromeTrace(space: XSpaceData, file: string): Promise<number> {
  const out = createWriteStream(file, { encoding: 'utf8' });
  let buffered: string[] = [];
  let size = 0;
  let count = 0;
  const push = async (s: string): Promise<void> => {
    buffered.push(s);
    size += s.length;
    if (size < 1 << 20) return;
    const chunk = buffered.join('');
    buffered = [];
    size = 0;
    if (!out.write(chunk)) await once(out, 'drain');
  };
  let t0 = Infinity;
  for (const p of space.planes) for (const l of p.lines) for (let i = 0; i < l.count; i++) t0 = Math.min(t0, l.timestampNs + l.offsetPs[i] / 1000);
  if (!Number.isFinite(t0)) t0 = 0;
  await push('{"displayTimeUnit":"ns","traceEvents":[');
  let first = true;
  const sep = (): string => (first ? ((first = false), '') : ',\n');
  for (let pid = 0; pid < space.planes.length; pid++) {
    const plane = space.planes[pid];
    await push(`${sep()}{"ph":"M","name":"process_name","pid":${pid},"args":{"name":${JSON.stringify(plane.name)}}}`);
    for (let tid = 0; tid < plane.lines.length; tid++) {
      const line = plane.lines[tid];
      await push(`${sep()}{"ph":"M","name":"thread_name","pid":${pid},"tid":${tid},"args":{"name":${JSON.stringify(line.displayName || line.name)}}}`);
      // Names repeat millions of times: quote each once.
      const quoted = new Map<number, string>();
      for (let i = 0; i < line.count; i++) {
        let name = quoted.get(line.metaId[i]);
        if (name === undefined) {
          name = JSON.stringify(plane.eventMeta.get(line.metaId[i])?.name ?? `event#${line.metaId[i]}`);
          quoted.set(line.metaId[i], name);
        }
        const ts = ((line.timestampNs - t0) + line.offsetPs[i] / 1000) / 1000;
        await push(`${sep()}{"ph":"X","pid":${pid},"tid":${tid},"name":${name},"ts":${ts.toFixed(3)},"dur":${(line.durationPs[i] / 1e6).toFixed(3)}}`);
        count++;
      }
    }
  }
  await push(']}\n');
  out.end(buffered.join(''));
  await once(out, 'finish');
  return count;
}
