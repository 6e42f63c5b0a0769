/**
 * tpw's task-YAML check against SkyPilot's own: every file of test/fixtures/task-yaml/corpus is accepted or
 * refused by both alike. SkyPilot's verdicts are stored in test/fixtures/task-yaml/skypilot-verdicts.json
 * (with the command that produced them), and one test runs SkyPilot again to see they still hold.
 * "Unsupported" (a valid field tpw does not do) is not a refusal of validity: SkyPilot accepts those files.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { parseTaskYaml } from '../../protocol/task-yaml-check';
import { tpuVmWarnings } from '../../protocol/task-yaml-vm';
import { cleanedUserName, localPaths, vmName } from '../../extension/src/core/task-yaml/plan';
import { NODE_ID_PATTERN } from '../../extension/src/core/tpu/models';

const ROOT = path.resolve(__dirname, '../..');
const CORPUS = path.join(ROOT, 'test/fixtures/task-yaml/corpus');
const STORED = path.join(ROOT, 'test/fixtures/task-yaml/skypilot-verdicts.json');

interface Verdicts {
  source: string;
  command: string;
  verdicts: Record<string, { accepted: boolean; error?: string; paths?: { workdir?: string; file_mounts?: Record<string, string> } }>;
  cleaned_usernames: Record<string, string>;
}

const stored = JSON.parse(fs.readFileSync(STORED, 'utf8')) as Verdicts;
const files = fs.readdirSync(CORPUS).filter((f) => f.endsWith('.yaml')).sort();

function ours(file: string) {
  return parseTaskYaml(fs.readFileSync(path.join(CORPUS, file), 'utf8'));
}

test('every corpus file has a stored SkyPilot verdict, both kinds are present', () => {
  assert.deepEqual(Object.keys(stored.verdicts).sort(), files);
  const accepted = files.filter((f) => stored.verdicts[f].accepted).length;
  assert.ok(accepted >= 10 && files.length - accepted >= 10, `${accepted} accepted of ${files.length}`);
});

for (const file of files) {
  test(`${file}: same verdict as SkyPilot`, () => {
    const sky = stored.verdicts[file];
    const r = ours(file);
    const invalid = r.problems.filter((p) => p.kind === 'invalid');
    if (sky.accepted) assert.deepEqual(invalid, [], `SkyPilot accepts ${file}; we call it invalid`);
    else assert.ok(invalid.length > 0, `SkyPilot refuses ${file} (${sky.error}); we do not: ${JSON.stringify(r.problems)}`);
    // Every refusal names its field and says why in a sentence.
    for (const p of r.problems) assert.match(p.message, /\S.*[.)]$/);
  });
}

test('SkyPilot itself still gives the stored verdicts', () => {
  const venv = process.env.TPW_VENV ?? path.join(os.homedir(), '.cache/tpu-workbench/venv');
  const python = process.env.TPW_SKYPILOT_PYTHON ?? `${venv}-skypilot/bin/python`;
  assert.ok(fs.existsSync(python), `SkyPilot's venv is missing (${python}): run \`bash scripts/python-env.sh\``);
  const out = execFileSync(python, [path.join(ROOT, 'test/skypilot/skypilot_verdicts.py')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 120_000 });
  const live = JSON.parse(out) as Verdicts;
  assert.equal(live.source, stored.source);
  const accepted = (v: Verdicts) => Object.fromEntries(Object.entries(v.verdicts).map(([k, x]) => [k, [x.accepted, x.paths]]));
  assert.deepEqual(accepted(live), accepted(stored));
  assert.deepEqual(live.cleaned_usernames, stored.cleaned_usernames);
});

test("relative workdir and file_mounts start where SkyPilot starts them: the directory it runs in, not the YAML's", () => {
  const withPaths = files.filter((f) => stored.verdicts[f].paths);
  assert.ok(withPaths.length >= 3, withPaths.join(', '));
  for (const file of withPaths) {
    const sky = stored.verdicts[file].paths!;
    const task = ours(file).task ?? parseTaskYaml(fs.readFileSync(path.join(CORPUS, file), 'utf8')).task;
    if (!task) continue; // a file tpw refuses for another reason plans no paths
    const cwd = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-skypaths-')));
    try {
      for (const rel of [sky.workdir, ...Object.values(sky.file_mounts ?? {})]) if (rel) fs.mkdirSync(path.join(cwd, rel), { recursive: true });
      const got = localPaths(task, cwd, 'launch', file);
      if (sky.workdir) assert.equal(path.relative(cwd, got.workdir ?? '') || '.', sky.workdir, file);
      for (const [dest, rel] of Object.entries(sky.file_mounts ?? {})) {
        assert.equal(path.relative(cwd, got.localMounts.find((m) => m.dest === dest)?.source ?? ''), rel, `${file}: ${dest}`);
      }
    } finally {
      fs.rmSync(cwd, { recursive: true, force: true });
    }
  }
});

test("a VM name made as `sky launch` makes a cluster's: SkyPilot's cleaning of the user name, then a name a TPU VM can have", () => {
  for (const [user, cleaned] of Object.entries(stored.cleaned_usernames)) {
    assert.equal(cleanedUserName(user), cleaned, user);
    const { name, note } = vmName(undefined, undefined, user);
    assert.ok(NODE_ID_PATTERN.test(name), `${user} -> ${name}`);
    assert.match(name, /^sky-[0-9a-f]{4}/);
    assert.match(note ?? '', /the task has no name/);
  }
  assert.equal(vmName(undefined, 'train-llama', 'alice').name, 'train-llama');
  assert.match(vmName(undefined, 'tpu_app', 'alice').name, /^sky-[0-9a-f]{4}-alice$/);
  assert.equal(vmName('mine', 'tpu_app', 'alice').name, 'mine');
  assert.throws(() => vmName('my_vm', undefined, 'alice'), /-c "my_vm" cannot be a TPU VM name: .*, e\.g\. -c my-vm\./);
});

test("SkyPilot's TPU examples: what a TPU VM will not have is a warning on the field that expects it", () => {
  const warned = (name: string) => {
    const task = parseTaskYaml(fs.readFileSync(path.join(CORPUS, `skypilot-examples-tpu-${name}.yaml`), 'utf8')).task;
    assert.ok(task, name);
    return tpuVmWarnings(task).map((w) => w.field);
  };
  assert.deepEqual(warned('tpu_app'), ['setup']);
  assert.deepEqual(warned('tpuvm_mnist'), ['setup']);
  assert.deepEqual(warned('v6e-serve-llama2-7b'), ['envs.input_ckpt_dir', 'envs.output_ckpt_dir', 'envs.tokenizer_path']);
  assert.deepEqual(warned('v6e-train-llama3-8b'), []);
  // A setup that installs conda first is left alone.
  assert.deepEqual(tpuVmWarnings({ setup: 'curl -L https://github.com/conda-forge/miniforge/x.sh | bash\nconda activate base', envs: {} }), []);
});

test('what tpw refuses of files SkyPilot accepts: named, with why', () => {
  const unsupported = (file: string) => ours(file).problems.filter((p) => p.kind === 'unsupported').map((p) => p.field);
  assert.deepEqual(unsupported('valid-full.yaml'), ['resources.disk_size', 'resources.image_id']);
  assert.deepEqual(unsupported('valid-gpu-accelerator.yaml'), ['resources.accelerators']);
  // SkyPilot runs num_nodes: 2 of a TPU VM type on 2 VMs; tpw on a multislice group of 2 slices.
  assert.deepEqual(unsupported('valid-num-nodes-2.yaml'), []);
  assert.equal(ours('valid-num-nodes-2.yaml').task?.numNodes, 2);
  assert.deepEqual(parseTaskYaml('resources: {accelerators: tpu-v6e-8}\nnum_nodes: 65\nrun: echo\n').problems.map((p) => [p.kind, p.field]), [['unsupported', 'num_nodes']]);
  assert.deepEqual(unsupported('valid-tpu-node.yaml'), ['resources.accelerator_args.tpu_vm']);
  assert.deepEqual(unsupported('valid-file-mount-storage.yaml'), ['file_mounts./data']);
  assert.deepEqual(unsupported('case-s3-mount.yaml'), ['file_mounts.~/x']);
  assert.match(ours('valid-ports.yaml').problems[0].message, /is not supported: tpw opens no firewall ports/);
});

test('a supported task reads as written: type, runtime, spot, zone, labels, envs (as SkyPilot turns them to strings), secrets', () => {
  const r = parseTaskYaml(
    [
      'name: demo',
      'resources:',
      '  accelerators: {tpu-v5litepod-16: 1}',
      '  accelerator_args: {runtime_version: v2-alpha-tpuv5-lite, tpu_vm: true}',
      '  use_spot: yes',
      '  infra: gcp/us-west4/us-west4-a',
      '  labels: {team: ml}',
      'workdir: .',
      'file_mounts:',
      '  ~/cfg.json: ./cfg.json',
      '  ~/data: gs://bucket/data',
      'setup: pip list',
      'run: python3 train.py',
      'envs: {STEPS: 10, LR: 0.5, DEBUG: false, EMPTY: ""}',
      'secrets: {HF_TOKEN: null, INLINE: abc}',
    ].join('\n'),
  );
  assert.deepEqual(r.problems, []);
  assert.deepEqual(r.task, {
    name: 'demo',
    acceleratorType: 'v5litepod-16',
    runtimeVersion: 'v2-alpha-tpuv5-lite',
    spot: true,
    zone: 'us-west4-a',
    region: 'us-west4',
    labels: { team: 'ml' },
    numNodes: 1,
    workdir: '.',
    fileMounts: [
      { dest: '~/cfg.json', kind: 'local', source: './cfg.json' },
      { dest: '~/data', kind: 'bucket', source: 'gs://bucket/data' },
    ],
    setup: 'pip list',
    run: 'python3 train.py',
    // Python's str(): what SkyPilot hands the program.
    envs: { STEPS: '10', LR: '0.5', DEBUG: 'False', EMPTY: '' },
    secrets: { HF_TOKEN: null, INLINE: 'abc' },
  });
});

test('--env fills an env the YAML leaves empty, and overrides one it sets', () => {
  const text = 'resources: {accelerators: tpu-v6e-8}\nenvs: {NEEDED: null, SET: yaml}\nrun: echo\n';
  assert.equal(parseTaskYaml(text).problems[0]?.field, 'envs.NEEDED');
  const r = parseTaskYaml(text, { envOverrides: { NEEDED: 'cli', SET: 'cli' } });
  assert.deepEqual(r.task?.envs, { NEEDED: 'cli', SET: 'cli' });
});

test('envs and inline secrets fill $NAME and ${NAME} in workdir and file_mounts, as SkyPilot does at parse time', () => {
  const text = 'resources: {accelerators: tpu-v6e-8}\nenvs: {SIZE: "8", DIR: proj}\nworkdir: ./${DIR}\nfile_mounts:\n  ~/llama-${SIZE}b: ./w-$SIZE\n  ~/x-$UNSET: ./y\nrun: echo\n';
  const r = parseTaskYaml(text, { envOverrides: { SIZE: '70' } });
  // SkyPilot 0.14.1 on the same text: sky.Task.from_yaml_config(yaml.safe_load(text), env_overrides=[('SIZE', '70')])
  // gives workdir ./proj and file_mounts {'~/llama-70b': './w-70', '~/x-$UNSET': './y'}.
  assert.equal(r.task?.workdir, './proj');
  assert.deepEqual(r.task?.fileMounts, [
    { dest: '~/llama-70b', kind: 'local', source: './w-70' },
    // A name that is no env stays as written.
    { dest: '~/x-$UNSET', kind: 'local', source: './y' },
  ]);
});

test('TPU7x: SkyPilot\'s tpu-tpu7x-8 (tpu- + the Cloud TPU type) is the Cloud TPU type tpu7x-8', () => {
  const r = parseTaskYaml('resources: {accelerators: tpu-tpu7x-8}\nrun: echo\n');
  assert.deepEqual(r.problems, []);
  assert.equal(r.task?.acceleratorType, 'tpu7x-8');
});

test('100,000 envs are read, and a repeated key still refused, without going quadratic', { timeout: 60_000 }, () => {
  // The timeout only guards against the quadratic check that took minutes here; a linear read takes seconds.
  const lines = ['resources: {accelerators: tpu-v5litepod-8}', 'envs:'];
  for (let i = 0; i < 100_000; i++) lines.push(`  V${i}: value${i}`);
  const parsed = parseTaskYaml([...lines, 'run: echo "$V99999"'].join('\n'));
  assert.deepEqual(parsed.problems, []);
  assert.equal(Object.keys(parsed.task?.envs ?? {}).length, 100_000);
  assert.equal(parsed.task?.envs.V99999, 'value99999');
  const repeated = parseTaskYaml([...lines, '  V5: again', 'run: echo'].join('\n'));
  assert.match(repeated.problems.map((p) => p.message).join('\n'), /Map keys must be unique: "V5" at line 100003 \(also at line 8\)/);
});
