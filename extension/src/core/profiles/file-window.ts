/**
 * A positioned read window over a profile file, for the streaming decoder (stream.ts): the file is read in
 * window-sized pieces with positioned reads, never whole. Errors name the file and the byte offset.
 */
import { fstatSync, readSync } from 'node:fs';
import protobuf from 'protobufjs/minimal.js';
import { ProfileFormatError } from './xplane';

type Reader = protobuf.Reader;

/** A positioned window over a file: bytes(off, len) returns a view valid until the next call. */
export class FileWindow {
  readonly size: number;
  private readonly win: Buffer;
  /** Window size: ranges up to this are read in place. */
  get capacity(): number {
    return this.win.length;
  }

  private winStart = 0;
  private winLen = 0;
  private readonly winReader: Reader;
  readerBase = 0;

  constructor(private readonly fd: number, private readonly file: string, chunk: number) {
    this.size = fstatSync(fd).size;
    // Not from Buffer's shared pool: reader() tells window views from line-sized buffers by their ArrayBuffer.
    this.win = Buffer.allocUnsafeSlow(Math.max(16, Math.min(chunk, this.size)));
    this.winReader = protobuf.Reader.create(this.win);
  }

  /** Whether [off, off + len) is in the window now (reading it costs no read). */
  holds(off: number, len: number): boolean {
    return off >= this.winStart && off + len <= this.winStart + this.winLen;
  }

  /** bytes(off, len), reading just those bytes when they are not in the window (one region of a big file, no more). */
  exactBytes(off: number, len: number): Uint8Array {
    if (this.holds(off, len) || len > this.win.length) return this.bytes(off, len);
    if (off + len > this.size) throw this.truncated(off);
    this.winStart = off;
    this.winLen = len;
    this.readFully(this.win, len, off);
    return this.win.subarray(0, len);
  }

  bytes(off: number, len: number): Uint8Array {
    if (off + len > this.size) throw this.truncated(off);
    if (off >= this.winStart && off + len <= this.winStart + this.winLen) return this.win.subarray(off - this.winStart, off - this.winStart + len);
    if (len > this.win.length) {
      const b = Buffer.allocUnsafe(len);
      this.readFully(b, len, off);
      return b;
    }
    this.winStart = off;
    this.winLen = Math.min(this.win.length, this.size - off);
    this.readFully(this.win, this.winLen, off);
    return this.win.subarray(0, len);
  }

  /** Offset after the last varint read. */
  next = 0;

  /** The varint at `off` (its end goes to `next`). Read in place from the window: a plane has thousands of fields, no allocation per one. */
  varint(off: number): number {
    let at = off - this.winStart;
    if (at < 0 || off + 10 > this.winStart + this.winLen && this.winStart + this.winLen < this.size) {
      this.bytes(off, Math.min(10, this.size - off));
      at = off - this.winStart;
    }
    const b = this.win;
    const stop = Math.min(at + 10, this.winLen);
    let value = 0;
    let scale = 1;
    for (let i = at; i < stop; i++) {
      value += (b[i] & 0x7f) * scale;
      if (b[i] < 0x80) {
        this.next = this.winStart + i + 1;
        return value;
      }
      scale *= 128;
    }
    throw stop - at < 10 ? this.truncated(off) : this.corrupt(off, 'invalid varint');
  }

  /**
   * A protobufjs Reader over [off, off + len), valid until the next call: the window's own Reader, moved,
   * when the range fits in it (no allocation per message). The file offset of r.pos is readerBase + r.pos.
   */
  reader(off: number, len: number): Reader {
    if (off < this.winStart || off + len > this.winStart + this.winLen) return this.readerSlow(off, len);
    this.readerBase = this.winStart;
    const r = this.winReader;
    r.pos = off - this.winStart;
    r.len = r.pos + len;
    return r;
  }

  private readerSlow(off: number, len: number): Reader {
    const view = this.bytes(off, len);
    if (view.buffer !== this.win.buffer) {
      this.readerBase = off;
      return protobuf.Reader.create(view);
    }
    this.readerBase = this.winStart;
    const r = this.winReader;
    r.pos = off - this.winStart;
    r.len = r.pos + len;
    return r;
  }

  truncated(off: number): ProfileFormatError {
    return new ProfileFormatError(`${this.file}: the profile is truncated or corrupt: a field at byte ${off} runs past the end of the file (${this.size} bytes)`);
  }

  overrun(off: number): ProfileFormatError {
    return new ProfileFormatError(`${this.file}: the profile is truncated or corrupt: a field at byte ${off} runs past the end of its message`);
  }

  corrupt(off: number, why: string): ProfileFormatError {
    return new ProfileFormatError(`${this.file}: not a valid XSpace profile: ${why} at byte ${off}`);
  }

  private readFully(into: Buffer, len: number, pos: number): void {
    let done = 0;
    while (done < len) {
      const n = readSync(this.fd, into, done, len - done, pos + done);
      if (n === 0) throw this.truncated(pos + done);
      done += n;
    }
  }
}
