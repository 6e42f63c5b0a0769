/**
 * Each emulated worker's libtpu metrics service, seen through the worker's SSH server as the product reaches it: a
 * forward to the worker's localhost:8431 gets that worker's own service (its address stands in for the VM's
 * loopback), a service that is down refuses the forward, and a worker whose service could not listen (a second
 * emulator on the same addresses) refuses it too instead of handing out the other emulator's chips.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { SshWorkerPool } from '../../emulator/src/ssh-workers';
import { GrpcStreamSession } from '../../extension/src/core/chips/grpc-over-stream';
import { readChips } from '../../extension/src/core/chips/libtpu-reader';
import { ConnectionManager } from '../../extension/src/core/ssh/connection';
import { generateEd25519KeyPair } from '../../extension/src/core/ssh/keys';
import type { SshTarget } from '../../extension/src/core/ssh/types';
import { metricServiceCodec, RUNTIME_METRIC_PATHS, type ListSupportedMetricsResponse } from '../../protocol/tpu-metric-service';
import { testAddressPrefix } from '../helpers/loopback';
import { freePort } from '../helpers/sshd';

const PREFIX = testAddressPrefix(63);
const username = os.userInfo().username;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-libtpu-'));
const hostKey = generateEd25519KeyPair();
const clientKey = generateEd25519KeyPair();
const pools: SshWorkerPool[] = [];
let conns: ConnectionManager;

async function pool(name: string, acceleratorType: string, addresses: string[]): Promise<SshTarget[]> {
  const port = await freePort(addresses[0]);
  const p = new SshWorkerPool({ port, hostKey: hostKey.private, authorizedKey: clientKey.public, username });
  pools.push(p);
  for (const [index, address] of addresses.entries()) {
    await p.addWorker({ nodeId: name, index, address, hostnames: addresses, sandboxDir: path.join(tmp, name, `w${index}`), acceleratorType });
  }
  return addresses.map((host) => ({ host, port, username, privateKey: clientKey.private }));
}

before(() => {
  conns = new ConnectionManager({ knownHostsPath: path.join(tmp, 'known_hosts') });
});

after(async () => {
  conns.dispose();
  for (const p of pools) await p.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function session(target: SshTarget): Promise<GrpcStreamSession> {
  const channel = await (await conns.get(target)).forwardOut('localhost', 8431);
  return GrpcStreamSession.open(channel, 'localhost:8431');
}

test("a forward to a worker's localhost:8431 reaches that worker's libtpu, with its catalog's chips", async () => {
  const [w0, w1] = await pool('pod-a', 'v4-16', [`${PREFIX}.1`, `${PREFIX}.2`]);
  for (const t of [w0, w1]) {
    const s = await session(t);
    try {
      const codec = metricServiceCodec();
      const listed = codec.decode<ListSupportedMetricsResponse>('ListSupportedMetricsResponse', await s.unary(RUNTIME_METRIC_PATHS.ListSupportedMetrics, codec.encode('ListSupportedMetricsRequest', {}), 5000));
      assert.ok(listed.supported_metric?.some((m) => m.metric_name === 'tpu.runtime.tensorcore.dutycycle.percent'));
      const chips = await readChips(s, 5000);
      // v4-16: 8 chips on 2 hosts, 32 GiB of HBM each (tpu-info's table).
      assert.deepEqual(chips.map((c) => [c.chip, c.hbmTotalBytes, c.dutyCyclePct, c.hbmUsedBytes]), [0, 1, 2, 3].map((c) => [c, 32 * 2 ** 30, 0, 0]));
    } finally {
      s.close();
    }
  }
  await pools[0].setLibtpuFault('pod-a', 1, { kind: 'down' });
  await assert.rejects(session(w1), /nothing accepted a connection to localhost:8431 on the worker/);
  await pools[0].setLibtpuFault('pod-a', 1, undefined);
  (await session(w1)).close();
});

test("a second emulator's worker on the same address never hands out the first one's chips", async () => {
  // Worker 0 of pod-a listens on .1:8431 already; this one cannot, and says nothing rather than pod-a's numbers.
  const [other] = await pool('pod-b', 'v6e-1', [`${PREFIX}.1`]);
  await assert.rejects(session(other), /nothing accepted a connection to localhost:8431 on the worker/);
});
