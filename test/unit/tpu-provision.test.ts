/**
 * Issue 3 through the real `@google-cloud/tpu` v2 client (CloudTpuApi over its REST transport) against a real
 * emulator: zones from the locations API, create options (spot, reserved, startup script, labels, disks),
 * queued resources through their whole state machine, PREEMPTED, and every error path the tree and the
 * wizard handle — quota in one zone, 403, API not enabled, latency, network errors with retry, and a VM
 * deleted by someone else.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_ZONES } from '../../emulator/src/catalog';
import { Emulator } from '../../emulator/src/emulator';
import type { EmulatorEndpoint } from '../../protocol/node/emulator-endpoint';
import { isTpwError, type TpwError } from '../../extension/src/core/errors';
import { addKeyToNode } from '../../extension/src/core/slices/add-key';
import { generateEd25519KeyPair } from '../../extension/src/core/ssh/keys';
import type { TpuApi } from '../../extension/src/core/tpu/api';
import { CloudTpuApi, emulatorTpuApi } from '../../extension/src/core/tpu/cloud';
import type { NodeId, QueuedResource, QueuedResourceStateName } from '../../extension/src/core/tpu/models';
import { withRetry, zonesOffering } from '../../extension/src/core/tpu/zones';
import { emulatorCall as call, sshBanner as banner, startEmulatorApi, type EmulatorApi } from '../helpers/emulator-api';
import { freePort } from '../helpers/sshd';
import { testAddressPrefix } from '../helpers/loopback';

const P = 'local-project';
const Z = 'us-east5-b';
const RT = 'v2-alpha-tpuv5-lite';
const id = (node: string, zone = Z): NodeId => ({ project: P, zone, node });
const isErr = (code: TpwError['code'], re: RegExp) => (e: unknown) => {
  if (isTpwError(e, code) && re.test(e.message)) return true;
  assert.fail(`expected ${code} matching ${re}, got ${isTpwError(e) ? `${e.code}: ${e.message}` : String(e)}`);
};

let fixture: EmulatorApi;
let emu: Emulator;
let ep: EmulatorEndpoint;
let api: CloudTpuApi;
const emulatorCall = (method: string, urlPath: string, body?: unknown) => call(ep, method, urlPath, body);

async function waitForQr(zone: string, name: string, want: QueuedResourceStateName, timeoutMs = 120_000): Promise<QueuedResource> {
  const deadline = Date.now() + timeoutMs;
  let last: QueuedResource | undefined;
  while (Date.now() < deadline) {
    last = (await api.listQueuedResources(P, zone)).find((q) => q.name.endsWith(`/queuedResources/${name}`));
    if (last?.state === want) return last;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.fail(`queued resource ${name} did not reach ${want} (last: ${last?.state ?? 'absent'})`);
}

before(async () => {
  fixture = await startEmulatorApi('tpw-provision-', { opDelayMs: 40, queuedStepMs: 60, addressPrefix: testAddressPrefix(15) });
  ({ emu, ep, api } = fixture);
});

after(() => fixture.close());

describe('zones', () => {
  it('lists the zones from the locations API (following its pages)', async () => {
    const zones = await api.listZones(P);
    assert.deepEqual(zones.map((z) => z.locationId), [...DEFAULT_ZONES].sort());
    assert.ok(zones.every((z) => z.name === `projects/${P}/locations/${z.locationId}`));
    // The emulator pages like Google does; the client must have followed nextPageToken to see all four.
    const first = await emulatorCall('GET', `/v2/projects/${P}/locations?pageSize=3`);
    assert.equal((first.body.locations as unknown[]).length, 3);
    assert.ok(first.body.nextPageToken);
  });

  it('finds the zones that offer a type, querying zones in parallel but bounded', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    const counting: TpuApi = Object.create(api) as TpuApi;
    counting.listAcceleratorTypes = async (project, zone, signal) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      try {
        await new Promise((r) => setTimeout(r, 50));
        return await api.listAcceleratorTypes(project, zone, signal);
      } finally {
        inFlight--;
      }
    };
    assert.deepEqual(await zonesOffering(counting, P, 'v6e-8', { concurrency: 2 }), [...DEFAULT_ZONES].sort());
    assert.equal(maxInFlight, 2);
    assert.deepEqual(await zonesOffering(api, P, 'v9-8'), []);
  });
});

describe('create options', () => {
  it('honours spot, labels, description, startup script, metadata and data disks', async () => {
    const script = "#!/bin/bash\necho 'it''s' \"$(hostname)\" > /tmp/boot\n";
    const node = await api.createNode({
      project: P,
      zone: Z,
      nodeId: 'opts',
      acceleratorType: 'v5litepod-4',
      runtimeVersion: RT,
      spot: true,
      labels: { team: 'ml', 'cost-center': 'x1' },
      description: 'made by the test',
      startupScript: script,
      metadata: { 'enable-oslogin': 'FALSE' },
      dataDisks: [{ sourceDisk: `projects/${P}/zones/${Z}/disks/data-1`, mode: 'READ_ONLY' }],
    });
    assert.equal(node.state, 'READY');
    assert.deepEqual(node.schedulingConfig, { preemptible: false, spot: true, reserved: false });
    assert.deepEqual(node.labels, { team: 'ml', 'cost-center': 'x1' });
    assert.equal(node.description, 'made by the test');
    assert.equal(node.metadata['startup-script'], script);
    assert.equal(node.metadata['enable-oslogin'], 'FALSE');
    const stored = emu.state.getNode(`projects/${P}/locations/${Z}/nodes/opts`);
    assert.deepEqual(stored.dataDisks, [{ sourceDisk: `projects/${P}/zones/${Z}/disks/data-1`, mode: 'READ_ONLY' }]);
  });

  it('adds an ssh key through UpdateNode(updateMask=metadata) and keeps the startup script', async () => {
    const node = await api.createNode({ project: P, zone: Z, nodeId: 'keyed', acceleratorType: 'v5litepod-1', runtimeVersion: RT, startupScript: 'echo boot' });
    const key = generateEd25519KeyPair('alice@laptop').public.trim();
    const updated = await addKeyToNode(api, node, 'alice', key);
    assert.equal(updated.metadata['startup-script'], 'echo boot');
    assert.match(updated.metadata['ssh-keys'], new RegExp(`^alice:${key.split(' ').slice(0, 2).join(' ').replace(/[+/]/g, '\\$&')}`, 'm'));
    assert.equal((await api.getNode(id('keyed'))).metadata['ssh-keys'], updated.metadata['ssh-keys']);
    await api.deleteNode(id('keyed'));
  });

  it('honours reserved, and refuses reserved with spot', async () => {
    const node = await api.createNode({ project: P, zone: 'us-east1-d', nodeId: 'resv', acceleratorType: 'v6e-1', runtimeVersion: 'v2-alpha-tpuv6e', reserved: true });
    assert.equal(node.schedulingConfig?.reserved, true);
    assert.equal(node.schedulingConfig?.spot, false);
    const r = await emulatorCall('POST', `/v2/projects/${P}/locations/${Z}/nodes?nodeId=both`, {
      acceleratorType: 'v6e-1',
      runtimeVersion: 'v2-alpha-tpuv6e',
      schedulingConfig: { reserved: true, spot: true },
    });
    assert.equal(r.status, 400);
  });

  it('puts a preempted spot VM into PREEMPTED', async () => {
    assert.equal((await emulatorCall('POST', `/emulator/v1/projects/${P}/locations/${Z}/nodes/opts:preempt`)).status, 200);
    const node = await api.getNode(id('opts'));
    assert.equal(node.state, 'PREEMPTED');
    assert.equal(node.health, undefined);
    await assert.rejects(api.startNode(id('opts')), isErr('FAILED_PRECONDITION', /PREEMPTED/));
    await api.deleteNode(id('opts'));
  });
});

describe('error paths', () => {
  it('quota in one zone: RESOURCE_EXHAUSTED there, and zonesOffering names the others, where create works', async () => {
    emu.rest.addCapacityFault({ zone: Z, acceleratorType: 'v5litepod-8' });
    try {
      await assert.rejects(
        api.createNode({ project: P, zone: Z, nodeId: 'q1', acceleratorType: 'v5litepod-8', runtimeVersion: RT }),
        isErr('RESOURCE_EXHAUSTED', /v5litepod-8.*TPU VM "q1" in local-project\/us-east5-b.*no more capacity/),
      );
      // Another type in the same zone is unaffected.
      const other = await api.createNode({ project: P, zone: Z, nodeId: 'q-other', acceleratorType: 'v5litepod-1', runtimeVersion: RT });
      assert.equal(other.state, 'READY');
      const elsewhere = (await zonesOffering(api, P, 'v5litepod-8')).filter((z) => z !== Z);
      assert.deepEqual(elsewhere, ['europe-west4-a', 'us-central2-b', 'us-east1-d']);
      const created = await api.createNode({ project: P, zone: elsewhere[0], nodeId: 'q1', acceleratorType: 'v5litepod-8', runtimeVersion: RT });
      assert.equal(created.state, 'READY');
      await api.deleteNode(id('q1', elsewhere[0]));
      await api.deleteNode(id('q-other'));
    } finally {
      emu.rest.clearFaults();
    }
  });

  it('403 becomes PERMISSION_DENIED naming what was refused', async () => {
    emu.rest.addFault({ method: 'ListNodes', code: 403 });
    await assert.rejects(api.listNodes(P, Z), isErr('PERMISSION_DENIED', /Permission denied to list TPU VMs in local-project\/us-east5-b/));
  });

  it('a disabled Cloud TPU API becomes API_DISABLED with the activation URL from ErrorInfo', async () => {
    const raw = await (async () => {
      emu.rest.setServiceDisabled(true);
      return emulatorCall('GET', `/v2/projects/${P}/locations/${Z}/nodes`);
    })();
    try {
      assert.equal(raw.status, 403);
      const details = (raw.body.error as { details: { '@type': string; reason?: string }[] }).details;
      assert.equal(details[0]['@type'], 'type.googleapis.com/google.rpc.ErrorInfo');
      assert.equal(details[0].reason, 'SERVICE_DISABLED');
      for (const call of [() => api.listNodes(P, Z), () => api.listZones(P), () => api.listQueuedResources(P, Z)]) {
        await assert.rejects(
          call(),
          isErr('API_DISABLED', /Cloud TPU API is not enabled in project local-project: enable tpu\.googleapis\.com at https:\/\/console\.developers\.google\.com\/apis\/api\/tpu\.googleapis\.com\/overview\?project=123456789012/),
        );
      }
      await assert.rejects(zonesOffering(api, P, 'v6e-8'), (e) => isTpwError(e, 'API_DISABLED'));
    } finally {
      emu.rest.setServiceDisabled(false);
    }
    assert.ok(Array.isArray(await api.listNodes(P, Z)));
  });

  it('latency delays every call, and an abort cuts the wait short', async () => {
    emu.rest.setLatency(300);
    try {
      const t0 = Date.now();
      await api.listNodes(P, Z);
      assert.ok(Date.now() - t0 >= 290, `took ${Date.now() - t0} ms`);
      // A wait of ten minutes: only the abort can end the call within the test's run.
      emu.rest.setLatency(600_000);
      const ac = new AbortController();
      setTimeout(() => ac.abort(), 50);
      await assert.rejects(api.listNodes(P, Z, ac.signal), (e) => isTpwError(e, 'CANCELLED'));
    } finally {
      emu.rest.clearFaults();
    }
  });

  it('503s are retried with backoff until the API answers', async () => {
    emu.rest.addFault({ method: 'ListNodes', code: 503, count: 2 });
    const retries: number[] = [];
    const nodes = await withRetry(() => api.listNodes(P, Z), { retries: 3, baseMs: 20, jitter: false, onRetry: (r) => retries.push(r.delayMs) });
    assert.ok(Array.isArray(nodes));
    assert.deepEqual(retries, [20, 40]);
    emu.rest.addFault({ method: 'ListNodes', code: 503, count: 5 });
    await assert.rejects(withRetry(() => api.listNodes(P, Z), { retries: 1, baseMs: 5 }), (e) => isTpwError(e, 'UNAVAILABLE'));
    emu.rest.clearFaults();
  });

  it('a network error (nothing listening) is UNAVAILABLE, and a retry succeeds once the network is back', async () => {
    const port = await freePort();
    const bearer = { getRequestHeaders: async (): Promise<Record<string, string>> => ({ authorization: `Bearer ${ep.token}` }) };
    const flaky = new CloudTpuApi({
      clientOptions: { apiEndpoint: '127.0.0.1', port, protocol: 'http', fallback: true, auth: bearer as unknown as never },
    });
    let relay: http.Server | undefined;
    try {
      await assert.rejects(flaky.listZones(P), isErr('UNAVAILABLE', /Cannot reach the Cloud TPU API to list zones of Cloud TPU in project local-project/));
      const zones = await withRetry(() => flaky.listZones(P), {
        retries: 3,
        baseMs: 30,
        // The "network comes back": a gateway to the emulator appears on the port before the first retry (it
        // names the emulator's own address as Host, which the emulator requires).
        onRetry: () => {
          relay ??= http
            .createServer((req, res) => {
              const headers = { ...req.headers, host: `${ep.host}:${ep.restPort}` };
              const up = http.request({ host: ep.host, port: ep.restPort, method: req.method, path: req.url, headers }, (r) => {
                res.writeHead(r.statusCode ?? 502, r.headers);
                r.pipe(res);
              });
              up.on('error', () => res.destroy());
              req.pipe(up);
            })
            .listen(port, '127.0.0.1');
        },
      });
      assert.equal(zones.length, DEFAULT_ZONES.length);
    } finally {
      await flaky.close();
      relay?.close();
      relay?.closeAllConnections();
    }
  });

  it('a VM deleted elsewhere is NOT_FOUND and gone from the list', async () => {
    await api.createNode({ project: P, zone: Z, nodeId: 'gone', acceleratorType: 'v5litepod-1', runtimeVersion: RT });
    const other = emulatorTpuApi(ep);
    try {
      await other.deleteNode(id('gone'));
    } finally {
      await other.close();
    }
    await assert.rejects(api.getNode(id('gone')), isErr('NOT_FOUND', /TPU VM "gone" not found/));
    assert.ok(!(await api.listNodes(P, Z)).some((n) => n.name.endsWith('/gone')));
  });
});

describe('queued resources', () => {
  it('waits for resources while the zone has no capacity, then becomes ACTIVE with a READY node', async () => {
    emu.rest.addCapacityFault({ zone: Z, acceleratorType: 'v5litepod-4' });
    const created = await api.createQueuedResource({
      project: P,
      zone: Z,
      queuedResourceId: 'qr-a',
      node: { nodeId: 'qr-a-node', acceleratorType: 'v5litepod-4', runtimeVersion: RT, labels: { via: 'queue' } },
      tier: 'guaranteed',
    });
    assert.equal(created.name, `projects/${P}/locations/${Z}/queuedResources/qr-a`);
    assert.equal(created.state, 'ACCEPTED');
    assert.equal(created.tier, 'guaranteed');
    assert.deepEqual(created.nodeIds, ['qr-a-node']);
    await waitForQr(Z, 'qr-a', 'WAITING_FOR_RESOURCES');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await waitForQr(Z, 'qr-a', 'WAITING_FOR_RESOURCES')).state, 'WAITING_FOR_RESOURCES', 'still waiting while the fault is on');
    await assert.rejects(api.getNode(id('qr-a-node')), (e) => isTpwError(e, 'NOT_FOUND'));
    emu.rest.clearFaults();
    const active = await waitForQr(Z, 'qr-a', 'ACTIVE');
    assert.equal(active.acceleratorType, 'v5litepod-4');
    const node = await api.getNode(id('qr-a-node'));
    assert.equal(node.state, 'READY');
    assert.deepEqual(node.labels, { via: 'queue' });
    assert.match(await banner(node.networkEndpoints[0].ipAddress, ep.sshPort), /^SSH-2\.0-/);
  });

  it('refuses to delete an ACTIVE one without force; force deletes it and its node', async () => {
    await assert.rejects(
      api.deleteQueuedResource({ project: P, zone: Z, queuedResource: 'qr-a' }),
      isErr('FAILED_PRECONDITION', /queued resource "qr-a".*force/),
    );
    await api.deleteQueuedResource({ project: P, zone: Z, queuedResource: 'qr-a' }, { force: true });
    assert.deepEqual(await api.listQueuedResources(P, Z), []);
    await assert.rejects(api.getNode(id('qr-a-node')), (e) => isTpwError(e, 'NOT_FOUND'));
    await assert.rejects(api.deleteQueuedResource({ project: P, zone: Z, queuedResource: 'qr-a' }), isErr('NOT_FOUND', /Queued resource "qr-a" not found/));
  });

  it('FAILED once valid-until passes while waiting', async () => {
    emu.rest.addCapacityFault({ zone: Z, acceleratorType: 'v6e-4' });
    try {
      const validUntil = new Date(Date.now() + 400).toISOString();
      const qr = await api.createQueuedResource({
        project: P,
        zone: Z,
        queuedResourceId: 'qr-late',
        node: { nodeId: 'qr-late-node', acceleratorType: 'v6e-4', runtimeVersion: 'v2-alpha-tpuv6e' },
        tier: 'spot',
        validUntil,
      });
      assert.equal(qr.tier, 'spot');
      assert.equal(qr.validUntil, validUntil);
      const failed = await waitForQr(Z, 'qr-late', 'FAILED');
      assert.match(failed.stateMessage ?? '', /valid-until time passed/);
      await assert.rejects(api.getNode(id('qr-late-node')), (e) => isTpwError(e, 'NOT_FOUND'));
      await api.deleteQueuedResource({ project: P, zone: Z, queuedResource: 'qr-late' });
      assert.deepEqual(await api.listQueuedResources(P, Z), []);
    } finally {
      emu.rest.clearFaults();
    }
  });

  it('a spot queued resource is SUSPENDED when its node is preempted', async () => {
    await api.createQueuedResource({
      project: P,
      zone: 'europe-west4-a',
      queuedResourceId: 'qr-spot',
      node: { nodeId: 'qr-spot-node', acceleratorType: 'v6e-1', runtimeVersion: 'v2-alpha-tpuv6e' },
      tier: 'spot',
    });
    await waitForQr('europe-west4-a', 'qr-spot', 'ACTIVE');
    const node = await api.getNode(id('qr-spot-node', 'europe-west4-a'));
    assert.equal(node.schedulingConfig?.spot, true, 'the spot tier makes a spot node');
    assert.equal((await emulatorCall('POST', `/emulator/v1/projects/${P}/locations/europe-west4-a/nodes/qr-spot-node:preempt`)).status, 200);
    assert.equal((await api.getNode(id('qr-spot-node', 'europe-west4-a'))).state, 'PREEMPTED');
    await waitForQr('europe-west4-a', 'qr-spot', 'SUSPENDED');
    await api.deleteQueuedResource({ project: P, zone: 'europe-west4-a', queuedResource: 'qr-spot' }, { force: true });
    await assert.rejects(api.getNode(id('qr-spot-node', 'europe-west4-a')), (e) => isTpwError(e, 'NOT_FOUND'));
  });

  it('refuses bad requests at once: a duplicate id, an unknown type, quota on create', async () => {
    const base = { project: P, zone: Z, tier: 'guaranteed' as const };
    await assert.rejects(
      api.createQueuedResource({ ...base, queuedResourceId: 'qr-bad', node: { nodeId: 'qr-bad-node', acceleratorType: 'v4-9', runtimeVersion: RT } }),
      isErr('INVALID_ARGUMENT', /queued resource "qr-bad".*"v4-9"/),
    );
    await api.createQueuedResource({ ...base, queuedResourceId: 'qr-dup', node: { nodeId: 'qr-dup-node', acceleratorType: 'v5litepod-1', runtimeVersion: RT } });
    await assert.rejects(
      api.createQueuedResource({ ...base, queuedResourceId: 'qr-dup', node: { nodeId: 'qr-dup-node2', acceleratorType: 'v5litepod-1', runtimeVersion: RT } }),
      isErr('ALREADY_EXISTS', /Queued resource "qr-dup" already exists/),
    );
    emu.rest.addFault({ method: 'CreateQueuedResource', code: 429 });
    await assert.rejects(
      api.createQueuedResource({ ...base, queuedResourceId: 'qr-q', node: { nodeId: 'qr-q-node', acceleratorType: 'v5litepod-1', runtimeVersion: RT } }),
      isErr('RESOURCE_EXHAUSTED', /v5litepod-1.*queued resource "qr-q"/),
    );
    await waitForQr(Z, 'qr-dup', 'ACTIVE');
    await api.deleteQueuedResource({ project: P, zone: Z, queuedResource: 'qr-dup' }, { force: true });
  });
});

describe('queued resources survive an emulator restart', () => {
  it('keeps a waiting request in the state file and carries on after the restart', async () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-provision-restart-'));
    const pool = () => ({ addWorker: async () => undefined, removeNode: async () => undefined, close: async () => undefined });
    const opts = { dir: d, opDelayMs: 20, queuedStepMs: 30, addressPrefix: testAddressPrefix(18), workerPool: pool, capacityFaults: [{ zone: Z, acceleratorType: 'v6e-1' }] };
    let e1: Emulator | undefined = new Emulator(opts);
    let e2: Emulator | undefined;
    try {
      const a1 = emulatorTpuApi(await e1.start());
      await a1.createQueuedResource({ project: P, zone: Z, queuedResourceId: 'keep', node: { nodeId: 'keep-node', acceleratorType: 'v6e-1', runtimeVersion: 'v2-alpha-tpuv6e' }, tier: 'guaranteed' });
      await a1.close();
      await e1.stop();
      e1 = undefined;
      // Restarted without the capacity fault: the request goes on to ACTIVE.
      e2 = new Emulator({ ...opts, capacityFaults: [] });
      const a2 = emulatorTpuApi(await e2.start());
      try {
        const deadline = Date.now() + 120_000;
        let state = '';
        while (Date.now() < deadline && state !== 'ACTIVE') {
          state = (await a2.listQueuedResources(P, Z))[0]?.state ?? 'absent';
          await new Promise((r) => setTimeout(r, 20));
        }
        assert.equal(state, 'ACTIVE');
        assert.equal((await a2.getNode(id('keep-node'))).state, 'READY');
      } finally {
        await a2.close();
      }
    } finally {
      await e1?.stop();
      await e2?.stop();
      fs.rmSync(d, { recursive: true, force: true });
    }
  });
});
