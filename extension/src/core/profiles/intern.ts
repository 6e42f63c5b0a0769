/**
 * Interning of UTF-8 strings straight from the bytes being decoded, and a table keyed by metadata id.
 *
 * Why bytes: a capture's strings repeat. Every plane brings its own metadata (each TPU chip's plane names the
 * same HLO ops, a repeated capture names them again), and hlo_op / hlo_module stat values repeat on every
 * event. Decoding each occurrence into a fresh JS string, then hashing that string to intern it, was a fifth
 * of the decoder's time. Here the bytes are hashed where they lie, compared with the stored copy, and only a
 * string never seen before is decoded. One interner serves all the planes a thread decodes, so a key (the
 * index into `strings`) names the same string across them, and what is derived from a string (its kind,
 * its timeline name) can be cached by key.
 */

// ignoreBOM: a leading U+FEFF stays part of the string, as protobufjs's own string reads keep it.
import { grown } from './xplane';

const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });
const EMPTY = -1;

export class Utf8Interner {
  /** key → string. */
  readonly strings: string[] = [];
  /** Open addressing, linear probing: slot → key, or EMPTY. Kept at most half full. */
  private slots = new Int32Array(1024).fill(EMPTY);
  /** key → hash, start in `bytes`, length. */
  private hashes = new Int32Array(256);
  private starts = new Int32Array(256);
  private lengths = new Int32Array(256);
  private bytes = new Uint8Array(1 << 16);
  private used = 0;

  /** The key of the UTF-8 string buf[start, end). */
  intern(buf: Uint8Array, start: number, end: number): number {
    // FNV-1a, 32-bit.
    let h = 0x811c9dc5 | 0;
    for (let i = start; i < end; i++) h = Math.imul(h ^ buf[i], 0x01000193);
    const slots = this.slots;
    const mask = slots.length - 1;
    const len = end - start;
    for (let slot = h & mask; ; slot = (slot + 1) & mask) {
      const key = slots[slot];
      if (key === EMPTY) return this.add(buf, start, end, h, slot);
      if (this.hashes[key] === h && this.lengths[key] === len && this.same(key, buf, start, len)) return key;
    }
  }

  /** The key of a JS string (rare: names made up for missing metadata, numbers given where a name was expected). */
  internString(s: string): number {
    // A Buffer, like the decoder's read window: intern() then sees one kind of array.
    const b = Buffer.from(s, 'utf8');
    return this.intern(b, 0, b.length);
  }

  private same(key: number, buf: Uint8Array, start: number, len: number): boolean {
    const bytes = this.bytes;
    const at = this.starts[key];
    for (let i = 0; i < len; i++) if (bytes[at + i] !== buf[start + i]) return false;
    return true;
  }

  private add(buf: Uint8Array, start: number, end: number, h: number, slot: number): number {
    const key = this.strings.length;
    const len = end - start;
    this.strings.push(utf8.decode(buf.subarray(start, end)));
    this.hashes = grown(this.hashes, key + 1);
    this.starts = grown(this.starts, key + 1);
    this.lengths = grown(this.lengths, key + 1);
    this.bytes = grown(this.bytes, this.used + len);
    this.bytes.set(buf.subarray(start, end), this.used);
    this.hashes[key] = h;
    this.starts[key] = this.used;
    this.lengths[key] = len;
    this.used += len;
    this.slots[slot] = key;
    if (2 * (key + 1) > this.slots.length) this.rehash();
    return key;
  }

  private rehash(): void {
    const slots = new Int32Array(this.slots.length * 2).fill(EMPTY);
    const mask = slots.length - 1;
    for (let key = 0; key < this.strings.length; key++) {
      let slot = this.hashes[key] & mask;
      while (slots[slot] !== EMPTY) slot = (slot + 1) & mask;
      slots[slot] = key;
    }
    this.slots = slots;
  }
}

/**
 * A table keyed by XPlane metadata id: an array for the small dense ids XLA writes (counting from 1), a Map
 * for any other number, as a slower entry. (The proto's ids are int64; the decoder's line columns keep an
 * event's metadata id as an int32, which XLA's ids never outgrow.)
 */
export class IdTable<T> {
  private readonly dense: (T | undefined)[] = [];
  private sparse: Map<number, T> | undefined;

  get(id: number): T | undefined {
    return id >= 0 && id < DENSE_IDS ? this.dense[id] : this.sparse?.get(id);
  }

  set(id: number, v: T): void {
    if (id >= 0 && id < DENSE_IDS) {
      // Filled up to id first: writing far past the end would turn the array into a slow dictionary.
      while (this.dense.length < id) this.dense.push(undefined);
      this.dense[id] = v;
    } else (this.sparse ??= new Map()).set(id, v);
  }

  forEach(f: (v: T, id: number) => void): void {
    this.dense.forEach((v, id) => { if (v !== undefined) f(v, id); });
    this.sparse?.forEach(f);
  }
}

/** Ids below this live in the array. */
const DENSE_IDS = 1 << 20;
