import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Emulator, type WorkerPool } from '../../extension/src/core/emulator/emulator';

/** Raw HTTP against the emulator's REST server: statuses, bodies, enum encodings, faults. */

const removed: string[] = [];
const downs: string[] = [];
const pool: WorkerPool = {
  addWorker: async () => undefined,
  removeNode: async (id) => void downs.push(id),
  close: async () => undefined,
};

let emu: Emulator;
let port: number;
const BASE = '/v2/projects/local-project/locations/us-central2-b';
const INT = '$alt=json%3Benum-encoding=int';

interface Reply {
  status: number;
  body: Record<string, unknown>;
}
interface ErrorBody {
  error: { code: number; message: string; status: string };
}

function request(method: string, urlPath: string, body?: unknown): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const text = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const req = http.request(
      { host: '127.0.0.1', port, method, path: urlPath, agent: false, headers: text ? { 'content-type': 'application/json' } : {} },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          assert.match(String(res.headers['content-type']), /application\/json/);
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> });
        });
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

function err(r: Reply): ErrorBody['error'] {
  return (r.body as unknown as ErrorBody).error;
}

async function waitOp(name: string): Promise<Record<string, unknown>> {
  for (let i = 0; i < 500; i++) {
    const r = await request('GET', `/v2/${name}`);
    assert.equal(r.status, 200);
    if (r.body.done) return r.body;
    await new Promise((res) => setTimeout(res, 10));
  }
  throw new Error(`operation ${name} did not finish`);
}

async function createNode(id: string, acceleratorType = 'v4-8', extra: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const r = await request('POST', `${BASE}/nodes?nodeId=${id}&${INT}`, { acceleratorType, runtimeVersion: 'tpu-ubuntu2204-base', ...extra });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return waitOp(String(r.body.name));
}

before(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-rest-'));
  removed.push(dir);
  emu = new Emulator({ dir, opDelayMs: 20, addressPrefix: '127.0.7', workerPool: () => pool });
  port = (await emu.start()).restPort;
});
after(async () => {
  await emu.stop();
  removed.forEach((d) => fs.rmSync(d, { recursive: true, force: true }));
});

describe('emulator REST API', () => {
  it('lists no nodes in an empty zone', async () => {
    const r = await request('GET', `${BASE}/nodes?${INT}`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.nodes, []);
  });

  it('creates a node through a long-running operation', async () => {
    const r = await request('POST', `${BASE}/nodes?nodeId=rest-a&${INT}`, { acceleratorType: 'v5litepod-16', runtimeVersion: 'v2-alpha-tpuv5-lite', labels: { team: 'ml' } });
    assert.equal(r.status, 200);
    assert.equal(r.body.done, false);
    assert.match(String(r.body.name), /^projects\/local-project\/locations\/us-central2-b\/operations\/operation-/);
    assert.equal((r.body.metadata as Record<string, unknown>)['@type'], 'type.googleapis.com/google.cloud.tpu.v2.OperationMetadata');
    const during = await request('GET', `${BASE}/nodes/rest-a`);
    assert.equal(during.body.state, 'CREATING');

    const op = await waitOp(String(r.body.name));
    const node = op.response as Record<string, unknown>;
    assert.equal(node['@type'], 'type.googleapis.com/google.cloud.tpu.v2.Node');
    assert.equal(node.state, 'READY');
    const eps = node.networkEndpoints as { ipAddress: string; port: number; accessConfig: { externalIp: string } }[];
    assert.equal(eps.length, 4);
    assert.deepEqual(eps.map((e) => e.ipAddress), ['127.0.7.1', '127.0.7.2', '127.0.7.3', '127.0.7.4']);
    assert.ok(eps.every((e) => e.port === 8470 && e.accessConfig.externalIp === e.ipAddress));
    assert.deepEqual(node.labels, { team: 'ml' });
    assert.equal(node.apiVersion, 'V2');
    assert.equal(node.health, 'HEALTHY');
  });

  it('encodes enums as numbers when the client asks for enum-encoding=int', async () => {
    const named = await request('GET', `${BASE}/nodes/rest-a`);
    assert.equal(named.body.state, 'READY');
    const numeric = await request('GET', `${BASE}/nodes/rest-a?${INT}`);
    assert.equal(numeric.body.state, 2);
    assert.equal(numeric.body.health, 1);
    assert.equal(numeric.body.apiVersion, 4);
    const types = await request('GET', `${BASE}/acceleratorTypes?${INT}`);
    const t = (types.body.acceleratorTypes as { type: string; acceleratorConfigs: { type: number; topology: string }[] }[]).find((a) => a.type === 'v5litepod-16');
    assert.deepEqual(t?.acceleratorConfigs, [{ type: 9, topology: '4x4' }]);
  });

  it('answers 404 NOT_FOUND in Google style for unknown nodes, operations, zones and paths', async () => {
    for (const p of [`${BASE}/nodes/missing`, `${BASE}/operations/operation-0-0`, '/v2/projects/local-project/locations/mars-1/nodes', '/v3/nope']) {
      const r = await request('GET', p);
      assert.equal(r.status, 404, p);
      assert.equal(err(r).code, 404);
      assert.equal(err(r).status, 'NOT_FOUND');
      assert.ok(err(r).message.length > 0);
    }
    const zone = await request('GET', '/v2/projects/local-project/locations/mars-1/nodes');
    assert.match(err(zone).message, /mars-1.*us-central2-b/);
    const project = await request('GET', '/v2/projects/someone-else/locations/us-central2-b/nodes');
    assert.equal(project.status, 403);
    assert.equal(err(project).status, 'PERMISSION_DENIED');
  });

  it('answers 409 ALREADY_EXISTS for a duplicate node id', async () => {
    const r = await request('POST', `${BASE}/nodes?nodeId=rest-a`, { acceleratorType: 'v4-8', runtimeVersion: 'tpu-ubuntu2204-base' });
    assert.equal(r.status, 409);
    assert.deepEqual(err(r), { code: 409, status: 'ALREADY_EXISTS', message: err(r).message });
    assert.match(err(r).message, /rest-a/);
  });

  it('answers 400 INVALID_ARGUMENT naming the bad value and the valid ones', async () => {
    const badId = await request('POST', `${BASE}/nodes?nodeId=Not_Valid`, { acceleratorType: 'v4-8', runtimeVersion: 'tpu-ubuntu2204-base' });
    assert.equal(badId.status, 400);
    assert.equal(err(badId).status, 'INVALID_ARGUMENT');
    assert.match(err(badId).message, /"Not_Valid"/);
    const badType = await request('POST', `${BASE}/nodes?nodeId=ok`, { acceleratorType: 'v4-7', runtimeVersion: 'tpu-ubuntu2204-base' });
    assert.equal(badType.status, 400);
    assert.match(err(badType).message, /"v4-7".*v4-8.*v6e-32/);
    const badRt = await request('POST', `${BASE}/nodes?nodeId=ok`, { acceleratorType: 'v4-8', runtimeVersion: 'tpu-ubuntu1604' });
    assert.match(err(badRt).message, /"tpu-ubuntu1604".*v2-alpha-tpuv6e/);
    const noId = await request('POST', `${BASE}/nodes`, { acceleratorType: 'v4-8', runtimeVersion: 'tpu-ubuntu2204-base' });
    assert.match(err(noId).message, /nodeId/);
    const badJson = await request('POST', `${BASE}/nodes?nodeId=ok`, '{not json');
    assert.equal(badJson.status, 400);
    assert.equal(err(badJson).status, 'INVALID_ARGUMENT');
  });

  it('stops and starts a single-host node, and refuses transitions from the wrong state', async () => {
    await createNode('rest-s', 'v4-8');
    const stop = await request('POST', `${BASE}/nodes/rest-s:stop?${INT}`, {});
    assert.equal(stop.status, 200);
    const again = await request('POST', `${BASE}/nodes/rest-s:stop?${INT}`, {});
    assert.equal(again.status, 400);
    assert.equal(err(again).status, 'FAILED_PRECONDITION');
    const stopped = await waitOp(String(stop.body.name));
    assert.equal((stopped.response as Record<string, unknown>).state, 'STOPPED');
    assert.ok(downs.includes('rest-s'));
    const start = await request('POST', `${BASE}/nodes/rest-s:start`, {});
    const started = await waitOp(String(start.body.name));
    assert.equal((started.response as Record<string, unknown>).state, 'READY');
    await waitOp(String((await request('DELETE', `${BASE}/nodes/rest-s`)).body.name));
  });

  it('pages node lists with pageSize and pageToken', async () => {
    await createNode('rest-b');
    await createNode('rest-c', 'v4-8', { schedulingConfig: { spot: true } });
    const names: string[] = [];
    let token = '';
    for (let i = 0; i < 5; i++) {
      const r = await request('GET', `${BASE}/nodes?pageSize=2${token ? `&pageToken=${token}` : ''}&${INT}`);
      names.push(...(r.body.nodes as { name: string }[]).map((n) => n.name.split('/').pop() ?? ''));
      token = String(r.body.nextPageToken ?? '');
      if (!token) break;
    }
    assert.deepEqual(names, ['rest-a', 'rest-b', 'rest-c']);
  });

  it('preempts a spot node through the test endpoint, and refuses an on-demand one', async () => {
    const onDemand = await request('POST', '/emulator/v1/projects/local-project/locations/us-central2-b/nodes/rest-b:preempt');
    assert.equal(onDemand.status, 400);
    assert.match(err(onDemand).message, /not spot or preemptible/);
    const r = await request('POST', '/emulator/v1/projects/local-project/locations/us-central2-b/nodes/rest-c:preempt');
    assert.equal(r.status, 200);
    assert.equal(r.body.state, 'PREEMPTED');
    assert.ok(downs.includes('rest-c'));
    const start = await request('POST', `${BASE}/nodes/rest-c:start`, {});
    assert.equal(start.status, 400);
    assert.match(err(start).message, /PREEMPTED/);
  });

  it('deletes a node', async () => {
    const r = await request('DELETE', `${BASE}/nodes/rest-b?${INT}`);
    assert.equal(r.status, 200);
    const op = await waitOp(String(r.body.name));
    assert.deepEqual(op.response, { '@type': 'type.googleapis.com/google.protobuf.Empty' });
    assert.equal((await request('GET', `${BASE}/nodes/rest-b`)).status, 404);
  });

  it('injects faults for the next N matching calls only', async () => {
    const add = await request('POST', '/emulator/v1/faults', { method: 'ListNodes', code: 429, count: 2 });
    assert.equal(add.status, 200);
    await request('POST', '/emulator/v1/faults', { method: 'CreateNode', code: 'PERMISSION_DENIED' });
    for (let i = 0; i < 2; i++) {
      const r = await request('GET', `${BASE}/nodes`);
      assert.equal(r.status, 429);
      assert.equal(err(r).status, 'RESOURCE_EXHAUSTED');
      assert.match(err(r).message, /[Qq]uota/);
    }
    assert.equal((await request('GET', `${BASE}/nodes`)).status, 200);
    assert.equal((await request('GET', `${BASE}/nodes/rest-a`)).status, 200, 'other methods are untouched');
    const denied = await request('POST', `${BASE}/nodes?nodeId=zzz`, { acceleratorType: 'v4-8', runtimeVersion: 'tpu-ubuntu2204-base' });
    assert.equal(denied.status, 403);
    assert.equal(err(denied).status, 'PERMISSION_DENIED');
    const left = await request('GET', '/emulator/v1/faults');
    assert.deepEqual(left.body.faults, []);
  });

  it('adds latency on request and clears it', async () => {
    await request('POST', '/emulator/v1/faults', { latencyMs: 150 });
    let t = Date.now();
    await request('GET', `${BASE}/nodes`);
    assert.ok(Date.now() - t >= 140, `took ${Date.now() - t} ms`);
    const cleared = await request('DELETE', '/emulator/v1/faults');
    assert.equal(cleared.body.latencyMs, 0);
    t = Date.now();
    await request('GET', `${BASE}/nodes`);
    assert.ok(Date.now() - t < 140);
  });

  it('lists accelerator types, runtime versions and locations', async () => {
    const types = await request('GET', `${BASE}/acceleratorTypes`);
    const names = (types.body.acceleratorTypes as { name: string; type: string }[]).map((t) => t.type);
    assert.ok(names.includes('v6e-16') && names.includes('v4-32'));
    const one = await request('GET', `${BASE}/acceleratorTypes/v6e-16`);
    assert.equal(one.body.name, `${BASE.slice(4)}/acceleratorTypes/v6e-16`);
    const rts = await request('GET', `${BASE}/runtimeVersions`);
    assert.ok((rts.body.runtimeVersions as { version: string }[]).some((v) => v.version === 'tpu-ubuntu2204-base'));
    const locs = await request('GET', '/v2/projects/local-project/locations');
    assert.ok((locs.body.locations as { locationId: string }[]).some((l) => l.locationId === 'europe-west4-a'));
    const status = await request('GET', '/emulator/v1/status');
    assert.equal(status.body.nodes, 2);
  });
});
