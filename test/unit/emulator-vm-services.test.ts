/**
 * The emulator's metadata server and Cloud Storage subset (emulator/src/vm-services.ts) over real HTTP: what
 * gcloud on a worker reads works (task-launch.test.ts copies gs:// mounts with the real gcloud); what must not
 * is refused: metadata without `Metadata-Flavor: Google` or from a browser, storage without a VM's token (or with
 * another, or a deleted VM's), object names that climb out of their bucket or pass through a symlink, bad
 * escapes and NULs (400, not 500), writes; and a second local user gets nothing at all.
 */
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it, test } from 'node:test';
import { VmServices } from '../../emulator/src/vm-services';
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
