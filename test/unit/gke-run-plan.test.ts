import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import { archiveWorkspace, PART_BYTES } from '../../extension/src/core/gke/workspace-archive';
import { parseRecipe, scriptRecipe } from '../../extension/src/core/recipes/recipe';
import { planGkeRun, planYaml, workloadNameFor } from '../../extension/src/core/run/gke-plan';

/**
 * What a GKE run submits (core/run/gke-plan.ts): secrets only by reference, the proxied variables `tp run` proxies,
 * the recipe as on a VM worker (its exports, its folder, output_dir= and profile_dir=), and the workspace as
 * ConfigMap parts that the pods' init step unpacks. The generated command is run by real bash here, the way the
 * pod's container runs it, so its quoting is checked, not read.
 */

const RECIPE = `#!/usr/bin/env bash
export PJRT_DEVICE=CPU
export XLA_FLAGS="--xla_cpu_multi_thread_eigen=false it's"
export PYTHONPATH="trainer\${PYTHONPATH:+:$PYTHONPATH}"
cd sub
python3 -m tpu_trainer.train model=tiny-llama max_steps=2 "$@"
`;
const SECRET = 'hf_SECRET_value_1234567890';

function plan(extra: Partial<Parameters<typeof planGkeRun>[0]> = {}) {
  return planGkeRun({
    runId: '20261122-031500-a1b2',
    recipe: parseRecipe(RECIPE, '/ws/recipes/r.sh'),
    workspaceParts: 2,
    tpuType: 'v5litepod-16',
    numSlices: 2,
    image: 'python:3.11',
    extraOverrides: ["optimizer.lr='1e-3'"],
    passEnv: { HF_TOKEN: SECRET, LIBTPU_INIT_ARGS: '--xla_tpu_a=1 --b', XLA_IR_DEBUG: '1' },
    ...extra,
  });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the rendered objects are plain JSON
const podSpec = (p: ReturnType<typeof plan>): any => (p.jobset as any).spec.replicatedJobs[0].template.spec.template.spec;

test('secrets go in the Secret only; the proxied XLA and libtpu variables in the container env, as tp run proxies them', () => {
  const p = plan();
  assert.ok(!JSON.stringify(p.jobset).includes(SECRET), 'the JobSet must not hold the secret value');
  assert.deepEqual(p.secret?.stringData, { HF_TOKEN: SECRET });
  assert.equal(p.secret?.metadata.name, 'tpw-20261122-031500-a1b2-secrets');
  const env = podSpec(p).containers[0].env as Array<{ name: string; value?: string; valueFrom?: unknown }>;
  assert.deepEqual(env.find((e) => e.name === 'HF_TOKEN'), { name: 'HF_TOKEN', valueFrom: { secretKeyRef: { name: 'tpw-20261122-031500-a1b2-secrets', key: 'HF_TOKEN' } } });
  assert.equal(env.find((e) => e.name === 'LIBTPU_INIT_ARGS')?.value, '--xla_tpu_a=1 --b');
  assert.equal(env.find((e) => e.name === 'XLA_IR_DEBUG')?.value, '1');
  // Pods know where they are from their own JobSet annotations.
  assert.deepEqual(env.find((e) => e.name === 'TPW_SLICE_INDEX')?.valueFrom, { fieldRef: { fieldPath: "metadata.annotations['jobset.sigs.k8s.io/job-index']" } });
  // No secret at all: no Secret object, no reference.
  assert.equal(plan({ passEnv: {} }).secret, undefined);
});

test('the dry run prints the Secret’s keys and never its value, and the ConfigMaps’ sizes, not their bytes', () => {
  const p = plan();
  const text = planYaml(p, [100, 7]);
  assert.ok(!text.includes(SECRET));
  const docs = parseAllDocuments(text).map((d) => d.toJSON());
  assert.deepEqual(docs.map((d) => d.kind), ['Secret', 'ConfigMap', 'ConfigMap', 'JobSet']);
  assert.match(docs[0].stringData.HF_TOKEN, /never printed/);
  assert.match(docs[2].binaryData.part, /7 bytes/);
  assert.deepEqual(docs[3], JSON.parse(JSON.stringify(p.jobset)));
});

test('the pod runs the recipe as a VM worker does: its folder, its exports in order, output_dir and profile_dir, every word literal', () => {
  const p = plan({ resume: true });
  const script: string = podSpec(p).containers[0].command[2];
  const inner = /^\((.*)\) & PID=\$!;$/m.exec(script)![1];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-gke-plan-'));
  fs.mkdirSync(path.join(dir, 'sub'));
  // A python3 that prints what it was given: argv one per line, then the variables the recipe set.
  fs.mkdirSync(path.join(dir, 'bin'));
  fs.writeFileSync(path.join(dir, 'bin', 'python3'), '#!/bin/bash\nprintf "arg:%s\\n" "$@"\necho "cwd:$(basename "$PWD")"\necho "XLA_FLAGS:$XLA_FLAGS"\necho "PYTHONPATH:$PYTHONPATH"\necho "worker:$TPW_WORKER_INDEX"\n', { mode: 0o755 });
  const out = execFileSync('bash', ['-c', inner], {
    cwd: dir,
    env: { PATH: `${path.join(dir, 'bin')}:/usr/bin:/bin`, TPW_RUN_DIR: path.join(dir, 'run'), TPW_SLICE_INDEX: '1', TPW_HOST_INDEX: '3', PYTHONPATH: '/x' },
    encoding: 'utf8',
  });
  const lines = out.trim().split('\n');
  assert.deepEqual(
    lines.filter((l) => l.startsWith('arg:')).map((l) => l.slice(4)),
    ['-m', 'tpu_trainer.train', 'model=tiny-llama', 'max_steps=2', "optimizer.lr='1e-3'", 'resume=auto', 'output_dir=${oc.env:TPW_RUN_DIR}/output', 'profile_dir=${oc.env:TPW_RUN_DIR}/profile'],
  );
  assert.ok(lines.includes('cwd:sub'));
  assert.ok(lines.includes("XLA_FLAGS:--xla_cpu_multi_thread_eigen=false it's"));
  assert.ok(lines.includes('PYTHONPATH:trainer:/x'));
  // slice 1, host 3 of a 4-pod slice is worker 7.
  assert.ok(lines.includes('worker:7'));
  assert.ok(fs.existsSync(path.join(dir, 'run')), 'the run folder is made before the program starts');
});

test('a Python script runs as tp run runs it, with output_dir and profile_dir added', () => {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-gke-script-'));
  fs.mkdirSync(path.join(ws, 'tp'));
  fs.writeFileSync(path.join(ws, 'tp', 'train.py'), '');
  const p = plan({ recipe: scriptRecipe(path.join(ws, 'tp', 'train.py'), ws), extraOverrides: ['model=llama-3-8b', 'ici_mesh.fsdp=256'] });
  const script: string = podSpec(p).containers[0].command[2];
  assert.match(script, /\(export TPW_WORKER_INDEX=\$\(\(TPW_SLICE_INDEX \* 4 \+ TPW_HOST_INDEX\)\) && mkdir -p "\$TPW_RUN_DIR" && python3 tp\/train.py 'model=llama-3-8b' 'ici_mesh.fsdp=256' 'output_dir=\$\{oc.env:TPW_RUN_DIR\}\/output' 'profile_dir=\$\{oc.env:TPW_RUN_DIR\}\/profile'\) & PID/);
  assert.throws(() => scriptRecipe('/elsewhere/train.py', ws), /outside the workspace/);
});

test('with an artifact folder each pod copies its output and profiles there at its end, keeping the program’s status', () => {
  const p = plan({ artifactDir: 'gs://bucket/runs' });
  const script: string = podSpec(p).containers[0].command[2];
  const inner = /^\((.*)\) & PID=\$!;$/m.exec(script)![1];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-gke-art-'));
  fs.mkdirSync(path.join(dir, 'sub'));
  fs.mkdirSync(path.join(dir, 'bin'));
  // The program fails with 3 after writing output; gcloud records what it was asked to copy.
  fs.writeFileSync(path.join(dir, 'bin', 'python3'), `#!/bin/bash\nmkdir -p "$TPW_RUN_DIR/output"\nexit 3\n`, { mode: 0o755 });
  fs.writeFileSync(path.join(dir, 'bin', 'gcloud'), `#!/bin/bash\necho "$@" >> ${path.join(dir, 'gcloud.log')}\n`, { mode: 0o755 });
  let status = 0;
  try {
    execFileSync('bash', ['-c', inner], { cwd: dir, env: { PATH: `${path.join(dir, 'bin')}:/usr/bin:/bin`, TPW_RUN_DIR: path.join(dir, 'run'), TPW_SLICE_INDEX: '0', TPW_HOST_INDEX: '2' } });
  } catch (e) {
    status = (e as { status: number }).status;
  }
  assert.equal(status, 3);
  assert.equal(fs.readFileSync(path.join(dir, 'gcloud.log'), 'utf8').trim(), `storage cp -r ${path.join(dir, 'run')}/output gs://bucket/runs/${workloadNameFor('20261122-031500-a1b2')}/outputs/0-2`);
});

test('the workspace archive’s parts, concatenated, unpack with tar to the synced files', async () => {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-gke-ws-'));
  fs.mkdirSync(path.join(ws, 'trainer', 'deep'), { recursive: true });
  fs.writeFileSync(path.join(ws, 'trainer', 'deep', 'a.py'), 'print(1)\n');
  // Incompressible bytes bigger than a part: the archive must be cut in two or more.
  const big = randomBytes(PART_BYTES + 5000);
  fs.writeFileSync(path.join(ws, 'blob.bin'), big);
  fs.writeFileSync(path.join(ws, '.tpuignore'), 'ignored.txt\n');
  fs.writeFileSync(path.join(ws, 'ignored.txt'), 'no');
  const a = await archiveWorkspace(ws);
  assert.ok(a.parts.length >= 2, `${a.parts.length} parts`);
  assert.ok(a.parts.every((p) => p.length <= PART_BYTES));
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-gke-unpack-'));
  execFileSync('tar', ['-xzf', '-', '-C', out], { input: Buffer.concat(a.parts) });
  assert.equal(fs.readFileSync(path.join(out, 'trainer', 'deep', 'a.py'), 'utf8'), 'print(1)\n');
  assert.ok(fs.readFileSync(path.join(out, 'blob.bin')).equals(big));
  assert.equal(fs.existsSync(path.join(out, 'ignored.txt')), false);
});

test('the init step’s own command unpacks the parts in their order', async () => {
  const p = plan();
  const init = podSpec(p).initContainers[0];
  assert.deepEqual(init.volumeMounts.map((m: { mountPath: string }) => m.mountPath), ['/tpw/archive', '/tpw/workspace']);
  // The same command with the mount paths moved under a temporary folder, run by real bash and tar.
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-gke-init-'));
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-gke-initws-'));
  fs.writeFileSync(path.join(ws, 'x.txt'), 'x'.repeat(10));
  const a = await archiveWorkspace(ws);
  const whole = Buffer.concat(a.parts);
  fs.mkdirSync(path.join(root, 'archive'));
  fs.mkdirSync(path.join(root, 'workspace'));
  // Two parts whose names sort in order, as the projected volume's items are named.
  fs.writeFileSync(path.join(root, 'archive', '000'), whole.subarray(0, 10));
  fs.writeFileSync(path.join(root, 'archive', '001'), whole.subarray(10));
  execFileSync('bash', ['-c', init.command[2].replaceAll('/tpw/', `${root}/`)]);
  assert.equal(fs.readFileSync(path.join(root, 'workspace', 'x.txt'), 'utf8'), 'x'.repeat(10));
  assert.deepEqual(parse(JSON.stringify(init.command)), ['bash', '-c', 'set -e; cat /tpw/archive/* | tar -xzf - -C /tpw/workspace']);
});
