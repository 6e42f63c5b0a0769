import * as assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { EmulatorEndpoint } from '../../protocol/node/emulator-endpoint';
import { isTpwError, type TpwError } from '../../extension/src/core/errors';
import type { OperationProgress } from '../../extension/src/core/tpu/api';
import { emulatorTpuApi, type CloudTpuApi } from '../../extension/src/core/tpu/cloud';
import type { NodeId } from '../../extension/src/core/tpu/models';
import { emulatorCall, sshBanner as banner, startEmulatorApi, type EmulatorApi } from '../helpers/emulator-api';
import { testAddressPrefix } from '../helpers/loopback';

/**
 * The real `@google-cloud/tpu` v2 client (through CloudTpuApi) against a real emulator with its real SSH
 * workers: every worker's address must answer with an SSH banner.
 */
const ZONE = 'us-central2-b';
const id = (node: string): NodeId => ({ project: 'local-project', zone: ZONE, node });
const isErr = (code: TpwError['code'], re: RegExp) => (e: unknown) => isTpwError(e, code) && re.test(e.message);

let fixture: EmulatorApi;
let ep: EmulatorEndpoint;
let api: CloudTpuApi;

before(async () => {
  fixture = await startEmulatorApi('tpw-api-', { opDelayMs: 60, addressPrefix: testAddressPrefix(1) });
  ({ ep, api } = fixture);
});

after(() => fixture.close());

describe('CloudTpuApi over @google-cloud/tpu v2 against the emulator', () => {
  it('describes itself as the local emulator', () => {
    assert.equal(api.description, `local emulator (127.0.0.1:${ep.restPort})`);
  });

  it('creates a v5litepod-16 that comes up READY with 4 workers on distinct loopback addresses', async () => {
    const progress: OperationProgress[] = [];
    const node = await api.createNode(
      { project: 'local-project', zone: ZONE, nodeId: 'pod', acceleratorType: 'v5litepod-16', runtimeVersion: 'v2-alpha-tpuv5-lite', labels: { owner: 'test' }, spot: true },
      { onProgress: (p) => progress.push(p) },
    );
    assert.equal(node.name, `projects/local-project/locations/${ZONE}/nodes/pod`);
    assert.equal(node.state, 'READY');
    assert.equal(node.health, 'HEALTHY');
    assert.equal(node.acceleratorType, 'v5litepod-16');
    assert.deepEqual(node.labels, { owner: 'test' });
    assert.equal(node.schedulingConfig?.spot, true);
    assert.ok(node.createTime && !Number.isNaN(Date.parse(node.createTime)));
    const ips = node.networkEndpoints.map((e) => e.ipAddress);
    assert.equal(ips.length, 4);
    assert.equal(new Set(ips).size, 4);
    assert.ok(ips.every((ip) => ip.startsWith(`${testAddressPrefix(1)}.`) && /\.\d+$/.test(ip)), ips.join());
    assert.ok(node.networkEndpoints.every((e) => e.port === 8470 && e.accessConfig?.externalIp === e.ipAddress));
    for (const ip of ips) assert.match(await banner(ip, ep.sshPort), /^SSH-2\.0-/);
    assert.match(progress[0].operationName, /\/operations\/operation-/);
    assert.deepEqual(progress.at(-1), { operationName: progress[0].operationName, done: true });
  });

  it('lists and gets the node', async () => {
    const nodes = await api.listNodes('local-project', ZONE);
    assert.deepEqual(nodes.map((n) => n.name.split('/').pop()), ['pod']);
    assert.equal(nodes[0].state, 'READY');
    const got = await api.getNode(id('pod'));
    assert.deepEqual(got, nodes[0]);
    assert.deepEqual(await api.listNodes('local-project', 'us-east5-b'), []);
  });

  it('stops and starts a single-host node (the workers go away and come back) but not a multi-host slice', async () => {
    await assert.rejects(api.stopNode(id('pod')), isErr('FAILED_PRECONDITION', /Cannot stop TPU VM "pod".*multi-host/));
    await api.createNode({ project: 'local-project', zone: ZONE, nodeId: 'one', acceleratorType: 'v5litepod-8', runtimeVersion: 'v2-alpha-tpuv5-lite' });
    const stopped = await api.stopNode(id('one'));
    assert.equal(stopped.state, 'STOPPED');
    assert.equal(stopped.health, undefined);
    await assert.rejects(banner(stopped.networkEndpoints[0].ipAddress, ep.sshPort));
    await assert.rejects(api.stopNode(id('one')), isErr('FAILED_PRECONDITION', /Cannot stop TPU VM "one".*STOPPED/));
    const started = await api.startNode(id('one'));
    assert.equal(started.state, 'READY');
    assert.match(await banner(started.networkEndpoints[0].ipAddress, ep.sshPort), /^SSH-2\.0-/);
    await api.deleteNode(id('one'));
  });

  it('maps API errors to TpwErrors that name the resource', async () => {
    await assert.rejects(api.getNode(id('ghost')), isErr('NOT_FOUND', /^TPU VM "ghost" not found in local-project\/us-central2-b\.$/));
    await assert.rejects(
      api.createNode({ project: 'local-project', zone: ZONE, nodeId: 'pod', acceleratorType: 'v4-8', runtimeVersion: 'tpu-ubuntu2204-base' }),
      isErr('ALREADY_EXISTS', /TPU VM "pod" already exists in local-project\/us-central2-b/),
    );
    await assert.rejects(
      api.createNode({ project: 'local-project', zone: ZONE, nodeId: 'x', acceleratorType: 'v4-9', runtimeVersion: 'tpu-ubuntu2204-base' }),
      isErr('INVALID_ARGUMENT', /create TPU VM "x".*"v4-9".*v5litepod-16/),
    );
    await assert.rejects(api.listNodes('local-project', 'atlantis-1'), isErr('NOT_FOUND', /Zone "atlantis-1"/));
    await assert.rejects(api.listNodes('other-project', ZONE), isErr('PERMISSION_DENIED', /other-project/));
  });

  it('maps injected permission and quota faults', async () => {
    assert.equal((await emulatorCall(ep, 'POST', '/emulator/v1/faults', { faults: [{ method: 'GetNode', code: 403 }, { method: 'CreateNode', code: 'RESOURCE_EXHAUSTED' }] })).status, 200);
    await assert.rejects(api.getNode(id('pod')), isErr('PERMISSION_DENIED', /Permission denied to get TPU VM "pod"/));
    await assert.rejects(
      api.createNode({ project: 'local-project', zone: ZONE, nodeId: 'q', acceleratorType: 'v4-8', runtimeVersion: 'tpu-ubuntu2204-base' }),
      isErr('RESOURCE_EXHAUSTED', /Quota.*v4-8.*TPU VM "q"/),
    );
    assert.equal((await api.getNode(id('pod'))).state, 'READY', 'the faults were used up');
  });

  it('stops waiting when the signal aborts, while the operation goes on', async () => {
    const ac = new AbortController();
    const p = api.createNode(
      { project: 'local-project', zone: ZONE, nodeId: 'aborted', acceleratorType: 'v4-8', runtimeVersion: 'tpu-ubuntu2204-base' },
      { signal: ac.signal, onProgress: () => ac.abort() },
    );
    await assert.rejects(p, isErr('CANCELLED', /aborted/));
    const already = new AbortController();
    already.abort();
    await assert.rejects(api.listNodes('local-project', ZONE, already.signal), (e) => isTpwError(e, 'CANCELLED'));
  });

  it('lists accelerator types and runtime versions', async () => {
    const types = await api.listAcceleratorTypes('local-project', ZONE);
    assert.ok(types.some((t) => t.type === 'v6e-16' && t.name === `projects/local-project/locations/${ZONE}/acceleratorTypes/v6e-16`));
    const versions = await api.listRuntimeVersions('local-project', ZONE);
    assert.ok(versions.some((v) => v.version === 'v2-alpha-tpuv6e'));
  });

  it('deletes nodes until they are gone', async () => {
    await api.deleteNode(id('pod'));
    // The aborted create went on server-side; wait for it before deleting it too.
    for (let i = 0; i < 100 && (await api.getNode(id('aborted'))).state !== 'READY'; i++) await new Promise((r) => setTimeout(r, 20));
    await api.deleteNode(id('aborted'));
    assert.deepEqual(await api.listNodes('local-project', ZONE), []);
    await assert.rejects(api.getNode(id('pod')), (e) => isTpwError(e, 'NOT_FOUND'));
    await assert.rejects(api.deleteNode(id('pod')), isErr('NOT_FOUND', /TPU VM "pod" not found/));
  });

  it('says how to start the emulator when it is not running', async () => {
    const closed = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const dead = emulatorTpuApi({ host: '127.0.0.1', restPort: closed, token: 'no-emulator-listens-here' });
    try {
      await assert.rejects(dead.listNodes('local-project', ZONE), isErr('EMULATOR_NOT_RUNNING', /127\.0\.0\.1:\d+.*tpw emulator start/));
      await assert.rejects(dead.getNode(id('pod')), (e) => isTpwError(e, 'EMULATOR_NOT_RUNNING'));
    } finally {
      await dead.close();
    }
  });
});
