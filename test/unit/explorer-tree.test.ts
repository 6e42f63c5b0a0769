import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { TpwError } from '../../extension/src/core/errors';
import { formatAge, isMultiHost, isNodeTransitional, isQueuedTransitional, nodeStateTone, provisioningOf, queuedStateTone, schedulingLabel } from '../../extension/src/core/explorer/node-status';
import { RefreshSchedule } from '../../extension/src/core/explorer/refresh-schedule';
import { nodeToYaml, queuedResourceToYaml } from '../../extension/src/core/explorer/resource-yaml';
import { hasInclude, readIfExists, upsertManagedBlock, withInclude, workerHostAlias, writeConfigFile, type SshHostEntry } from '../../extension/src/core/explorer/ssh-config';
import { isRetryableError, scanFingerprint, scanHasRetryableFailure, scanIsTransitional, scanZones } from '../../extension/src/core/explorer/zone-scan';
import type { TpuApi } from '../../extension/src/core/tpu/api';
import { TpuNodeSchema, type QueuedResource, type TpuNode } from '../../extension/src/core/tpu/models';

function node(name: string, state: TpuNode['state'], extra: Partial<TpuNode> = {}, zone = 'z1'): TpuNode {
  return TpuNodeSchema.parse({ name: `projects/p/locations/${zone}/nodes/${name}`, acceleratorType: 'v5litepod-8', runtimeVersion: 'v2-alpha-tpuv5-lite', state, ...extra });
}

describe('explorer: states', () => {
  it('colours every node state and polls only on the transitional ones', () => {
    assert.equal(nodeStateTone('READY'), 'ok');
    for (const s of ['CREATING', 'STARTING', 'STOPPING', 'DELETING', 'REPAIRING'] as const) {
      assert.equal(nodeStateTone(s), 'transitional', s);
      assert.ok(isNodeTransitional(s));
    }
    assert.equal(nodeStateTone('PREEMPTED'), 'bad');
    assert.equal(nodeStateTone('TERMINATED'), 'bad');
    assert.equal(nodeStateTone('STOPPED'), 'stopped');
    assert.ok(!isNodeTransitional('READY') && !isNodeTransitional('STOPPED') && !isNodeTransitional('PREEMPTED'));
  });

  it('follows queued resources until ACTIVE or FAILED', () => {
    for (const s of ['ACCEPTED', 'WAITING_FOR_RESOURCES', 'PROVISIONING', 'CREATING'] as const) assert.ok(isQueuedTransitional(s), s);
    assert.ok(!isQueuedTransitional('ACTIVE') && !isQueuedTransitional('FAILED') && !isQueuedTransitional('SUSPENDED'));
    assert.equal(queuedStateTone('FAILED'), 'bad');
    assert.equal(queuedStateTone('ACTIVE'), 'ok');
  });

  it('names the provisioning model and the price tier', () => {
    assert.equal(schedulingLabel({ schedulingConfig: { preemptible: true } }), 'preemptible');
    assert.equal(provisioningOf({ schedulingConfig: { preemptible: true } }), 'spot');
    assert.equal(schedulingLabel({ schedulingConfig: { reserved: true } }), 'reserved');
    assert.equal(schedulingLabel({}), 'on-demand');
  });

  it('treats more than one endpoint as a pod (no Stop)', () => {
    const ep = { ipAddress: '10.0.0.2' };
    assert.equal(isMultiHost({ networkEndpoints: [ep] }), false);
    assert.equal(isMultiHost({ networkEndpoints: [ep, ep] }), true);
  });

  it('formats ages', () => {
    const now = new Date('2026-11-22T12:00:00Z');
    assert.equal(formatAge('2026-11-22T11:59:30Z', now), '30s');
    assert.equal(formatAge('2026-11-22T11:00:00Z', now), '1h');
    assert.equal(formatAge('2026-11-19T12:00:00Z', now), '3d');
    assert.equal(formatAge(undefined, now), undefined);
    assert.equal(formatAge('not a time', now), undefined);
  });
});

describe('explorer: refresh schedule', () => {
  it('polls quickly while things change, backs off while they do not, and stops when settled', () => {
    const s = new RefreshSchedule({ pollStartMs: 1000, pollMaxMs: 4000 });
    assert.equal(s.next({ fingerprint: 'a=CREATING', transitional: true, retryableFailure: false }), 1000);
    assert.equal(s.next({ fingerprint: 'a=CREATING', transitional: true, retryableFailure: false }), 1500);
    assert.equal(s.next({ fingerprint: 'a=CREATING', transitional: true, retryableFailure: false }), 2250);
    assert.equal(s.next({ fingerprint: 'a=CREATING', transitional: true, retryableFailure: false }), 3375);
    assert.equal(s.next({ fingerprint: 'a=CREATING', transitional: true, retryableFailure: false }), 4000);
    // A change: quick again.
    assert.equal(s.next({ fingerprint: 'a=CREATING;b=STOPPING', transitional: true, retryableFailure: false }), 1000);
    assert.equal(s.next({ fingerprint: 'a=READY', transitional: false, retryableFailure: false }), undefined);
  });

  it('retries failed zones with exponential backoff, reset by success or by the user', () => {
    const s = new RefreshSchedule({ retryStartMs: 100, retryMaxMs: 350 });
    const fail = { fingerprint: 'z!nodes', transitional: false, retryableFailure: true };
    assert.deepEqual([s.next(fail), s.next(fail), s.next(fail), s.next(fail)], [100, 200, 350, 350]);
    assert.equal(s.next({ fingerprint: '', transitional: false, retryableFailure: false }), undefined);
    assert.equal(s.next(fail), 100);
    s.next(fail);
    s.reset();
    assert.equal(s.next(fail), 100);
  });
});

/** A TpuApi whose listings come from a table; anything else is unused by the scan. */
function fakeApi(zones: Record<string, { nodes?: TpuNode[] | Error; queued?: QueuedResource[] | Error; failTimes?: number }>): TpuApi & { calls: string[] } {
  const calls: string[] = [];
  const failures = new Map<string, number>();
  const answer = <T>(zone: string, what: T[] | Error | undefined): Promise<T[]> => {
    const z = zones[zone];
    const left = failures.get(zone) ?? z.failTimes ?? 0;
    if (left > 0) {
      failures.set(zone, left - 1);
      return Promise.reject(new TpwError('UNAVAILABLE', `${zone}: connection reset`));
    }
    return what instanceof Error ? Promise.reject(what) : Promise.resolve(what ?? []);
  };
  const unused = () => Promise.reject(new Error('not used by the scan'));
  return {
    calls,
    description: 'fake',
    listNodes: (_p, zone) => {
      calls.push(`nodes ${zone}`);
      return answer(zone, zones[zone].nodes);
    },
    listQueuedResources: (_p, zone) => {
      calls.push(`queued ${zone}`);
      return zones[zone].queued instanceof Error ? Promise.reject(zones[zone].queued) : Promise.resolve((zones[zone].queued as QueuedResource[] | undefined) ?? []);
    },
    getNode: unused,
    createNode: unused,
    deleteNode: unused,
    startNode: unused,
    stopNode: unused,
    updateNodeMetadata: unused,
    listAcceleratorTypes: unused,
    listRuntimeVersions: unused,
    listZones: unused,
    createQueuedResource: unused,
    deleteQueuedResource: unused,
    close: () => Promise.resolve(),
  };
}

describe('explorer: zone scan', () => {
  const qr: QueuedResource = { name: 'projects/p/locations/z2/queuedResources/q1', state: 'WAITING_FOR_RESOURCES', nodeIds: ['q1'], tier: 'spot' };

  it('lists zones in parallel; one failing zone does not hide the others', async () => {
    const api = fakeApi({
      z1: { nodes: [node('b', 'READY'), node('a', 'CREATING')] },
      z2: { queued: [qr] },
      z3: { nodes: new TpwError('PERMISSION_DENIED', 'no access to z3') },
    });
    const scans = await scanZones(api, 'p', ['z1', 'z2', 'z3']);
    assert.deepEqual(scans.map((s) => s.zone), ['z1', 'z2', 'z3']);
    assert.deepEqual(scans[0].nodes.map((n) => n.name.split('/').pop()), ['a', 'b'], 'sorted by name');
    assert.equal(scans[1].queued.length, 1);
    assert.match(String(scans[2].nodesError), /no access to z3/);
    assert.ok(scanIsTransitional(scans));
    assert.equal(scanHasRetryableFailure(scans), false, 'permission errors need the user, not a retry');
    assert.match(scanFingerprint(scans), /nodes\/a=CREATING.*queuedResources\/q1=WAITING_FOR_RESOURCES.*z3!nodes/);
  });

  it('keeps the VMs when only the queued-resource listing fails', async () => {
    const api = fakeApi({ z1: { nodes: [node('a', 'READY')], queued: new TpwError('UNAVAILABLE', 'flaky') } });
    const [scan] = await scanZones(api, 'p', ['z1']);
    assert.equal(scan.nodes.length, 1);
    assert.ok(scan.queuedError);
    assert.ok(scanHasRetryableFailure([scan]));
  });

  it('retries transient failures through the runner it is given', async () => {
    const api = fakeApi({ z1: { nodes: [], failTimes: 2 } });
    const retry = async <T>(fn: () => Promise<T>): Promise<T> => {
      for (let i = 0; ; i++) {
        try {
          return await fn();
        } catch (e) {
          if (i >= 3 || !isRetryableError(e)) throw e;
        }
      }
    };
    const [scan] = await scanZones(api, 'p', ['z1'], { retry });
    assert.equal(scan.nodesError, undefined);
    assert.equal(api.calls.filter((c) => c === 'nodes z1').length, 3);
    assert.equal(isRetryableError(new TpwError('UNAUTHENTICATED', 'x')), false);
    assert.equal(isRetryableError(new Error('ECONNRESET')), true);
  });
});

describe('explorer: Remote-SSH config', () => {
  const entry = (i: number, host: string): SshHostEntry => ({ alias: workerHostAlias('my-vm', i), hostName: host, port: 22, user: 'me', identityFile: '/home/me/.tpw/id ed25519', comment: `worker ${i}` });

  it('writes one block per VM and replaces it on the next write', () => {
    let text = upsertManagedBlock('', 'projects/p/locations/z/nodes/my-vm', [entry(0, '10.0.0.2'), entry(1, '10.0.0.3')]);
    assert.match(text, /^# Written by TPU Workbench/);
    assert.match(text, /Host tpu-my-vm-w0\n {2}HostName 10\.0\.0\.2\n {2}User me\n {2}IdentityFile "\/home\/me\/\.tpw\/id ed25519"/);
    assert.match(text, /Host tpu-my-vm-w1\n {2}HostName 10\.0\.0\.3/);
    text = upsertManagedBlock(text, 'projects/p/locations/z/nodes/other', [{ ...entry(0, '10.9.9.9'), alias: 'tpu-other-w0' }]);
    text = upsertManagedBlock(text, 'projects/p/locations/z/nodes/my-vm', [entry(0, '10.0.0.7')]);
    assert.doesNotMatch(text, /10\.0\.0\.2|tpu-my-vm-w1/, 'the old block is gone');
    assert.match(text, /10\.0\.0\.7/);
    assert.match(text, /tpu-other-w0/, 'other VMs are kept');
    assert.equal(text.match(/# Written by TPU Workbench/g)?.length, 1);
    text = upsertManagedBlock(text, 'projects/p/locations/z/nodes/other', []);
    assert.doesNotMatch(text, /tpu-other-w0/);
  });

  it('quotes a ProxyCommand for the shell but leaves %h and %p to ssh', () => {
    const text = upsertManagedBlock('', 'k', [{ ...entry(0, '10.0.0.2'), port: 2222, proxyCommand: ['gcloud', 'compute', 'start-iap-tunnel', 'my vm', '%p', '--listen-on-stdin'] }]);
    assert.match(text, /ProxyCommand gcloud compute start-iap-tunnel 'my vm' %p --listen-on-stdin/);
    assert.match(text, /Port 2222/);
  });

  it('adds the Include line once, at the top, and recognises it however it was written', () => {
    const home = '/home/me';
    const ours = '/home/me/.ssh/tpu-workbench.config';
    const user = 'Host github.com\n  User git\n';
    assert.equal(hasInclude(user, ours, home), false);
    const updated = withInclude(user, ours);
    assert.ok(updated.split('\n').findIndex((l) => l.startsWith('Include')) < updated.indexOf('Host github.com'));
    assert.ok(updated.endsWith(user), 'the user\'s config is kept as it was');
    assert.equal(hasInclude(updated, ours, home), true);
    assert.equal(hasInclude('Include ~/.ssh/tpu-workbench.config\n', ours, home), true);
    assert.equal(hasInclude('include tpu-workbench.config other.conf\n', ours, home), true, 'relative to ~/.ssh, several per line');
  });

  it('writes files 0600 atomically', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-sshcfg-'));
    const file = path.join(dir, '.ssh', 'tpu-workbench.config');
    assert.equal(readIfExists(file), '');
    writeConfigFile(file, 'Host x\n');
    assert.equal(readIfExists(file), 'Host x\n');
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe('explorer: Show Details YAML', () => {
  it('renders a node with state first, round-tripping every field', () => {
    const n = node('my-vm', 'READY', {
      networkEndpoints: [{ ipAddress: '10.0.0.2', accessConfig: { externalIp: '34.1.2.3' } }],
      metadata: { 'startup-script': '#!/bin/bash\necho "hi"\n' },
      schedulingConfig: { spot: true },
    }, 'z');
    const text = nodeToYaml(n);
    assert.match(text, /^name: projects\/p\/locations\/z\/nodes\/my-vm\nstate: READY\n/);
    assert.doesNotMatch(text, /labels/, 'empty maps are left out');
    const { labels: _labels, ...withoutLabels } = n;
    assert.deepEqual(parse(text), withoutLabels, 'nothing lost or changed, the multi-line script included');
    const q = queuedResourceToYaml({ name: 'projects/p/locations/z/queuedResources/q', state: 'ACTIVE', nodeIds: ['q'], tier: 'guaranteed' });
    assert.match(q, /^name: .*\nstate: ACTIVE\ntier: guaranteed\n/);
  });
});
