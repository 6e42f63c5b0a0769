/**
 * The parts of the streaming profile decoder that make it fast, each against a plain reference: the byte-string
 * interner, the id table, the union of busy intervals built from runs, and the XEvent loop that reads its fields
 * in place (against the whole-message decoder, which goes through protobufjs's Reader for every field).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import protobuf from 'protobufjs/minimal.js';
import { analyzeProfileFile, analyzeXSpace } from '../../extension/src/core/profiles/analyze';
import { IdTable, Utf8Interner } from '../../extension/src/core/profiles/intern';
import { IntervalUnion } from '../../extension/src/core/profiles/intervals';
import { decodeXSpace, ProfileFormatError } from '../../extension/src/core/profiles/xplane';

/** FNV-1a, 32-bit: the interner's hash, to check the premise of the collision test. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5 | 0;
  for (const b of Buffer.from(s)) h = Math.imul(h ^ b, 0x01000193);
  return h;
}

describe('Utf8Interner', () => {
  it('gives equal bytes one key and different bytes different keys, across growth and hash collisions', () => {
    const t = new Utf8Interner();
    const enc = (s: string): Uint8Array => Buffer.from(`xx${s}yy`);
    const key = (s: string): number => t.intern(enc(s), 2, 2 + Buffer.byteLength(s));
    assert.equal(fnv1a('fusion.1232789'), fnv1a('fusion.1429192'), 'premise: the two names (of one length) collide');
    const names = ['', 'fusion.1232789', 'fusion.1429192', 'dot.1', 'ñandú ∑ 🚀', ...Array.from({ length: 5000 }, (_, k) => `op.${k}`)];
    const keys = names.map(key);
    assert.equal(new Set(keys).size, names.length, 'one key per distinct string');
    assert.deepEqual(names.map(key), keys, 'the same keys once the table has grown');
    assert.deepEqual(keys.map((k) => t.strings[k]), names);
    assert.equal(t.internString('ñandú ∑ 🚀'), keys[4]);
    assert.equal(t.internString('stat#7'), t.internString('stat#7'));
  });
});

describe('IdTable', () => {
  it('keeps small, huge and negative ids apart', () => {
    const m = new IdTable<string>();
    const ids = [0, 1, 5, 1023, (1 << 20) - 1, 1 << 20, 2 ** 40, -1, -(2 ** 33)];
    ids.forEach((id) => m.set(id, `v${id}`));
    for (const id of ids) assert.equal(m.get(id), `v${id}`);
    for (const id of [2, 4, 1022, 2 ** 40 + 1, -2]) assert.equal(m.get(id), undefined);
  });
});

/** Union of [s, e) pairs by sorting them: the reference. Touching intervals merge. */
function unionBySort(pairs: [number, number][]): number[] {
  const out: number[] = [];
  for (const [s, e] of [...pairs].sort((a, b) => a[0] - b[0])) {
    if (out.length && s <= out[out.length - 1]) out[out.length - 1] = Math.max(out[out.length - 1], e);
    else out.push(s, e);
  }
  return out;
}

describe('IntervalUnion', () => {
  it('gives the union of sorted runs, as one sort of every interval would', () => {
    let seed = 7;
    const rnd = (n: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    for (let trial = 0; trial < 300; trial++) {
      const u = new IntervalUnion();
      const all: [number, number][] = [];
      const runs = rnd(40);
      for (let r = 0; r < runs; r++) {
        // A run as a line makes it: sorted, disjoint and not touching (merged along the line); some empty.
        let t = rnd(50);
        for (let k = rnd(trial % 3 === 0 ? 3 : 60); k > 0; k--) {
          const s = t + 1 + rnd(20);
          const e = s + rnd(15);
          u.push(s, e);
          all.push([s, e]);
          t = e;
        }
        u.endRun();
      }
      assert.deepEqual(Array.from(u.result()), unionBySort(all), `trial ${trial}`);
    }
    const v = new IntervalUnion();
    v.pushRun([0, 1, 5, 6]);
    v.pushRun([1, 2, 6, 6, 10, 12]);
    assert.deepEqual(Array.from(v.result()), [0, 2, 5, 6, 10, 12]);
    assert.deepEqual(Array.from(new IntervalUnion().result()), []);
  });
});

/**
 * One plane whose events use every form the XEvent loop must read as the Reader would: fields in another
 * order, num_occurrences, unknown fields (a multi-byte tag, a length-delimited one), stats of every value type,
 * 5- to 10-byte varints.
 */
function oddXSpace(corrupt?: 'event' | 'stat'): Uint8Array {
  const w = protobuf.Writer.create();
  /** A length-delimited field whose payload is given byte by byte (overlong tags, broken varints). */
  const raw = (field: number, bytes: number[]): void => { w.uint32((field << 3) | 2).bytes(new Uint8Array(bytes)); };
  const msg = (field: number, body: () => void): void => { w.uint32((field << 3) | 2).fork(); body(); w.ldelim(); };
  const num = (field: number, v: number): void => { w.uint32(field << 3).uint64(v); };
  const str = (field: number, v: string): void => { w.uint32((field << 3) | 2).string(v); };
  msg(1, () => {
    num(1, 1);
    str(2, '/device:GPU:0');
    msg(3, () => {
      // A kernel line: its events are op executions by their hlo_op stat (TPU's XLA Ops line names ops by metadata).
      str(2, 'Stream #1(Kernel)');
      num(3, 1_700_000_000_000_000_000); // ns: a 9-byte varint
      // dur, then meta, then offset; an hlo_op as str, a module as ref, flops as double, bytes as int64.
      msg(4, () => {
        num(3, 5_000_000); num(1, 3); num(2, 2 ** 36);
        msg(4, () => { num(1, 1); str(5, 'fusion.923'); });
        msg(4, () => { num(1, 2); num(7, 11); });
        msg(4, () => { num(1, 3); w.uint32((2 << 3) | 1).double(1.5e9); });
        msg(4, () => { num(1, 6); w.uint32(4 << 3).int64(123456789); });
      });
      // num_occurrences, an unknown varint field with a two-byte tag, an unknown length-delimited field, a bytes stat.
      msg(4, () => {
        num(1, 4); num(2, 2 ** 36 + 1_000_000); num(3, 2_000_000); num(5, 1);
        num(20, 99);
        str(15, 'ignored');
        msg(4, () => { num(1, 5); w.uint32((6 << 3) | 2).bytes(new Uint8Array([1, 2, 3])); });
        msg(4, () => { num(1, 1); str(5, 'fusion.5900'); });
        msg(4, () => { num(1, 2); str(5, 'jit_step'); });
      });
      // Overlong (two-byte) tags for metadata_id, duration_ps, a stat and its metadata_id: the same fields.
      raw(4, [0x88, 0x00, 3, 0x10, 0x80, 0x80, 0x80, 0x80, 0x02, 0x98, 0x00, 0x90, 0x4e, 0xa2, 0x00, 10, 0x88, 0x00, 1, 0x2a, 5, ...Buffer.from('dot.7')]);
      // An event that says it is 3 bytes long, whose offset varint runs on past them.
      if (corrupt === 'event') {
        w.uint32((4 << 3) | 2).uint32(3);
        w.uint32(2 << 3).uint32(0xffffffff);
      }
      // A stat whose metadata_id varint runs past the stat (into the event's next field).
      if (corrupt === 'stat') raw(4, [0x08, 3, 0x22, 2, 0x08, 0x85, 0x10, 0x01]);
    });
    ['', '', '', 'fusion', 'copy'].forEach((n, id) => { if (n) msg(4, () => { num(1, id); msg(2, () => { num(1, id); str(2, n); }); }); });
    const stats: [number, string][] = [[1, 'hlo_op'], [2, 'hlo_module'], [3, 'flops'], [5, 'blob'], [6, 'bytes_accessed'], [11, 'jit_train']];
    for (const [id, n] of stats) msg(5, () => { num(1, id); msg(2, () => { num(1, id); str(2, n); }); });
  });
  return w.finish();
}

describe('XEvent loop', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tpw-xevent-'));

  it('reads every field form as the whole-message decoder does', () => {
    const buf = oddXSpace();
    const file = path.join(dir, 'odd.xplane.pb');
    writeFileSync(file, buf);
    const whole = analyzeXSpace(decodeXSpace(buf));
    for (const chunkSize of [16, 1 << 20]) assert.deepEqual(analyzeProfileFile(file, { chunkSize }), whole);
    assert.equal(whole.eventCount, 3);
    const rows = whole.ops.map((o) => [o.name, o.module, o.count, o.flops, o.bytes]);
    assert.deepEqual(rows.sort(), [['dot.7', '', 1, 0, 0], ['fusion.5900', 'jit_step', 1, 0, 0], ['fusion.923', 'jit_train', 1, 1.5e9, 123456789]]);
    assert.deepEqual(whole.timeline.names, ['fusion', 'copy'], 'the overlong-tagged event names its metadata (3: fusion)');
    assert.deepEqual(Array.from(whole.timeline.lines[0].dur), [0.01, 5, 2], 'µs, in start order');
  });

  it('reports a varint that runs past its event or its stat as a truncated or corrupt file, at the field', () => {
    for (const corrupt of ['event', 'stat'] as const) {
      const buf = oddXSpace(corrupt);
      const file = path.join(dir, `odd-bad-${corrupt}.xplane.pb`);
      writeFileSync(file, buf);
      // The field where the broken varint begins: the offset tag (0x10) of the 3-byte event, the stat's id tag.
      const at = corrupt === 'event' ? Buffer.from(buf).indexOf(Buffer.from([0x22, 3, 0x10, 0xff])) + 2 : Buffer.from(buf).indexOf(Buffer.from([0x08, 0x85]));
      assert.throws(() => analyzeProfileFile(file), (e: Error) => e instanceof ProfileFormatError && e.message === `${file}: the profile is truncated or corrupt: a field at byte ${at} runs past the end of its message`, corrupt);
    }
  });
});
