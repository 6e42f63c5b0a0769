import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  compareAcceleratorTypes,
  createNodeRequest,
  createQueuedRequest,
  parseDataDisk,
  parseLabels,
  parseValidUntil,
  recommendedRuntime,
  suggestNodeId,
  validateNodeId,
  type CreateAnswers,
} from '../../extension/src/core/explorer/create-request';
import { WizardFlow } from '../../extension/src/core/explorer/wizard-flow';
import { gcloudCreateCommand, gcloudQueuedCommand } from '../../extension/src/core/tpu/gcloud-command';
import { parseRecipe } from '../../extension/src/core/recipes/recipe';
import * as fs from 'node:fs';
import * as path from 'node:path';

describe('create wizard: node id validation', () => {
  it('accepts API-valid ids and explains each kind of invalid one', () => {
    assert.equal(validateNodeId('my-tpu-1'), undefined);
    assert.equal(validateNodeId('a'), undefined);
    assert.match(validateNodeId('') ?? '', /Enter a name/);
    assert.match(validateNodeId('1tpu') ?? '', /start with a lowercase letter/);
    assert.match(validateNodeId('Bad_Name') ?? '', /start with a lowercase letter/);
    assert.match(validateNodeId('bad_name') ?? '', /"_" is not allowed/);
    assert.match(validateNodeId('tpu-') ?? '', /must not end with a hyphen/);
    assert.match(validateNodeId('a'.repeat(64)) ?? '', /64 characters long; at most 63/);
    assert.equal(validateNodeId('a'.repeat(63)), undefined);
    assert.match(validateNodeId('taken', new Set(['taken'])) ?? '', /already exists/);
  });

  it('suggests the first free tpu-vm-N', () => {
    assert.equal(suggestNodeId(new Set()), 'tpu-vm-1');
    assert.equal(suggestNodeId(new Set(['tpu-vm-1', 'tpu-vm-2', 'tpu-vm-4'])), 'tpu-vm-3');
  });
});

describe('create wizard: choices', () => {
  it('recommends the runtime Google documents for each generation', () => {
    assert.equal(recommendedRuntime('v6e-8'), 'v2-alpha-tpuv6e');
    assert.equal(recommendedRuntime('v5litepod-16'), 'v2-alpha-tpuv5-lite');
    assert.equal(recommendedRuntime('v5p-8'), 'v2-alpha-tpuv5');
    assert.equal(recommendedRuntime('v4-32'), 'tpu-ubuntu2204-base');
    assert.equal(recommendedRuntime('v3-8'), undefined);
  });

  it('sorts sizes numerically within a family', () => {
    assert.deepEqual(['v5litepod-16', 'v4-8', 'v5litepod-8', 'v5litepod-1'].sort(compareAcceleratorTypes), ['v4-8', 'v5litepod-1', 'v5litepod-8', 'v5litepod-16']);
  });

  it('parses labels and rejects what GCP would refuse', () => {
    assert.deepEqual(parseLabels(''), { ok: true, value: {} });
    assert.deepEqual(parseLabels(' team=ml , env=dev '), { ok: true, value: { team: 'ml', env: 'dev' } });
    assert.deepEqual(parseLabels('empty='), { ok: true, value: { empty: '' } });
    for (const bad of ['team', '=x', 'Team=ml', 'team=ML', 'a=1,a=2', 'k=v w']) {
      const r = parseLabels(bad);
      assert.equal(r.ok, false, bad);
    }
  });

  it('turns valid-until durations and times into RFC 3339, refusing the past', () => {
    const now = new Date('2026-11-22T10:00:00Z');
    assert.deepEqual(parseValidUntil('', now), { ok: true, value: undefined });
    assert.deepEqual(parseValidUntil('6h', now), { ok: true, value: '2026-11-22T16:00:00.000Z' });
    assert.deepEqual(parseValidUntil('2d', now), { ok: true, value: '2026-11-24T10:00:00.000Z' });
    assert.deepEqual(parseValidUntil('90m', now), { ok: true, value: '2026-11-22T11:30:00.000Z' });
    assert.deepEqual(parseValidUntil('2026-12-01T18:00:00Z', now), { ok: true, value: '2026-12-01T18:00:00.000Z' });
    assert.equal(parseValidUntil('2026-11-01T00:00:00Z', now).ok, false);
    assert.equal(parseValidUntil('0h', now).ok, false);
    assert.equal(parseValidUntil('tomorrow', now).ok, false);
  });

  it('expands a disk name to the zone\'s disk resource', () => {
    assert.deepEqual(parseDataDisk('data-1', 'p', 'us-east5-b'), { ok: true, value: 'projects/p/zones/us-east5-b/disks/data-1' });
    assert.deepEqual(parseDataDisk('projects/q/zones/z/disks/d', 'p', 'z'), { ok: true, value: 'projects/q/zones/z/disks/d' });
    assert.deepEqual(parseDataDisk(' ', 'p', 'z'), { ok: true, value: undefined });
    assert.equal(parseDataDisk('Bad Disk', 'p', 'z').ok, false);
  });
});

describe('create wizard: requests and the gcloud command', () => {
  const answers: CreateAnswers = {
    name: 'my-tpu',
    zone: 'us-east5-b',
    acceleratorType: 'v6e-8',
    runtimeVersion: 'v2-alpha-tpuv6e',
    provisioning: 'spot',
    startupScript: "echo 'hi'\n",
    labels: { team: 'ml' },
    dataDisk: 'projects/p/zones/us-east5-b/disks/d',
  };

  it('builds the CreateNode request from the answers', () => {
    assert.deepEqual(createNodeRequest('p', answers), {
      project: 'p',
      zone: 'us-east5-b',
      nodeId: 'my-tpu',
      acceleratorType: 'v6e-8',
      runtimeVersion: 'v2-alpha-tpuv6e',
      spot: true,
      startupScript: "echo 'hi'\n",
      labels: { team: 'ml' },
      dataDisks: [{ sourceDisk: 'projects/p/zones/us-east5-b/disks/d', mode: 'READ_WRITE' }],
    });
    const reserved = createNodeRequest('p', { ...answers, provisioning: 'reserved', labels: {}, startupScript: undefined, dataDisk: undefined });
    assert.equal(reserved.reserved, true);
    assert.equal(reserved.spot, undefined);
    assert.equal(reserved.labels, undefined);
  });

  it('builds a queued request whose tier carries spot, and whose node has no project/zone', () => {
    const req = createQueuedRequest('p', { ...answers, queued: { tier: 'spot', validUntil: '2026-12-01T00:00:00Z' } });
    assert.equal(req.queuedResourceId, 'my-tpu');
    assert.equal(req.tier, 'spot');
    assert.equal(req.validUntil, '2026-12-01T00:00:00Z');
    assert.equal(req.node.nodeId, 'my-tpu');
    assert.deepEqual(Object.keys(req.node).filter((k) => ['project', 'zone', 'spot'].includes(k)), []);
    const cmd = gcloudQueuedCommand(req);
    assert.match(cmd, /^gcloud compute tpus queued-resources create my-tpu /);
    assert.match(cmd, /--spot/);
    assert.match(cmd, /--valid-until-time[= ]2026-12-01T00:00:00Z/);
  });

  it('shows a gcloud create command with every answer', () => {
    const cmd = gcloudCreateCommand(createNodeRequest('p', answers));
    assert.match(cmd, /^gcloud compute tpus tpu-vm create my-tpu /);
    for (const part of ['us-east5-b', 'v6e-8', 'v2-alpha-tpuv6e', '--spot', 'team=ml']) assert.ok(cmd.includes(part), `${part} in ${cmd}`);
  });
});

describe('wizard flow (Back button)', () => {
  type Id = 'name' | 'zone' | 'tier' | 'review';
  interface S {
    queued: boolean;
  }
  const flow = new WizardFlow<Id, S>(['name', 'zone', 'tier', 'review'], (id, s) => id !== 'tier' || s.queued);

  it('skips steps that do not apply and numbers the rest', () => {
    assert.equal(flow.next('zone', { queued: false }), 'review');
    assert.equal(flow.next('zone', { queued: true }), 'tier');
    assert.deepEqual(flow.position('review', { queued: false }), { step: 3, total: 3 });
    assert.deepEqual(flow.position('review', { queued: true }), { step: 4, total: 4 });
  });

  it('goes back to the step shown before, keeps going, and stops on cancel', async () => {
    const s: S = { queued: false };
    const script: Array<[Id, 'next' | 'back' | 'cancel']> = [
      ['name', 'back'], // Back on the first step stays there
      ['name', 'next'],
      ['zone', 'next'],
      ['review', 'back'], // tier was skipped: Back lands on zone
      ['zone', 'next'],
      ['review', 'next'],
    ];
    const seen: Id[] = [];
    const done = await flow.run(s, async (id, canGoBack) => {
      seen.push(id);
      const [want, outcome] = script[seen.length - 1];
      assert.equal(id, want, `step ${seen.length}`);
      assert.equal(canGoBack, id !== 'name', 'Back is offered on every step but the first');
      return outcome;
    });
    assert.equal(done, true);
    assert.equal(seen.length, script.length);
    assert.equal(await flow.run(s, async () => 'cancel'), false);
  });
});

describe('setup/ recipe', () => {
  it('is a valid recipe that runs setup/install.sh', () => {
    const file = path.join(__dirname, '..', '..', 'setup', 'prepare-workers.sh');
    const r = parseRecipe(fs.readFileSync(file, 'utf8'), file);
    assert.deepEqual(r.program, ['bash', 'setup/install.sh']);
    assert.ok(r.env.some((e) => e.name === 'TPW_SETUP_VENV'));
    assert.ok(fs.existsSync(path.join(__dirname, '..', '..', 'setup', 'install.sh')));
  });
});
