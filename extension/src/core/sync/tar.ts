import * as fs from 'node:fs';
import type { Readable } from 'node:stream';
import { Readable as ReadableStream } from 'node:stream';
import type { WorkspaceFile } from './workspace-files';

/**
 * A minimal POSIX ustar writer (with PAX headers for long paths), so the workspace reaches a worker as one
 * `tar -x` over an SSH exec channel: no sftp round trip per file, and the same on OpenSSH and the emulator.
 */
const BLOCK = 512;

function octal(n: number, width: number): string {
  return n.toString(8).padStart(width - 1, '0') + '\0';
}

function header(name: string, size: number, mode: number, mtimeSec: number, type: '0' | 'x', prefix = ''): Buffer {
  const h = Buffer.alloc(BLOCK, 0);
  h.write(name, 0, 100, 'utf8');
  h.write(octal(mode, 8), 100, 8, 'ascii');
  h.write(octal(0, 8), 108, 8, 'ascii');
  h.write(octal(0, 8), 116, 8, 'ascii');
  h.write(octal(size, 12), 124, 12, 'ascii');
  h.write(octal(Math.floor(mtimeSec), 12), 136, 12, 'ascii');
  h.write('        ', 148, 8, 'ascii'); // checksum is computed over spaces here
  h.write(type, 156, 1, 'ascii');
  h.write('ustar\0', 257, 6, 'ascii');
  h.write('00', 263, 2, 'ascii');
  h.write(prefix, 345, 155, 'utf8');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8, 'ascii');
  return h;
}

function padding(size: number): Buffer {
  const rem = size % BLOCK;
  return rem === 0 ? Buffer.alloc(0) : Buffer.alloc(BLOCK - rem, 0);
}

/** A PAX record is "<len> path=<value>\n" where len counts the whole record, its own digits included. */
function paxRecord(key: string, value: string): Buffer {
  const body = ` ${key}=${value}\n`;
  let len = Buffer.byteLength(body) + 1;
  while (String(len).length + Buffer.byteLength(body) !== len) len++;
  return Buffer.from(`${len}${body}`, 'utf8');
}

function entryHeaders(file: WorkspaceFile, size: number): Buffer[] {
  const name = file.rel;
  const mtime = file.mtimeMs / 1000;
  // Only the executable bit matters on the worker; ownership and other bits come from its umask.
  const mode = file.mode & 0o111 ? 0o755 : 0o644;
  if (Buffer.byteLength(name) <= 100) return [header(name, size, mode, mtime, '0')];
  const pax = paxRecord('path', name);
  // The ustar name field still gets a truncated form for readers that ignore PAX.
  return [header('PaxHeader/' + name.slice(-80), pax.length, 0o644, mtime, 'x'), pax, padding(pax.length), header(name.slice(-100), size, mode, mtime, '0')];
}

/** Streams a tar archive of `files`. Each file's size is taken when it is read, so a file that changed is consistent. */
export function tarStream(files: WorkspaceFile[]): Readable {
  async function* generate(): AsyncGenerator<Buffer> {
    for (const f of files) {
      let data: Buffer;
      try {
        data = await fs.promises.readFile(f.abs);
      } catch {
        continue; // removed while syncing: the next sync notices
      }
      for (const h of entryHeaders(f, data.length)) yield h;
      yield data;
      yield padding(data.length);
    }
    yield Buffer.alloc(BLOCK * 2, 0);
  }
  return ReadableStream.from(generate(), { objectMode: false });
}
