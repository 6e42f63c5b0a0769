/**
 * Whether a capture can have GPU steps by step grouping (step-groups.ts) at all, found from its planes' names and
 * host stat metadata before its events are decoded: only a host plane with a step-root stat (`_r`) gives steps,
 * and a GPU capture has a correlation id on nearly every event, which need not be read when none does.
 */
import type { FileWindow } from './file-window';
import { varintAt, varintEnd as after } from './xplane';

/** The length-delimited field being looked at: number and payload [start, end). */
const f = { field: 0, start: 0, end: 0 };

/**
 * Whether the plane at [start, end) is the host's and has a step-root stat (`_r`) in its stat metadata, or is a
 * TPU's (its host is grouped otherwise: grouping reads as before). The plane's name comes first, read through the
 * top-level window `w`; a host plane's metadata lies together after its lines, and is read through `hw` in one
 * read of just its size. Anything it cannot read answers true: the full decode then reports the fault where it lies.
 */
export function hostRoots(w: FileWindow, hw: FileWindow, start: number, end: number): boolean {
  try {
    let host = false;
    let root = false;
    for (let off = start; off < end;) {
      const at = off;
      const tag = w.varint(off);
      const wire = tag & 7;
      if (wire === 0) { w.varint(w.next); off = w.next; continue; }
      if (wire === 1 || wire === 5) { off = w.next + (wire === 1 ? 8 : 4); continue; }
      if (wire !== 2) return true;
      const len = w.varint(w.next);
      f.field = tag >>> 3; f.start = w.next; f.end = f.start + len;
      if (f.end > end) return true;
      off = f.end;
      if (f.field === 2) {
        const name = w.bytes(f.start, f.end - f.start);
        // A TPU capture: step grouping skips its host once a TPU plane was seen (step-groups.ts); not read here.
        if (startsWith(name, TPU_PLANE)) return true;
        if (!startsWith(name, HOST_PLANE) || name.length !== HOST_PLANE.length) return false;
        host = true;
      } else if (host && (f.field === 4 || f.field === 5) && end - at <= 16 << 20) {
        // The rest of the plane, its metadata (together after its lines), in one read and parsed in place.
        return root || namesRootStat(hw.exactBytes(at, end - at), 0, end - at, -1);
      } else if (f.field === 5 && !root) root = namesRootStat(w.bytes(f.start, f.end - f.start));
      if (host && root) return true;
    }
    return false;
  } catch {
    return true;
  }
}

const HOST_PLANE = new TextEncoder().encode('/host:CPU');
const TPU_PLANE = new TextEncoder().encode('/device:TPU:');

function startsWith(a: Uint8Array, prefix: Uint8Array): boolean {
  if (a.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (a[i] !== prefix[i]) return false;
  return true;
}

/**
 * Whether a stat_metadata map entry (key 1, value 2: XStatMetadata with name 2) names `_r`; depth −1: whether
 * any of a run of plane fields does (stat_metadata is field 5). An unknown wire type answers true.
 */
function namesRootStat(b: Uint8Array, from = 0, to = b.length, depth = 0): boolean {
  for (let pos = from; pos < to;) {
    const tag = varintAt(b, pos);
    pos = after;
    const wire = tag & 7;
    if (wire === 0) { varintAt(b, pos); pos = after; continue; }
    if (wire === 1 || wire === 5) { pos += wire === 1 ? 8 : 4; continue; }
    if (wire !== 2) return true;
    const n = varintAt(b, pos);
    pos = after;
    if (tag >>> 3 === (depth < 0 ? 5 : 2)) {
      if (depth === 1) return n === 2 && b[pos] === 0x5f && b[pos + 1] === 0x72;
      if (namesRootStat(b, pos, Math.min(pos + n, to), depth + 1)) return true;
    }
    pos += n;
  }
  return false;
}
