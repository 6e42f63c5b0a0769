/**
 * The gcloud command builder: a printed command, pasted into bash, must hand gcloud exactly the request's
 * values — so each test runs the command in a real bash with `gcloud` defined as a function that prints its
 * argv, and compares word for word. Also: valid-until parsing for queued resources.
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { isTpwError } from '../../extension/src/core/errors';
import type { CreateNodeRequest, CreateQueuedResourceRequest } from '../../extension/src/core/tpu/api';
import { gcloudCreateCommand, gcloudDict, gcloudQueuedCommand } from '../../extension/src/core/tpu/gcloud-command';
import { parseDurationMs, parseValidUntil } from '../../extension/src/core/tpu/valid-until';

/** The argv bash gives `gcloud` when it runs `command`. */
function argvOf(command: string): string[] {
  const out = execFileSync('bash', ['-c', `gcloud() { printf '%s\\0' "$@"; }\n${command}`], { encoding: 'utf8' });
  return out.split('\0').slice(0, -1);
}

const HOSTILE = `it's "quoted" $(touch /tmp/tpw-pwned) \`id\` ; rm -rf ~ *\nsecond line, with a comma`;

describe('gcloudCreateCommand', () => {
  it('builds the tpu-vm create command with every option', () => {
    const req: CreateNodeRequest = {
      project: 'my-proj',
      zone: 'us-east5-b',
      nodeId: 'vm-1',
      acceleratorType: 'v6e-8',
      runtimeVersion: 'v2-alpha-tpuv6e',
      spot: true,
      labels: { team: 'ml' },
      description: 'trainer box',
      dataDisks: [{ sourceDisk: 'projects/my-proj/zones/us-east5-b/disks/d1', mode: 'READ_ONLY' }],
    };
    assert.equal(
      gcloudCreateCommand(req),
      'gcloud compute tpus tpu-vm create vm-1 --zone=us-east5-b --project=my-proj --accelerator-type=v6e-8 --version=v2-alpha-tpuv6e --spot ' +
        "--description='trainer box' --labels='team=ml' --data-disk='source=projects/my-proj/zones/us-east5-b/disks/d1,mode=read-only'",
    );
    assert.deepEqual(argvOf(gcloudCreateCommand(req)).slice(0, 6), ['compute', 'tpus', 'tpu-vm', 'create', 'vm-1', '--zone=us-east5-b']);
    assert.ok(gcloudCreateCommand({ ...req, spot: false, reserved: true }).includes(' --reserved'));
    assert.ok(!gcloudCreateCommand({ ...req, spot: false }).includes('--spot'));
  });

  it('passes hostile descriptions, labels and startup scripts through bash literally', () => {
    const req: CreateNodeRequest = {
      project: 'p',
      zone: 'us-central2-b',
      nodeId: 'x',
      acceleratorType: 'v4-8',
      runtimeVersion: 'tpu-ubuntu2204-base',
      description: HOSTILE,
      labels: { a: HOSTILE, b: 'plain' },
      startupScript: `#!/bin/bash\necho ${HOSTILE}\n`,
    };
    const argv = argvOf(gcloudCreateCommand(req));
    assert.ok(argv.includes(`--description=${HOSTILE}`), argv.join('\n|'));
    // Values with commas switch to gcloud's ^DELIM^ list syntax so the pairs still split where they should.
    const labels = argv.find((a) => a.startsWith('--labels='));
    assert.ok(labels);
    const m = /^--labels=\^(.+?)\^(.*)$/s.exec(labels);
    assert.ok(m, labels);
    assert.deepEqual(m[2].split(m[1]), [`a=${HOSTILE}`, 'b=plain']);
    const metadata = argv.find((a) => a.startsWith('--metadata='));
    assert.ok(metadata?.endsWith(`startup-script=#!/bin/bash\necho ${HOSTILE}\n`), metadata);
    // Multiline output is the same command for bash.
    assert.deepEqual(argvOf(gcloudCreateCommand(req, { multiline: true })), argv);
  });

  it('names the startup script file instead of inlining it when there is one', () => {
    const cmd = gcloudCreateCommand(
      { project: 'p', zone: 'z-a', nodeId: 'x', acceleratorType: 'v4-8', runtimeVersion: 'r', startupScript: 'echo hi', metadata: { k: 'v' } },
      { startupScriptFile: "/home/me/my script's.sh" },
    );
    const argv = argvOf(cmd);
    assert.ok(argv.includes("--metadata-from-file=startup-script=/home/me/my script's.sh"), argv.join('|'));
    assert.ok(argv.includes('--metadata=k=v'));
    assert.ok(!cmd.includes('echo hi'));
  });
});

describe('gcloudQueuedCommand', () => {
  it('builds queued-resources create with tier and valid-until', () => {
    const req: CreateQueuedResourceRequest = {
      project: 'p',
      zone: 'us-east5-b',
      queuedResourceId: 'qr-1',
      node: { nodeId: 'n-1', acceleratorType: 'v5litepod-16', runtimeVersion: 'v2-alpha-tpuv5-lite', labels: { x: 'y' } },
      tier: 'spot',
      validUntil: '2030-01-01T00:00:00.000Z',
    };
    assert.deepEqual(argvOf(gcloudQueuedCommand(req)), [
      'compute', 'tpus', 'queued-resources', 'create', 'qr-1',
      '--zone=us-east5-b', '--project=p', '--node-id=n-1', '--accelerator-type=v5litepod-16', '--runtime-version=v2-alpha-tpuv5-lite',
      '--spot', '--valid-until-time=2030-01-01T00:00:00.000Z', '--labels=x=y',
    ]);
    assert.ok(argvOf(gcloudQueuedCommand({ ...req, tier: 'guaranteed', validUntil: undefined })).includes('--guaranteed'));
  });

  it('quotes a hostile queued resource id and node id as single words', () => {
    const argv = argvOf(gcloudQueuedCommand({ project: 'p', zone: 'z', queuedResourceId: "q'; rm -rf / #", node: { nodeId: '$(id)', acceleratorType: 't', runtimeVersion: 'r' }, tier: 'guaranteed' }));
    assert.equal(argv[4], "q'; rm -rf / #");
    assert.ok(argv.includes('--node-id=$(id)'));
  });
});

describe('gcloudDict', () => {
  it('uses commas when it can, and a delimiter absent from the values when it cannot', () => {
    assert.equal(gcloudDict({ a: '1', b: '2' }), 'a=1,b=2');
    assert.equal(gcloudDict({ a: '1,2' }), '^;^a=1,2');
    assert.equal(gcloudDict({ a: '1,2;3', b: '|' }), '^#^a=1,2;3#b=|');
    const all = gcloudDict({ a: ',;|#@~:+%!' });
    assert.match(all, /^\^:0:\^a=/);
  });
});

describe('parseValidUntil', () => {
  const now = new Date('2030-01-01T00:00:00Z');
  it('takes durations and RFC 3339 times', () => {
    assert.equal(parseValidUntil('6h', now), '2030-01-01T06:00:00.000Z');
    assert.equal(parseValidUntil('1d12h', now), '2030-01-02T12:00:00.000Z');
    assert.equal(parseValidUntil('90m', now), '2030-01-01T01:30:00.000Z');
    assert.equal(parseValidUntil('2030-01-03T04:05:06+02:00', now), '2030-01-03T02:05:06.000Z');
    assert.equal(parseDurationMs('3600s'), 3_600_000);
    assert.equal(parseDurationMs('soon'), undefined);
  });

  it('refuses the past, zero, zone-less times and nonsense', () => {
    for (const bad of ['2029-12-31T00:00:00Z', '0h', '2030-01-02T00:00:00', 'tomorrow', '']) {
      assert.throws(() => parseValidUntil(bad, now), (e) => isTpwError(e, 'INVALID_ARGUMENT'), bad);
    }
  });
});
