import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type * as net from 'node:net';
import * as path from 'node:path';
import { guardRequest } from './rest-guard';

/**
 * What a TPU VM's own tools reach besides the TPU API: the GCE metadata server (where `gcloud` on the VM gets
 * the VM service account's token and the project) and the subset of the Cloud Storage JSON API that
 * `gcloud storage rsync` / `cp` use to copy from a bucket (get an object, list objects by prefix and delimiter,
 * download). One loopback HTTP server; the emulated workers find it through gcloud's and google-auth's own
 * overrides (workerEnv), where a real VM has metadata.google.internal and storage.googleapis.com.
 *
 * Buckets are folders: object `a/b.txt` of bucket `bkt` is the file `<dir>/bkt/a/b.txt`. The metadata server
 * answers only requests carrying `Metadata-Flavor: Google` (as the real one), from a loopback Host, never a
 * browser; Cloud Storage only the token the metadata server hands out (not the emulator's REST token, which a
 * worker must never hold: it can put SSH keys on every worker).
 */

export interface VmServicesOptions {
  /** Folder holding one folder per bucket. */
  dir: string;
  project: string;
  host: string;
  log?: (msg: string) => void;
}

const SERVICE_ACCOUNT = (project: string) => `tpu-vm@${project}.iam.gserviceaccount.com`;
const SCOPE = 'https://www.googleapis.com/auth/cloud-platform';

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

export class VmServices {
  private server: http.Server | undefined;
  private portValue = 0;
  /** The VM service account's access token, new at each start. */
  private readonly token = crypto.randomBytes(32).toString('base64url');

  constructor(private readonly opts: VmServicesOptions) {}

  async listen(): Promise<number> {
    fs.mkdirSync(this.opts.dir, { recursive: true, mode: 0o700 });
    const server = http.createServer((req, res) => this.handle(req, res));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, this.opts.host, () => resolve());
    });
    this.portValue = (server.address() as net.AddressInfo).port;
    return this.portValue;
  }

  async close(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  /**
   * What every emulated worker's programs get so that gcloud (and Python's google-auth) on the "VM" use this
   * server: the metadata server's address (GCE_METADATA_ROOT for gcloud, GCE_METADATA_HOST for google-auth) and
   * Cloud Storage's endpoint (gcloud's api_endpoint_overrides/storage property).
   */
  workerEnv(): Record<string, string> {
    const at = `${this.opts.host}:${this.portValue}`;
    return { GCE_METADATA_ROOT: at, GCE_METADATA_HOST: at, GCE_METADATA_IP: at, CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE: `http://${at}/storage/v1/` };
  }

  private baseUrl(): string {
    return `http://${this.opts.host}:${this.portValue}`;
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://vm-services');
    const send = (code: number, body: string | Buffer, type: string, headers: Record<string, string> = {}) => {
      res.writeHead(code, { 'Content-Type': type, 'Metadata-Flavor': 'Google', ...headers });
      res.end(body);
    };
    const json = (code: number, body: unknown) => send(code, JSON.stringify(body), 'application/json; charset=UTF-8');
    const fail = (code: number, message: string, reason: string) => json(code, { error: { code, message, errors: [{ message, reason, domain: 'global' }] } });
    try {
      if (url.pathname.startsWith('/computeMetadata/v1/')) {
        // Token check aside, the same loopback-Host and no-browser rules as the REST API.
        const refused = guardRequest(req, { token: '', port: () => this.portValue, host: this.opts.host });
        if (refused && refused.status !== 'UNAUTHENTICATED') return fail(403, refused.message, 'forbidden');
        if (req.headers['metadata-flavor'] !== 'Google') return fail(403, 'Missing Metadata-Flavor: Google header.', 'forbidden');
        const answer = this.metadata(url.pathname.slice('/computeMetadata/v1'.length), url.searchParams);
        if (answer === undefined) return send(404, 'Not found', 'text/html');
        return typeof answer === 'string' ? send(200, answer, 'application/text') : json(200, answer);
      }
      const refused = guardRequest(req, { token: this.token, port: () => this.portValue, host: this.opts.host });
      if (refused) return fail(refused.status === 'UNAUTHENTICATED' ? 401 : 403, refused.message, refused.status === 'UNAUTHENTICATED' ? 'required' : 'forbidden');
      if (req.method !== 'GET') return fail(405, `This emulator's Cloud Storage is read-only (${req.method} ${url.pathname}).`, 'methodNotAllowed');
      this.storage(url, send, json, fail);
    } catch (e) {
      this.opts.log?.(`vm-services: ${req.method} ${url.pathname}: ${(e as Error).message}`);
      fail(500, (e as Error).message, 'backendError');
    }
  }

  /** The metadata paths gcloud reads on a VM; a string answers as text, anything else as JSON. */
  private metadata(p: string, q: URLSearchParams): unknown {
    const sa = SERVICE_ACCOUNT(this.opts.project);
    const numeric = String(parseInt(crypto.createHash('sha256').update(this.opts.project).digest('hex').slice(0, 10), 16));
    if (p === '/project/project-id') return this.opts.project;
    if (p === '/project/numeric-project-id') return numeric;
    if (p === '/universe/universe-domain') return 'googleapis.com';
    if (p === '/instance/service-accounts/') return `default/\n${sa}/\n`;
    const m = /^\/instance\/service-accounts\/([^/]+)\/(email|scopes|token|aliases)?$/.exec(p);
    if (!m || (m[1] !== 'default' && m[1] !== sa)) return undefined;
    if (m[2] === undefined) return q.get('recursive') === 'true' ? { aliases: ['default'], email: sa, scopes: [SCOPE] } : 'aliases\nemail\nscopes\ntoken\n';
    if (m[2] === 'email') return sa;
    if (m[2] === 'scopes') return `${SCOPE}\n`;
    if (m[2] === 'aliases') return 'default\n';
    return { access_token: this.token, expires_in: 3599, token_type: 'Bearer' };
  }

  private storage(
    url: URL,
    send: (code: number, body: string | Buffer, type: string, headers?: Record<string, string>) => void,
    json: (code: number, body: unknown) => void,
    fail: (code: number, message: string, reason: string) => void,
  ): void {
    const list = /^\/storage\/v1\/b\/([^/]+)\/o$/.exec(url.pathname);
    const one = /^\/(?:download\/)?storage\/v1\/b\/([^/]+)\/o\/(.+)$/.exec(url.pathname);
    const bucketOnly = /^\/storage\/v1\/b\/([^/]+)$/.exec(url.pathname);
    const bucket = decodeURIComponent((list ?? one ?? bucketOnly)?.[1] ?? '');
    if (!bucket) return fail(404, `Not a Cloud Storage JSON API path: ${url.pathname}.`, 'notFound');
    const root = path.join(this.opts.dir, bucket);
    if (!/^[a-z0-9][a-z0-9._-]{1,221}[a-z0-9]$/.test(bucket) || !fs.statSync(root, { throwIfNoEntry: false })?.isDirectory()) {
      return fail(404, 'The specified bucket does not exist.', 'notFound');
    }
    if (bucketOnly) return json(200, { kind: 'storage#bucket', id: bucket, name: bucket, location: 'US', storageClass: 'STANDARD' });
    if (list) {
      const prefix = url.searchParams.get('prefix') ?? '';
      const delimiter = url.searchParams.get('delimiter');
      const items: unknown[] = [];
      const prefixes = new Set<string>();
      for (const name of objectNames(root).filter((n) => n.startsWith(prefix))) {
        const rest = name.slice(prefix.length);
        const cut = delimiter ? rest.indexOf(delimiter) : -1;
        if (delimiter && cut >= 0) prefixes.add(prefix + rest.slice(0, cut + delimiter.length));
        else items.push(objectResource(this.baseUrl(), bucket, name, path.join(root, name)));
      }
      return json(200, { kind: 'storage#objects', ...(items.length ? { items } : {}), ...(prefixes.size ? { prefixes: [...prefixes].sort() } : {}) });
    }
    const name = decodeURIComponent(one?.[2] ?? '');
    const file = path.join(root, name);
    // An object name that climbs out of its bucket (`..`) or names a folder is no object.
    const inside = path.relative(root, file);
    if (!name || inside.startsWith('..') || path.isAbsolute(inside) || !fs.statSync(file, { throwIfNoEntry: false })?.isFile()) {
      return fail(404, `No such object: ${bucket}/${name}`, 'notFound');
    }
    const meta = objectResource(this.baseUrl(), bucket, name, file);
    if (url.searchParams.get('alt') === 'media') {
      return send(200, fs.readFileSync(file), 'application/octet-stream', { 'x-goog-hash': `crc32c=${meta.crc32c},md5=${meta.md5Hash}`, 'x-goog-generation': meta.generation });
    }
    json(200, meta);
  }
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

function objectResource(base: string, bucket: string, name: string, file: string) {
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
