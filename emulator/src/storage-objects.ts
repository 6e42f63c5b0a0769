import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import type * as http from 'node:http';
import * as path from 'node:path';

/**
 * The emulator's Cloud Storage objects (vm-services.ts serves them): buckets are folders, objects their files,
 * listed a page at a time and uploaded as the JSON API takes uploads (`uploadType=media`, `multipart`, and
 * `resumable` with its session URL), which is how `gcloud storage cp` writes.
 */

/** CRC32C (Castagnoli), as Cloud Storage reports it: big-endian, base64. gcloud checks every download against it. */
function crc32c(data: Buffer): string {
  let c = ~0;
  for (const byte of data) {
    c ^= byte;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  }
  const out = Buffer.alloc(4);
  out.writeUInt32BE(~c >>> 0);
  return out.toString('base64');
}

export class BadObjectName extends Error {}

/** A name from the URL: a bad `%` escape or a NUL is the client's error (400), as Cloud Storage answers it. */
export function decodeName(raw: string, what: string): string {
  let name: string;
  try {
    name = decodeURIComponent(raw);
  } catch {
    throw new BadObjectName(`The ${what} "${raw.slice(0, 100)}" has a malformed %-escape.`);
  }
  if (name.includes('\0')) throw new BadObjectName(`The ${what} contains a NUL character, which Cloud Storage does not allow.`);
  return name;
}

/**
 * Whether `file` is a regular file under `root` reached through no symlink at all: an object name that climbs
 * out (`..`), names a folder, or passes through a link (one to /etc/shadow, say) is no object.
 */
export function isObjectFile(root: string, file: string): boolean {
  const inside = path.relative(root, file);
  if (inside === '' || inside.startsWith('..') || path.isAbsolute(inside)) return false;
  let at = root;
  for (const part of inside.split(path.sep)) {
    at = path.join(at, part);
    const st = fs.lstatSync(at, { throwIfNoEntry: false });
    if (!st || st.isSymbolicLink()) return false;
  }
  return fs.lstatSync(file).isFile();
}

/** Every file under `root` as an object name (`a/b.txt`), sorted as Cloud Storage lists them. */
function objectNames(root: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const e of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(r);
      else if (e.isFile()) out.push(r);
    }
  };
  walk('');
  return out.sort();
}

export function objectResource(base: string, bucket: string, name: string, file: string) {
  const data = fs.readFileSync(file);
  const st = fs.statSync(file);
  const time = st.mtime.toISOString();
  // The generation changes when the file does, as an overwritten object gets a new one.
  const generation = String(Math.floor(st.mtimeMs * 1000));
  return {
    kind: 'storage#object',
    id: `${bucket}/${name}/${generation}`,
    name,
    bucket,
    generation,
    metageneration: '1',
    size: String(data.length),
    md5Hash: crypto.createHash('md5').update(data).digest('base64'),
    crc32c: crc32c(data),
    contentType: 'application/octet-stream',
    storageClass: 'STANDARD',
    timeCreated: time,
    updated: time,
    selfLink: `${base}/storage/v1/b/${bucket}/o/${encodeURIComponent(name)}`,
    // Where gcloud downloads a whole object from (its metadata's mediaLink, as Cloud Storage gives it).
    mediaLink: `${base}/download/storage/v1/b/${bucket}/o/${encodeURIComponent(name)}?generation=${generation}&alt=media`,
    etag: crypto.createHash('sha256').update(`${name}:${generation}`).digest('base64').slice(0, 12),
  };
}

/**
 * One page of `objects.list`: items (and, with a delimiter, prefixes) after `pageToken`, at most `maxResults`
 * (Google's default and cap, 1000), with `nextPageToken` while more remain. The token is the last name given,
 * so a page is stable while objects are added before it.
 */
export function listPage(root: string, q: URLSearchParams, resource: (name: string) => unknown): Record<string, unknown> {
  const prefix = q.get('prefix') ?? '';
  const delimiter = q.get('delimiter');
  const max = Math.min(1000, Math.max(1, Number(q.get('maxResults') ?? 1000) || 1000));
  const after = q.get('pageToken') ? Buffer.from(q.get('pageToken') ?? '', 'base64url').toString('utf8') : undefined;
  const entries: Array<{ name: string; isPrefix: boolean }> = [];
  for (const name of objectNames(root).filter((n) => n.startsWith(prefix))) {
    const rest = name.slice(prefix.length);
    const cut = delimiter ? rest.indexOf(delimiter) : -1;
    if (delimiter && cut >= 0) {
      const p = prefix + rest.slice(0, cut + delimiter.length);
      if (entries.at(-1)?.name !== p) entries.push({ name: p, isPrefix: true });
    } else entries.push({ name, isPrefix: false });
  }
  const start = after === undefined ? 0 : entries.findIndex((e) => e.name > after);
  const page = start < 0 ? [] : entries.slice(start, start + max);
  const more = start >= 0 && start + max < entries.length;
  const items = page.filter((e) => !e.isPrefix).map((e) => resource(e.name));
  const prefixes = page.filter((e) => e.isPrefix).map((e) => e.name);
  return {
    kind: 'storage#objects',
    ...(more ? { nextPageToken: Buffer.from(page.at(-1)!.name, 'utf8').toString('base64url') } : {}),
    ...(items.length ? { items } : {}),
    ...(prefixes.length ? { prefixes } : {}),
  };
}

/** An object name that maps onto a file below the bucket's folder: no empty, `.` or `..` segment. */
function writableName(name: string): boolean {
  return name.length > 0 && name.length <= 1024 && !name.includes('\0') && name.split('/').every((p) => p !== '' && p !== '.' && p !== '..');
}

/** Writes `data` as object `name`: through real folders only (no symlink on the way), whole or not at all. */
function writeObject(root: string, name: string, data: Buffer): string {
  const parts = name.split('/');
  let at = root;
  for (const part of parts.slice(0, -1)) {
    at = path.join(at, part);
    const st = fs.lstatSync(at, { throwIfNoEntry: false });
    if (!st) fs.mkdirSync(at);
    else if (!st.isDirectory()) throw new BadObjectName(`The object name "${name.slice(0, 200)}" passes through an object or a link.`);
  }
  const file = path.join(at, parts.at(-1)!);
  if (fs.lstatSync(file, { throwIfNoEntry: false })?.isDirectory()) throw new BadObjectName(`The object name "${name.slice(0, 200)}" is a folder of other objects here.`);
  const tmp = `${file}.upload-${crypto.randomBytes(6).toString('hex')}`;
  fs.writeFileSync(tmp, data, { mode: 0o600 });
  fs.renameSync(tmp, file);
  return file;
}

function readBody(req: http.IncomingMessage, limit = 2 ** 31): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) req.destroy(new Error('upload too large'));
      else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** `multipart/related`: the object's JSON metadata, then its bytes (the JSON API's `uploadType=multipart`). */
function parseRelated(contentType: string, body: Buffer): { meta: Record<string, unknown>; data: Buffer } {
  // Python's email package (gcloud's apitools) quotes the boundary with ' and ends lines with a bare LF.
  const boundary = /boundary=(?:"([^"]+)"|'([^']+)'|([^;\s]+))/i.exec(contentType)?.slice(1).find((b) => b !== undefined);
  if (!boundary) throw new BadObjectName('A multipart upload needs a multipart/related Content-Type with a boundary.');
  const delim = Buffer.from(`--${boundary}`);
  const parts: Buffer[] = [];
  let at = body.indexOf(delim);
  while (at >= 0) {
    const next = body.indexOf(delim, at + delim.length);
    if (next < 0) break;
    parts.push(body.subarray(at + delim.length, next));
    at = next;
  }
  const split = (p: Buffer): Buffer => {
    const crlf = p.indexOf('\r\n\r\n');
    const lf = p.indexOf('\n\n');
    const useLf = lf >= 0 && (crlf < 0 || lf < crlf);
    const content = useLf ? p.subarray(lf + 2) : crlf >= 0 ? p.subarray(crlf + 4) : Buffer.alloc(0);
    // The line break before the next delimiter belongs to the delimiter, not to the data.
    const eol = content.subarray(-2).toString('latin1') === '\r\n' ? 2 : content.subarray(-1).toString('latin1') === '\n' ? 1 : 0;
    return content.subarray(0, content.length - eol);
  };
  if (parts.length < 2) throw new BadObjectName('A multipart upload needs two parts: the metadata, then the data.');
  return { meta: JSON.parse(split(parts[0]).toString('utf8') || '{}') as Record<string, unknown>, data: split(parts[1]) };
}

interface Responder {
  json(code: number, body: unknown, headers?: Record<string, string>): void;
  fail(code: number, message: string, reason: string): void;
  res: http.ServerResponse;
}

/** The JSON API's uploads into the emulated buckets, with resumable sessions held here until their last byte. */
export class Uploads {
  private readonly sessions = new Map<string, { bucket: string; name: string; chunks: Buffer[]; received: number }>();

  constructor(private readonly bucketRoot: (bucket: string) => string | undefined) {}

  async handle(req: http.IncomingMessage, url: URL, base: string, r: Responder): Promise<void> {
    const m = /^\/(?:resumable\/)?upload\/storage\/v1\/b\/([^/]+)\/o$/.exec(url.pathname);
    const bucket = decodeName(m?.[1] ?? '', 'bucket name');
    if (!bucket) return r.fail(404, `Not a Cloud Storage upload path: ${url.pathname}.`, 'notFound');
    const root = this.bucketRoot(bucket);
    if (!root) return r.fail(404, 'The specified bucket does not exist.', 'notFound');
    const body = await readBody(req);
    const finish = (name: string, data: Buffer) => {
      if (!writableName(name)) return r.fail(400, `The object name "${name.slice(0, 200)}" cannot be stored by this emulator (an empty, "." or ".." segment).`, 'invalid');
      const file = writeObject(root, name, data);
      r.json(200, objectResource(base, bucket, name, file));
    };
    const id = url.searchParams.get('upload_id');
    if (id) {
      const s = this.sessions.get(id);
      if (!s || s.bucket !== bucket) return r.fail(404, 'No such resumable upload session.', 'notFound');
      const range = /^bytes (?:(\d+)-(\d+)|\*)\/(\d+|\*)$/.exec(String(req.headers['content-range'] ?? `bytes */${s.received + body.length}`));
      if (!range) return r.fail(400, 'A resumable upload chunk needs "Content-Range: bytes A-B/TOTAL".', 'invalid');
      if (range[1] !== undefined && Number(range[1]) !== s.received) return r.fail(400, `The chunk starts at ${range[1]}, not at ${s.received}.`, 'invalid');
      s.chunks.push(body);
      s.received += body.length;
      if (range[3] !== '*' && s.received >= Number(range[3])) {
        this.sessions.delete(id);
        return finish(s.name, Buffer.concat(s.chunks));
      }
      r.res.writeHead(308, s.received > 0 ? { Range: `bytes=0-${s.received - 1}` } : {});
      r.res.end();
      return;
    }
    const kind = url.searchParams.get('uploadType');
    if (kind === 'media') return finish(url.searchParams.get('name') ?? '', body);
    if (kind === 'multipart') {
      const { meta, data } = parseRelated(String(req.headers['content-type'] ?? ''), body);
      return finish(String(meta.name ?? url.searchParams.get('name') ?? ''), data);
    }
    if (kind === 'resumable') {
      const meta = body.length ? (JSON.parse(body.toString('utf8')) as Record<string, unknown>) : {};
      const name = String(meta.name ?? url.searchParams.get('name') ?? '');
      if (!writableName(name)) return r.fail(400, `The object name "${name.slice(0, 200)}" cannot be stored by this emulator (an empty, "." or ".." segment).`, 'invalid');
      const session = crypto.randomBytes(16).toString('base64url');
      this.sessions.set(session, { bucket, name, chunks: [], received: 0 });
      r.res.writeHead(200, { Location: `${base}/upload/storage/v1/b/${encodeURIComponent(bucket)}/o?uploadType=resumable&upload_id=${session}` });
      r.res.end();
      return;
    }
    r.fail(400, `Unknown uploadType "${String(kind).slice(0, 40)}": media, multipart or resumable.`, 'invalid');
  }
}
