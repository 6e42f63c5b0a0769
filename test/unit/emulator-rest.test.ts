import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { protos, v2 } from '@google-cloud/tpu';
import { OAuth2Client } from 'google-auth-library';
import { Emulator, type WorkerPool } from '../../emulator/src/emulator';
import type { EmulatorEndpoint } from '../../protocol/node/emulator-endpoint';
import { emulatorRequest } from '../helpers/emulator-http';
import { testAddressPrefix } from '../helpers/loopback';

/** Raw HTTP against the emulator's REST server: statuses, bodies, enum encodings, faults. */

const removed: string[] = [];
const downs: string[] = [];
/** While set, rest-a's workers do not come up, so its create stays CREATING however slow the machine is. */
let holdRestA: Promise<void> | undefined;
const pool: WorkerPool = {
  addWorker: async (spec) => {
    if (spec.nodeId.endsWith('/rest-a')) await holdRestA;
  },
  removeNode: async (id) => {
    downs.push(id);
    // Keeps js-slice's delete operation pending long enough to be cancelled.
    if (id === 'tpu/local-project/us-central2-b/js-slice') await new Promise((r) => setTimeout(r, 300));
  },
  close: async () => undefined,
};

let emu: Emulator;
let ep: EmulatorEndpoint;
const BASE = '/v2/projects/local-project/locations/us-central2-b';
const INT = '$alt=json%3Benum-encoding=int';

interface Reply {
  status: number;
  body: Record<string, unknown>;
}
interface ErrorBody {
  error: { code: number; message: string; status: string };
}

async function request(method: string, urlPath: string, body?: unknown): Promise<Reply> {
  const r = await emulatorRequest(ep, method, urlPath, body);
  assert.match(String(r.headers['content-type']), /application\/json/);
  return r;
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
  emu = new Emulator({ dir, opDelayMs: 20, addressPrefix: testAddressPrefix(7), workerPool: () => pool });
  ep = await emu.start();
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
    let release = (): void => undefined;
    holdRestA = new Promise((r) => (release = r));
    const r = await request('POST', `${BASE}/nodes?nodeId=rest-a&${INT}`, { acceleratorType: 'v5litepod-16', runtimeVersion: 'v2-alpha-tpuv5-lite', labels: { team: 'ml' } });
    assert.equal(r.status, 200);
    assert.equal(r.body.done, false);
    assert.match(String(r.body.name), /^projects\/local-project\/locations\/us-central2-b\/operations\/operation-/);
    assert.equal((r.body.metadata as Record<string, unknown>)['@type'], 'type.googleapis.com/google.cloud.tpu.v2.OperationMetadata');
    const during = await request('GET', `${BASE}/nodes/rest-a`);
    release();
    assert.equal(during.body.state, 'CREATING');

    const op = await waitOp(String(r.body.name));
    const node = op.response as Record<string, unknown>;
    assert.equal(node['@type'], 'type.googleapis.com/google.cloud.tpu.v2.Node');
    assert.equal(node.state, 'READY');
    const eps = node.networkEndpoints as { ipAddress: string; port: number; accessConfig: { externalIp: string } }[];
    assert.equal(eps.length, 4);
    assert.deepEqual(eps.map((e) => e.ipAddress), [1, 2, 3, 4].map((i) => `${testAddressPrefix(7)}.${i}`));
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
    assert.ok(downs.includes("tpu/local-project/us-central2-b/rest-s"), downs.join(" "));
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
    assert.ok(downs.includes("tpu/local-project/us-central2-b/rest-c"), downs.join(" "));
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
    await request('POST', '/emulator/v1/faults', { latencyMs: 3000 });
    let t = Date.now();
    await request('GET', `${BASE}/nodes`);
    const delayed = Date.now() - t;
    assert.ok(delayed >= 2990, `took ${delayed} ms`);
    const cleared = await request('DELETE', '/emulator/v1/faults');
    assert.equal(cleared.body.latencyMs, 0);
    t = Date.now();
    await request('GET', `${BASE}/nodes`);
    // Compared with the delayed call on the same machine, so a busy machine slows both alike.
    assert.ok(Date.now() - t < delayed - 2500, `took ${Date.now() - t} ms after clearing, ${delayed} ms with 3 s latency`);
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

/**
 * The real `@google-cloud/tpu` v2 client (REST transport) on the methods and fields the emulator used to miss:
 * operations list/cancel/delete, queued-resource reset, guest attributes, service identity, acceleratorConfig
 * and networkConfig, runtime/type checks, multi-host stop. Python's client covers the same in test/emulator-clients.
 */
describe('emulator REST API through @google-cloud/tpu', () => {
  const P = BASE.slice('/v2/'.length);
  let client: v2.TpuClient;
  const codeOf = (e: unknown) => (e as { code?: number }).code;
  const messageOf = (e: unknown) => String((e as Error).message);

  before(() => {
    // The emulator's bearer token, sent by the client itself as the product's client sends it (core/tpu/cloud.ts).
    const auth = new OAuth2Client();
    auth.setCredentials({ access_token: ep.token, token_type: 'Bearer' });
    client = new v2.TpuClient({ apiEndpoint: ep.host, port: ep.restPort, protocol: 'http', fallback: true, auth: auth as never });
  });
  after(() => client.close());

  async function waitQr(name: string, want: string): Promise<void> {
    for (let i = 0; i < 300; i++) {
      const [qr] = await client.getQueuedResource({ name });
      if (qr.state?.state === want) return;
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.fail(`${name} never reached ${want}`);
  }

  async function make(nodeId: string, node: protos.google.cloud.tpu.v2.INode): Promise<protos.google.cloud.tpu.v2.INode> {
    const [op] = await client.createNode({ parent: P, nodeId, node });
    const [made] = await op.promise();
    return made;
  }

  it('reports acceleratorConfig and networkConfig consistent with the type, and creates by acceleratorConfig', async () => {
    const slice = await make('js-slice', { acceleratorType: 'v5litepod-16', runtimeVersion: 'v2-alpha-tpuv5-lite' });
    const Type = protos.google.cloud.tpu.v2.AcceleratorConfig.Type;
    // enum-encoding=int: the operation's Node decodes enums as numbers.
    assert.deepEqual([slice.acceleratorConfig?.type, slice.acceleratorConfig?.topology], [Type.V5LITE_POD, '4x4']);
    assert.equal(slice.networkConfig?.network, 'projects/local-project/global/networks/default');
    assert.equal(slice.networkConfig?.subnetwork, 'projects/local-project/regions/us-central2/subnetworks/default');
    assert.equal(slice.networkConfig?.enableExternalIps, true);
    const byConfig = await make('js-bycfg', {
      acceleratorConfig: { type: 'V6E', topology: '2x4' },
      runtimeVersion: 'v2-alpha-tpuv6e',
      networkConfig: { network: 'default', enableExternalIps: false },
    });
    assert.equal(byConfig.acceleratorType, 'v6e-8');
    assert.ok(byConfig.networkEndpoints?.every((e) => !e.accessConfig?.externalIp));
    await client.deleteNode({ name: byConfig.name }).then(([op]) => op.promise());
  });

  it('refuses a runtime version that does not boot on the accelerator type, naming both', async () => {
    await assert.rejects(
      client.createNode({ parent: P, nodeId: 'js-bad', node: { acceleratorType: 'v5p-8', runtimeVersion: 'v2-alpha-tpuv6e' } }),
      (e) => codeOf(e) === 3 && /"v2-alpha-tpuv6e".*"v5p-8".*v2-alpha-tpuv5\b/.test(messageOf(e)),
    );
  });

  // gax's REST transport takes the code from the HTTP status (400 → 3), as it does with Cloud TPU's FAILED_PRECONDITION.
  it('refuses to stop a multi-host slice with 400 FAILED_PRECONDITION', async () => {
    const raw = await request('POST', `${BASE}/nodes/js-slice:stop`, {});
    assert.deepEqual([raw.status, err(raw).status], [400, 'FAILED_PRECONDITION']);
    await assert.rejects(client.stopNode({ name: `${P}/nodes/js-slice` }), (e) => codeOf(e) === 3 && /multi-host/.test(messageOf(e)));
    const [node] = await client.getNode({ name: `${P}/nodes/js-slice` });
    assert.equal(node.state, 'READY');
  });

  it('lists operations with a filter and pages, cancels and deletes one', async () => {
    const ops: protos.google.longrunning.IOperation[] = [];
    // The mixin's types say requests are classes and items pages; it takes plain objects and yields operations.
    const req = { name: P, filter: 'metadata.verb = "create"', pageSize: 1 } as unknown as protos.google.longrunning.ListOperationsRequest;
    for await (const op of client.listOperationsAsync(req) as AsyncIterable<protos.google.longrunning.IOperation>) ops.push(op);
    assert.ok(ops.length >= 2);
    assert.ok(ops.every((o) => String(o.name).startsWith(`${P}/operations/`)));
    const [del] = await client.deleteNode({ name: `${P}/nodes/js-slice` });
    await client.cancelOperation({ name: String(del.name) } as protos.google.longrunning.CancelOperationRequest);
    const pending = await request('GET', `${BASE}/operations?filter=done%20%3D%20false`);
    assert.deepEqual(
      (pending.body.operations as { name: string; metadata: { cancelRequested: boolean } }[]).map((o) => [o.name, o.metadata.cancelRequested]),
      [[del.name, true]],
    );
    await del.promise();
    const opReq = { name: String(del.name) } as protos.google.longrunning.GetOperationRequest;
    await client.deleteOperation(opReq);
    await assert.rejects(client.getOperation(opReq), (e) => codeOf(e) === 5);
  });

  it('answers guest attributes per worker with the host key, and a service identity', async () => {
    await make('js-one', { acceleratorType: 'v4-8', runtimeVersion: 'tpu-ubuntu2204-base' });
    const [attrs] = await client.getGuestAttributes({ name: `${P}/nodes/js-one`, queryPath: '/hostkeys/ssh-ed25519' });
    const pub = fs.readFileSync(path.join(emu.dir, 'keys', 'ssh_host_ed25519_key.pub'), 'utf8').split(' ');
    assert.deepEqual(
      attrs.guestAttributes?.map((g) => g.queryValue?.items?.map((i) => [i.namespace, i.key, i.value])),
      [[['hostkeys', pub[0], pub[1].trim()]]],
    );
    const [id] = await client.generateServiceIdentity({ parent: P });
    assert.match(String(id.identity?.email), /^service-\d{12}@cloud-tpu\.iam\.gserviceaccount\.com$/);
    await client.deleteNode({ name: `${P}/nodes/js-one` }).then(([op]) => op.promise());
  });

  it('resets a FAILED queued resource and deletes it with force=True as gcloud sends it', async () => {
    emu.rest.addCapacityFault({ zone: 'us-central2-b', acceleratorType: 'v6e-1' });
    const name = `${P}/queuedResources/js-qr`;
    const node = { acceleratorType: 'v6e-1', runtimeVersion: 'v2-alpha-tpuv6e' };
    const [created] = await client.createQueuedResource({
      parent: P,
      queuedResourceId: 'js-qr',
      queuedResource: { tpu: { nodeSpec: [{ parent: P, nodeId: 'js-qr-node', node }] }, queueingPolicy: { validUntilDuration: { seconds: 1 } } },
    });
    await created.promise();
    await waitQr(name, 'FAILED');
    await assert.rejects(client.deleteQueuedResource({ name: `${P}/queuedResources/none`, force: true }), (e) => codeOf(e) === 5);
    emu.rest.clearFaults();
    const [reset] = await client.resetQueuedResource({ name });
    await reset.promise();
    await assert.rejects(client.resetQueuedResource({ name }), (e) => codeOf(e) === 3 && /FAILED or SUSPENDED/.test(messageOf(e)));
    await waitQr(name, 'ACTIVE');
    assert.equal((await request('DELETE', `/v2/${name}?force=nope`)).status, 400);
    const del = await request('DELETE', `/v2/${name}?force=True`);
    assert.equal(del.status, 200, JSON.stringify(del.body));
    await waitOp(String(del.body.name));
  });

  it('resets a SUSPENDED spot queued resource: its preempted node is replaced by a new one', async () => {
    const name = `${P}/queuedResources/js-spot`;
    const nodeName = `${P}/nodes/js-spot-node`;
    const node = { acceleratorType: 'v6e-1', runtimeVersion: 'v2-alpha-tpuv6e' };
    const [created] = await client.createQueuedResource({ parent: P, queuedResourceId: 'js-spot', queuedResource: { tpu: { nodeSpec: [{ parent: P, nodeId: 'js-spot-node', node }] }, spot: {} } });
    await created.promise();
    await waitQr(name, 'ACTIVE');
    const [first] = await client.getNode({ name: nodeName });
    assert.equal((await request('POST', `/emulator/v1/${nodeName}:preempt`)).status, 200);
    await waitQr(name, 'SUSPENDED');
    const [reset] = await client.resetQueuedResource({ name });
    await reset.promise();
    await waitQr(name, 'ACTIVE');
    const [second] = await client.getNode({ name: nodeName });
    assert.equal(second.state, 'READY');
    assert.notEqual(second.id, first.id);
    const [del] = await client.deleteQueuedResource({ name, force: true });
    await del.promise();
    await assert.rejects(client.getNode({ name: nodeName }), (e) => codeOf(e) === 5);
  });

  it('answers a malformed %-escape with 400, and a 3 MB body with 400 rather than a reset connection', async () => {
    const bad = await request('GET', `${BASE}/nodes/%E0%A4%A`);
    assert.deepEqual([bad.status, err(bad).status], [400, 'INVALID_ARGUMENT']);
    await assert.rejects(
      client.createNode({ parent: P, nodeId: 'js-big', node: { acceleratorType: 'v4-8', runtimeVersion: 'tpu-ubuntu2204-base', description: 'x'.repeat(3 << 20) } }),
      (e) => codeOf(e) === 3 && /exceeds the limit/.test(messageOf(e)),
    );
  });
});
