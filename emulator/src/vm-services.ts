import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as path from 'node:path';
import { peerUid } from './peer-uid';
import { guardRequest } from './rest-guard';
import { BadObjectName, decodeName, isObjectFile, listPage, objectResource, Uploads } from './storage-objects';

/**
 * What a TPU VM's own tools reach besides the TPU API: the GCE metadata server (where `gcloud` on the VM gets
 * the VM service account's token and the project) and the subset of the Cloud Storage JSON API that
 * `gcloud storage rsync` / `cp` use to copy from and to a bucket (get an object, list objects by prefix and
 * delimiter a page at a time, download, and upload as media, multipart or resumable: storage-objects.ts). One
 * loopback HTTP server; the emulated workers find it through gcloud's and google-auth's own overrides
 * (workerEnv), where a real VM has metadata.google.internal and storage.googleapis.com.
 *
 * Buckets are folders: object `a/b.txt` of bucket `bkt` is the file `<dir>/bkt/a/b.txt`; a symlink is no object,
 * so nothing outside the folders is ever served. Who may ask:
 *  - only this user's processes (the emulated workers run as it): the peer's socket is looked up in
 *    /proc/net/tcp, which names its owner, and any other user is refused (403). Loopback ports are open to
 *    every local user; a token handed to whoever asks would let any of them read the owner's buckets.
 *  - each VM asks at an address of its own (its first worker's, as a real VM reaches its own metadata server),
 *    so the metadata server knows which VM asks and hands it that VM's service-account token, which dies with
 *    the VM; Cloud Storage takes only such a token (never the emulator's REST token, which can put SSH keys on
 *    every worker) and reads and writes the buckets of the VM's project. The owner reads them with the REST
 *    token through the REST server (serveOwner), which checks that token as for every other call.
 *  - metadata requests need `Metadata-Flavor: Google` (as the real server), a loopback Host, and no browser.
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

/** A VM the services know: where it asks, and its service account's token. */
interface Vm {
  vmId: string;
  token: string;
  /** Its own listening addresses (one per worker address), each `address:port`. */
  listeners: Map<string, { server: net.Server; port: number }>;
}

export class VmServices {
  private readonly http = http.createServer((req, res) => this.handle(req, res));
  private readonly vms = new Map<string, Vm>();
  /** sha256 of a token → its VM (looked up by digest: no token is compared by its bytes). */
  private readonly byToken = new Map<string, Vm>();
  private readonly byAddress = new Map<string, Vm>();
  private readonly owner = process.getuid?.();

  constructor(private readonly opts: VmServicesOptions) {}

  /** Makes the buckets' folder. Nothing listens until a VM is added. */
  listen(): Promise<void> {
    fs.mkdirSync(this.opts.dir, { recursive: true, mode: 0o700 });
    return Promise.resolve();
  }

  /**
   * The emulator's owner, reading Cloud Storage through the REST server with the emulator's token (checked there),
   * as a user's own credentials read their buckets on Google. Reads only: what the product needs (a GKE run's
   * artifacts). Answers as `handle` does.
   */
  serveOwner(req: http.IncomingMessage, res: http.ServerResponse, base: string): void {
    const r = responder(res);
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://vm-services');
      if (req.method !== 'GET') return r.fail(405, `The emulator's Cloud Storage takes only reads with its own token (${req.method} ${url.pathname}).`, 'methodNotAllowed');
      this.storage(url, base, r);
    } catch (e) {
      if (e instanceof BadObjectName) return r.fail(400, e.message, 'invalid');
      r.fail(500, (e as Error).message, 'backendError');
    }
  }

  /** Listens at `address` (a worker's) for VM `vmId`, which gets a token of its own with the first address. */
  async addWorker(vmId: string, address: string): Promise<void> {
    let vm = this.vms.get(vmId);
    if (!vm) {
      vm = { vmId, token: crypto.randomBytes(32).toString('base64url'), listeners: new Map() };
      this.vms.set(vmId, vm);
      this.byToken.set(digest(vm.token), vm);
    }
    if (vm.listeners.has(address)) return;
    const server = net.createServer((sock) => this.http.emit('connection', sock));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, address, () => resolve());
    });
    vm.listeners.set(address, { server, port: (server.address() as net.AddressInfo).port });
    this.byAddress.set(address, vm);
  }

  /** The VM is gone (deleted, stopped, preempted): its addresses stop answering and its token is void. */
  async removeVm(vmId: string): Promise<void> {
    const vm = this.vms.get(vmId);
    if (!vm) return;
    this.vms.delete(vmId);
    this.byToken.delete(digest(vm.token));
    for (const [address, l] of vm.listeners) {
      this.byAddress.delete(address);
      await new Promise<void>((resolve) => l.server.close(() => resolve()));
    }
  }

  async close(): Promise<void> {
    for (const id of [...this.vms.keys()]) await this.removeVm(id);
    this.http.close();
  }

  /**
   * What a worker's programs get so that gcloud (and Python's google-auth) on the "VM" use this server: the
   * metadata server's address (GCE_METADATA_ROOT for gcloud, GCE_METADATA_HOST for google-auth) and Cloud
   * Storage's endpoint (gcloud's api_endpoint_overrides/storage property), at the worker's own address.
   */
  workerEnv(address: string): Record<string, string> {
    const l = this.byAddress.get(address)?.listeners.get(address);
    if (!l) return {};
    const at = `${address}:${l.port}`;
    return { GCE_METADATA_ROOT: at, GCE_METADATA_HOST: at, GCE_METADATA_IP: at, CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE: `http://${at}/storage/v1/` };
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://vm-services');
    } catch {
      res.writeHead(400).end();
      return;
    }
    const r = responder(res);
    const { send, json, fail } = r;
    try {
      const uid = peerUid(req.socket);
      if (this.owner !== undefined && uid !== this.owner) {
        return fail(403, `The emulated VMs' metadata server and Cloud Storage answer only the emulator's own user (uid ${this.owner}), not uid ${uid ?? 'unknown'}.`, 'forbidden');
      }
      const local = req.socket.localAddress ?? '';
      // Token check aside, the same loopback-Host and no-browser rules as the REST API.
      const refused = guardRequest(req, { token: '', port: () => req.socket.localPort ?? 0, host: local });
      if (refused && refused.status !== 'UNAUTHENTICATED') return fail(403, refused.message, 'forbidden');
      if (url.pathname.startsWith('/computeMetadata/v1/')) {
        if (req.headers['metadata-flavor'] !== 'Google') return fail(403, 'Missing Metadata-Flavor: Google header.', 'forbidden');
        const vm = this.byAddress.get(local);
        if (!vm) return fail(404, `No emulated VM has the address ${local}.`, 'notFound');
        const answer = this.metadata(vm, url.pathname.slice('/computeMetadata/v1'.length), url.searchParams);
        if (answer === undefined) return send(404, 'Not found', 'text/html');
        return typeof answer === 'string' ? send(200, answer, 'application/text') : json(200, answer);
      }
      const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
      const vm = m ? this.byToken.get(digest(m[1])) : undefined;
      if (!vm) return fail(401, m ? 'The access token is not that of an emulated VM that still exists.' : 'Anonymous caller does not have storage.objects.get access.', 'required');
      const base = `http://${local}:${req.socket.localPort ?? 0}`;
      if (/^\/(resumable\/)?upload\/storage\/v1\//.test(url.pathname) && (req.method === 'POST' || req.method === 'PUT')) {
        return await this.uploads.handle(req, url, base, r);
      }
      if (req.method !== 'GET') return fail(405, `This emulator's Cloud Storage takes no ${req.method} ${url.pathname}.`, 'methodNotAllowed');
      this.storage(url, base, r);
    } catch (e) {
      if (e instanceof BadObjectName) return fail(400, e.message, 'invalid');
      this.opts.log?.(`vm-services: ${req.method} ${url.pathname}: ${(e as Error).message}`);
      fail(500, (e as Error).message, 'backendError');
    }
  }

  /** The metadata paths gcloud reads on a VM; a string answers as text, anything else as JSON. */
  private metadata(vm: Vm, p: string, q: URLSearchParams): unknown {
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
    return { access_token: vm.token, expires_in: 3599, token_type: 'Bearer' };
  }

  private readonly uploads = new Uploads((bucket) => this.bucketRoot(bucket));

  /** A bucket's folder, or undefined where there is no such bucket. */
  private bucketRoot(bucket: string): string | undefined {
    const root = path.join(this.opts.dir, bucket);
    // lstat: a bucket folder that is a symlink is no bucket (it would lead anywhere).
    return /^[a-z0-9][a-z0-9._-]{1,221}[a-z0-9]$/.test(bucket) && fs.lstatSync(root, { throwIfNoEntry: false })?.isDirectory() ? root : undefined;
  }

  private storage(url: URL, base: string, { send, json, fail }: Responder): void {
    const list = /^\/storage\/v1\/b\/([^/]+)\/o$/.exec(url.pathname);
    const one = /^\/(?:download\/)?storage\/v1\/b\/([^/]+)\/o\/(.+)$/.exec(url.pathname);
    const bucketOnly = /^\/storage\/v1\/b\/([^/]+)$/.exec(url.pathname);
    // What gcloud storage asks before it writes: whether the bucket has a hierarchical namespace (it has not).
    const layout = /^\/storage\/v1\/b\/([^/]+)\/storageLayout$/.exec(url.pathname);
    const bucket = decodeName((list ?? one ?? bucketOnly ?? layout)?.[1] ?? '', 'bucket name');
    if (!bucket) return fail(404, `Not a Cloud Storage JSON API path: ${url.pathname}.`, 'notFound');
    const root = this.bucketRoot(bucket);
    if (!root) return fail(404, 'The specified bucket does not exist.', 'notFound');
    if (bucketOnly) return json(200, { kind: 'storage#bucket', id: bucket, name: bucket, location: 'US', storageClass: 'STANDARD' });
    if (layout) return json(200, { kind: 'storage#storageLayout', bucket, location: 'US', locationType: 'multi-region', hierarchicalNamespace: { enabled: false } });
    if (list) return json(200, listPage(root, url.searchParams, (name) => objectResource(base, bucket, name, path.join(root, name))));
    const name = decodeName(one?.[2] ?? '', 'object name');
    const file = path.join(root, name);
    if (!name || !isObjectFile(root, file)) return fail(404, `No such object: ${bucket}/${name}`, 'notFound');
    const meta = objectResource(base, bucket, name, file);
    if (url.searchParams.get('alt') === 'media') {
      return send(200, fs.readFileSync(file), 'application/octet-stream', { 'x-goog-hash': `crc32c=${meta.crc32c},md5=${meta.md5Hash}`, 'x-goog-generation': meta.generation });
    }
    json(200, meta);
  }
}

type Responder = ReturnType<typeof responder>;

/** How every answer is written: Google's headers, its JSON error body. */
function responder(res: http.ServerResponse) {
  const send = (code: number, body: string | Buffer, type: string, headers: Record<string, string> = {}) => {
    res.writeHead(code, { 'Content-Type': type, 'Metadata-Flavor': 'Google', ...headers });
    res.end(body);
  };
  const json = (code: number, body: unknown, headers: Record<string, string> = {}) => send(code, JSON.stringify(body), 'application/json; charset=UTF-8', headers);
  const fail = (code: number, message: string, reason: string) => json(code, { error: { code, message, errors: [{ message, reason, domain: 'global' }] } });
  return { send, json, fail, res };
}

function digest(token: string): string {
  return crypto.createHash('sha256').update(token).digest('base64');
}

