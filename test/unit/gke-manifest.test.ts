import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isTpwError } from '../../extension/src/core/errors';
import { renderJobSet, restartExitCodes, xpkWrappedCommand } from '../../extension/src/core/gke/manifest';
import { gkeTpuType } from '../../extension/src/core/gke/tpu-types';
import { diffPaths, xpkCases } from '../helpers/xpk-fixtures';

/**
 * Our JobSet against xpk 1.16.0's for the same inputs, field by field (fixtures: test/fixtures/gke/xpk/, rendered by
 * `xpk workload create --dry-run --output-manifest-file`; render.sh has the exact commands).
 *
 * Where xpk relies on GKE and its webhooks, and so does this manifest (nothing in either says it):
 * - GKE's TPU webhook gives each pod TPU_WORKER_ID, TPU_WORKER_HOSTNAMES and, for several slices, MEGASCALE_*
 *   (xpk's `env:` is empty without --env);
 * - JobSet's defaulting webhook names the failurePolicy rules and adds successPolicy, startupPolicy and
 *   network.enableDNSHostnames; Kueue's webhook suspends the JobSet until its Workload is admitted;
 * - the PriorityClass `medium` and the LocalQueue `multislice-queue` exist because `xpk cluster create` made them.
 */

/** What xpk writes that no cluster reads, so ours leaves it out. */
function withoutXpkNoise(m: Record<string, unknown>): Record<string, unknown> {
  const copy = structuredClone(m) as any; // eslint-disable-line @typescript-eslint/no-explicit-any -- a parsed YAML document
  const pod = copy.spec.replicatedJobs[0].template.spec.template;
  // `imagePullSecrets: [{name: None}]`: Python's None formatted into the template when no --docker-image-pull-secret
  // is given; the kubelet ignores a pull secret that does not exist.
  assert.deepEqual(pod.spec.imagePullSecrets, [{ name: 'None' }]);
  delete pod.spec.imagePullSecrets;
  // Empty template slots: `serviceAccountName:` and `annotations:` with nothing after them are null.
  assert.equal(pod.spec.serviceAccountName, null);
  delete pod.spec.serviceAccountName;
  assert.equal(pod.metadata.annotations, null);
  delete pod.metadata.annotations;
  // `env:` with no --env is null, which the API server stores as no env at all; ours leaves it out.
  const main = pod.spec.containers[0];
  if (main.env === null) delete main.env;
  return copy;
}

const CASES = xpkCases();

test('the fixtures cover several TPU types and slice counts', () => {
  const shapes = new Set(CASES.map((c) => `${c.inputs.tpu.name}x${c.inputs.numSlices}`));
  assert.ok(shapes.size >= 6, [...shapes].join(' '));
  assert.ok([...shapes].some((s) => s.startsWith('v5litepod-16x2')));
});

for (const c of CASES) {
  test(`${c.name}: our JobSet is xpk’s, field by field`, () => {
    const ours = renderJobSet(c.inputs);
    assert.deepEqual(diffPaths(ours, withoutXpkNoise(c.manifest)), []);
  });
}

test('xpk’s wrapper around the command is reproduced byte for byte', () => {
  for (const c of CASES) {
    const theirs = (c.manifest as any).spec.replicatedJobs[0].template.spec.template.spec.containers[0].command; // eslint-disable-line @typescript-eslint/no-explicit-any
    assert.equal(theirs[2], xpkWrappedCommand(theirs[2].match(/^\((.*)\) & PID=\$!;$/m)[1]), c.name);
  }
});

test('tpw’s additions leave every field xpk writes as xpk writes it', () => {
  const c = CASES.find((x) => x.name === 'v5litepod-16x2')!;
  const ours = renderJobSet(c.inputs, {
    secretEnv: { secret: 'tpw-case-a-secrets', names: ['HF_TOKEN'] },
    env: [['TPW_RUN_DIR', '/tpw/run']],
    workspace: { parts: ['tpw-case-a-ws-0', 'tpw-case-a-ws-1'] },
    labels: { 'tpu-workbench.dev/run': 'r1' },
  });
  const diffs = diffPaths(ours, withoutXpkNoise(c.manifest)).map((d) => d.split(':')[0]);
  const pod = 'spec.replicatedJobs[0].template.spec.template';
  assert.deepEqual(diffs, [
    'metadata.labels.tpu-workbench.dev/run',
    `${pod}.metadata.labels.tpu-workbench.dev/run`,
    `${pod}.spec.containers[0].env`,
    `${pod}.spec.containers[0].volumeMounts[1]`,
    `${pod}.spec.containers[0].volumeMounts[2]`,
    `${pod}.spec.containers[0].workingDir`,
    `${pod}.spec.volumes[1]`,
    `${pod}.spec.volumes[2]`,
    `${pod}.spec.volumes[3]`,
    `${pod}.spec.initContainers`,
  ]);
  const spec = (ours as any).spec.replicatedJobs[0].template.spec.template.spec; // eslint-disable-line @typescript-eslint/no-explicit-any
  // The secret's value is never in the manifest: only a reference to the Secret's key.
  assert.deepEqual(spec.containers[0].env[1], { name: 'HF_TOKEN', valueFrom: { secretKeyRef: { name: 'tpw-case-a-secrets', key: 'HF_TOKEN' } } });
  assert.deepEqual(
    spec.volumes[1].projected.sources.map((s: any) => [s.configMap.name, s.configMap.items[0].path]), // eslint-disable-line @typescript-eslint/no-explicit-any
    [
      ['tpw-case-a-ws-0', '000'],
      ['tpw-case-a-ws-1', '001'],
    ],
  );
});

test('xpk’s restart exit codes: 42, every signal status, and the ones asked for, ascending', () => {
  const codes = restartExitCodes([75, 42]);
  assert.deepEqual(codes.slice(0, 3), [42, 75, 127]);
  assert.equal(codes.at(-1), 255);
  assert.equal(codes.length, 2 + 129);
});

test('a bad workload name or slice count is refused in one line naming it', () => {
  const base = { tpu: gkeTpuType('v5litepod-16'), numSlices: 1, image: 'i', command: 'c' };
  for (const bad of ['Upper', '1abc', 'a_b', 'x'.repeat(41), 'end-']) {
    assert.throws(() => renderJobSet({ ...base, workload: bad }), (e: unknown) => isTpwError(e, 'INVALID_ARGUMENT') && e.message.includes(`"${bad}"`));
  }
  assert.throws(() => renderJobSet({ ...base, workload: 'ok', numSlices: 0 }), /at least 1 \(got 0\)/);
});
