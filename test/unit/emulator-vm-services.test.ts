/**
 * The emulator's metadata server and Cloud Storage subset (emulator/src/vm-services.ts) over real HTTP: what
 * gcloud on a worker reads works (task-launch.test.ts copies gs:// mounts with the real gcloud); what must not
 * is refused: metadata without `Metadata-Flavor: Google` or from a browser, storage without a VM's token (or with
 * another, or a deleted VM's), object names that climb out of their bucket or pass through a symlink, bad
 * escapes and NULs (400, not 500), deletes; and a second local user gets nothing at all. Writes come as gcloud
 * storage cp sends them (gke-run.test.ts runs the real gcloud in pods); the product's reader (core/storage) pages.
 */
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it, test } from 'node:test';
import { VmServices } from '../../emulator/src/vm-services';
import { staticToken } from '../../extension/src/core/gke/credentials';
import { isTpwError } from '../../extension/src/core/errors';
import { GcsReader } from '../../extension/src/core/storage/gcs-reader';
import { testAddressPrefix } from '../helpers/loopback';
import { SECOND_USER_SKIP, secondUserFixture } from '../helpers/second-user';

let dir: string;
let svc: VmServices;
let base: string;
let token: string;
const prefix = testAddressPrefix(235);
const getToken = async (at: string) =>
  ((await (await fetch(`${at}/computeMetadata/v1/instance/service-accounts/default/token`, { headers: { 'Metadata-Flavor': 'Google' } })).json()) as { access_token: string; token_type: string });

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-vmsvc-'));
  fs.mkdirSync(path.join(dir, 'store/bkt/d/sub'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'store/bkt/d/a.txt'), 'alpha\n');
  fs.writeFileSync(path.join(dir, 'store/bkt/d/sub/b.txt'), 'beta\n');
  fs.writeFileSync(path.join(dir, 'secret.txt'), 'outside every bucket\n');
  fs.symlinkSync(path.join(dir, 'secret.txt'), path.join(dir, 'store/bkt/d/link.txt'));
  fs.symlinkSync(dir, path.join(dir, 'store/bkt/outside'));
  svc = new VmServices({ dir: path.join(dir, 'store'), project: 'proj', host: '127.0.0.1' });
  await svc.listen();
  await svc.addWorker('vm-a', `${prefix}.1`);
  base = `http://${svc.workerEnv(`${prefix}.1`).GCE_METADATA_ROOT}`;
  const t = await getToken(base);
  assert.equal(t.token_type, 'Bearer');
  token = t.access_token;
});
after(async () => {
  await svc.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const auth = (t = token) => ({ Authorization: `Bearer ${t}` });

test('the worker environment points gcloud and google-auth at this server, at the worker\'s own address', () => {
  const env = svc.workerEnv(`${prefix}.1`);
  assert.match(env.GCE_METADATA_ROOT, new RegExp(`^${prefix.replace(/\./g, '\\.')}\\.1:\\d+$`));
  assert.equal(env.GCE_METADATA_HOST, env.GCE_METADATA_ROOT);
  assert.equal(env.CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE, `${base}/storage/v1/`);
});

test('metadata answers with Metadata-Flavor only, and not to a browser', async () => {
  const project = await fetch(`${base}/computeMetadata/v1/project/project-id`, { headers: { 'Metadata-Flavor': 'Google' } });
  assert.equal(project.status, 200);
  assert.equal(project.headers.get('metadata-flavor'), 'Google');
  assert.equal(await project.text(), 'proj');
  assert.equal((await fetch(`${base}/computeMetadata/v1/project/project-id`)).status, 403);
  assert.equal((await fetch(`${base}/computeMetadata/v1/project/project-id`, { headers: { 'Metadata-Flavor': 'Google', Origin: 'http://evil.example' } })).status, 403);
  assert.equal((await fetch(`${base}/computeMetadata/v1/instance/service-accounts/someone-else/token`, { headers: { 'Metadata-Flavor': 'Google' } })).status, 404);
});

test('storage lists by prefix and delimiter, and serves objects with the hashes gcloud checks', async () => {
  const list = (await (await fetch(`${base}/storage/v1/b/bkt/o?prefix=d%2F&delimiter=%2F`, { headers: auth() })).json()) as { items: { name: string }[]; prefixes: string[] };
  assert.deepEqual(list.items.map((i) => i.name), ['d/a.txt']);
  assert.deepEqual(list.prefixes, ['d/sub/']);
  const all = (await (await fetch(`${base}/storage/v1/b/bkt/o?prefix=d%2F`, { headers: auth() })).json()) as { items: { name: string }[] };
  assert.deepEqual(all.items.map((i) => i.name), ['d/a.txt', 'd/sub/b.txt']);
  const meta = (await (await fetch(`${base}/storage/v1/b/bkt/o/d%2Fa.txt`, { headers: auth() })).json()) as { size: string; md5Hash: string; crc32c: string; mediaLink: string };
  assert.equal(meta.size, '6');
  assert.equal(meta.md5Hash, crypto.createHash('md5').update('alpha\n').digest('base64'));
  // CRC32C of "123456789" is e3069283 (the standard check value of CRC-32C, RFC 3720).
  fs.writeFileSync(path.join(dir, 'store/bkt/check.txt'), '123456789');
  const check = (await (await fetch(`${base}/storage/v1/b/bkt/o/check.txt`, { headers: auth() })).json()) as { crc32c: string };
  assert.equal(Buffer.from(check.crc32c, 'base64').toString('hex'), 'e3069283');
  const media = await fetch(meta.mediaLink, { headers: auth() });
  assert.equal(await media.text(), 'alpha\n');
  assert.match(media.headers.get('x-goog-hash') ?? '', new RegExp(`crc32c=${meta.crc32c.replace(/[+/=]/g, '\\$&')},md5=`));
});

test('storage refuses no token, another token, escapes from the bucket, unknown buckets and writes', async () => {
  assert.equal((await fetch(`${base}/storage/v1/b/bkt/o`)).status, 401);
  assert.equal((await fetch(`${base}/storage/v1/b/bkt/o`, { headers: auth('not-the-token') })).status, 401);
  assert.equal((await fetch(`${base}/storage/v1/b/bkt/o/..%2F..%2Fsecret.txt?alt=media`, { headers: auth() })).status, 404);
  assert.equal((await fetch(`${base}/storage/v1/b/nope/o`, { headers: auth() })).status, 404);
  assert.equal((await fetch(`${base}/storage/v1/b/bkt/o/d%2Fa.txt`, { method: 'DELETE', headers: auth() })).status, 405);
  assert.equal(fs.readFileSync(path.join(dir, 'store/bkt/d/a.txt'), 'utf8'), 'alpha\n');
});

test('each VM has a token of its own that dies with it; symlinks, bad escapes and NULs are no objects', async () => {
  await svc.addWorker('vm-b', `${prefix}.2`);
  const other = (await getToken(`http://${svc.workerEnv(`${prefix}.2`).GCE_METADATA_ROOT}`)).access_token;
  assert.notEqual(other, token, 'two VMs, two service-account tokens');
  assert.equal((await fetch(`${base}/storage/v1/b/bkt/o`, { headers: auth(other) })).status, 200);
  await svc.removeVm('vm-b');
  assert.equal((await fetch(`${base}/storage/v1/b/bkt/o`, { headers: auth(other) })).status, 401, "a deleted VM's token reads nothing");
  // A symlink inside a bucket (to a file outside it, or to a folder) is neither listed nor served.
  const all = (await (await fetch(`${base}/storage/v1/b/bkt/o`, { headers: auth() })).json()) as { items: { name: string }[] };
  assert.deepEqual(all.items.map((i) => i.name), ['check.txt', 'd/a.txt', 'd/sub/b.txt']);
  assert.equal((await fetch(`${base}/storage/v1/b/bkt/o/d%2Flink.txt?alt=media`, { headers: auth() })).status, 404);
  assert.equal((await fetch(`${base}/storage/v1/b/bkt/o/outside%2Fsecret.txt?alt=media`, { headers: auth() })).status, 404);
  for (const bad of ['d%2Fa.txt%00', '%zz', 'd%2F%E0%A4%A']) {
    const r = await fetch(`${base}/storage/v1/b/bkt/o/${bad}?alt=media`, { headers: auth() });
    assert.equal(r.status, 400, bad);
    assert.equal(((await r.json()) as { error: { errors: { reason: string }[] } }).error.errors[0].reason, 'invalid');
  }
  assert.equal((await fetch(`${base}/storage/v1/b/bk%zzt/o`, { headers: auth() })).status, 400);
});

test('uploads as gcloud sends them: media, multipart (apitools: a \'-quoted boundary, bare LFs), resumable in chunks; names that climb out are refused', async () => {
  fs.mkdirSync(path.join(dir, 'store/upl'), { recursive: true });
  const stored = (name: string) => fs.readFileSync(path.join(dir, 'store/upl', name));
  const data = Buffer.concat([Buffer.from('\n\r\n--x\n'), crypto.randomBytes(3000), Buffer.from('\r\n')]);
  const media = await fetch(`${base}/upload/storage/v1/b/upl/o?uploadType=media&name=m%2Fa.bin`, { method: 'POST', headers: auth(), body: data });
  assert.equal(media.status, 200);
  assert.equal(((await media.json()) as { md5Hash: string }).md5Hash, crypto.createHash('md5').update(data).digest('base64'));
  assert.ok(stored('m/a.bin').equals(data));
  const b = '===============7853279394417345798==';
  const related = Buffer.concat([Buffer.from(`--${b}\nContent-Type: application/json\nMIME-Version: 1.0\n\n{"bucket": "upl", "name": "p/0-1/h.xplane.pb"}\n--${b}\nContent-Type: application/octet-stream\nMIME-Version: 1.0\nContent-Transfer-Encoding: binary\n\n`), data, Buffer.from(`\n--${b}--`)]);
  const multi = await fetch(`${base}/upload/storage/v1/b/upl/o?uploadType=multipart`, { method: 'POST', headers: { ...auth(), 'Content-Type': `multipart/related; boundary='${b}'` }, body: related });
  assert.equal(multi.status, 200, await multi.clone().text());
  assert.ok(stored('p/0-1/h.xplane.pb').equals(data), 'the data part byte for byte, its leading LF kept');
  const start = await fetch(`${base}/resumable/upload/storage/v1/b/upl/o?uploadType=resumable`, { method: 'POST', headers: { ...auth(), 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'r/big.bin' }) });
  const session = start.headers.get('location')!;
  assert.match(session, /upload_id=/);
  const first = await fetch(session, { method: 'PUT', headers: { ...auth(), 'Content-Range': `bytes 0-999/${data.length}` }, body: data.subarray(0, 1000) });
  assert.equal(first.status, 308);
  assert.equal(first.headers.get('range'), 'bytes=0-999');
  const last = await fetch(session, { method: 'PUT', headers: { ...auth(), 'Content-Range': `bytes 1000-${data.length - 1}/${data.length}` }, body: data.subarray(1000) });
  assert.equal(last.status, 200);
  assert.ok(stored('r/big.bin').equals(data));
  for (const bad of ['..%2Fescape.txt', 'a%2F..%2F..%2Fx', 'a%2F%2Fb', '']) {
    const r = await fetch(`${base}/upload/storage/v1/b/upl/o?uploadType=media&name=${bad}`, { method: 'POST', headers: auth(), body: 'x' });
    assert.equal(r.status, 400, bad);
  }
  assert.ok(!fs.existsSync(path.join(dir, 'store/escape.txt')) && !fs.existsSync(path.join(dir, 'x')));
  assert.equal((await fetch(`${base}/upload/storage/v1/b/upl/o?uploadType=media&name=n.txt`, { method: 'POST', body: 'x' })).status, 401, 'no token, no write');
  assert.equal((await fetch(`${base}/upload/storage/v1/b/nope/o?uploadType=media&name=n.txt`, { method: 'POST', headers: auth(), body: 'x' })).status, 404);
});

test('the product\'s Cloud Storage reader follows nextPageToken to the last page, downloads byte for byte, and says a refusal and a missing bucket in one line naming the bucket', async () => {
  fs.mkdirSync(path.join(dir, 'store/pages/run/profile/0-0'), { recursive: true });
  const names = ['run/profile/0-0/a.pb', 'run/profile/0-0/b.pb', 'run/profile/0-1', 'run/profile/1-0.x', 'run/profile/z'];
  fs.mkdirSync(path.join(dir, 'store/pages/other'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'store/pages/other/not-listed'), 'x');
  for (const [i, n] of names.entries()) fs.writeFileSync(path.join(dir, 'store/pages', n), 'y'.repeat(i + 1));
  // The server pages as Google does: two per page, three pages.
  let pages = 0;
  let pageToken = '';
  do {
    const page = (await (await fetch(`${base}/storage/v1/b/pages/o?prefix=run%2F&maxResults=2${pageToken ? `&pageToken=${pageToken}` : ''}`, { headers: auth() })).json()) as { items: unknown[]; nextPageToken?: string };
    pages++;
    assert.ok(page.items.length <= 2);
    pageToken = page.nextPageToken ?? '';
  } while (pageToken);
  assert.equal(pages, 3);
  const reader = new GcsReader(staticToken(token, "the VM's token"), base, 2);
  const listed = await reader.list('pages', 'run/');
  assert.deepEqual(listed.map((o) => [o.name, o.bytes]), names.map((n, i) => [n, i + 1]));
  const local = path.join(dir, 'got', 'b.pb');
  await reader.download('pages', 'run/profile/0-0/b.pb', local);
  assert.equal(fs.readFileSync(local, 'utf8'), 'yy');
  assert.deepEqual(fs.readdirSync(path.dirname(local)), ['b.pb'], 'no partial file left');
  const oneLine = (re: RegExp) => (e: unknown) => isTpwError(e) && !e.message.includes('\n') && re.test(e.message);
  await assert.rejects(new GcsReader(staticToken('not-a-token', 'a revoked token'), base).list('pages', ''), oneLine(/^Cloud Storage refused a revoked token for bucket "pages" \(/));
  await assert.rejects(reader.list('no-such-bucket', ''), oneLine(/^Cloud Storage bucket "no-such-bucket" does not exist\.$/));
  await assert.rejects(reader.download('pages', 'run/nothing', path.join(dir, 'got', 'n')), oneLine(/no such object in bucket "pages"/));
});

describe('a second local user', { skip: SECOND_USER_SKIP }, () => {
  const user = secondUserFixture({ before, after });
  /** curl as the other user: status code and body. */
  const curl = async (...args: string[]) => {
    const r = await user.as('curl', ['-sS', '-o', '-', '-w', '\n%{http_code}', ...args]);
    const lines = r.stdout.trimEnd().split('\n');
    return { status: Number(lines.pop()), body: lines.join('\n') };
  };

  it('gets no token from the metadata server and reads no bucket even with a VM\'s token', async () => {
    const meta = await curl('-H', 'Metadata-Flavor: Google', `${base}/computeMetadata/v1/instance/service-accounts/default/token`);
    assert.equal(meta.status, 403, meta.body);
    assert.doesNotMatch(meta.body, new RegExp(token));
    assert.match(meta.body, /answer only the emulator's own user/);
    const read = await curl('-H', `Authorization: Bearer ${token}`, `${base}/storage/v1/b/bkt/o/d%2Fa.txt?alt=media`);
    assert.equal(read.status, 403, read.body);
    assert.doesNotMatch(read.body, /alpha/);
  });
});
