/**
 * SkyPilot's own TPU examples (test/fixtures/task-yaml/corpus/skypilot-examples-tpu-*.yaml, from its examples/tpu)
 * through `tpw launch --dry-run` against the emulator, held to what `sky launch` does with them: a VM name made as
 * SkyPilot makes a cluster's when the task has none (or one a TPU VM cannot have), workdir taken from the directory
 * it is run in, every refused field named on the one line the CLI prints, a zone chosen among those that offer the
 * type (and every zone that offers it named when none of the allowed ones does), and a warning for what a TPU VM
 * will not have (conda, SkyPilot's gcpuser home).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { Emulator } from '../../emulator/src/emulator';
import { NODE_ID_PATTERN } from '../../extension/src/core/tpu/models';
import { runTpw } from '../helpers/cli';
import { testAddressPrefix } from '../helpers/loopback';

const CORPUS = path.resolve(__dirname, '../fixtures/task-yaml/corpus');
const example = (name: string) => fs.readFileSync(path.join(CORPUS, `skypilot-examples-tpu-${name}.yaml`), 'utf8');

let home = '';
let ws = '';
let emu: Emulator | undefined;
const saved = { home: process.env.TPW_HOME, user: process.env.SKYPILOT_USER };

before(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-skyex-'));
  ws = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-skyex-ws-'));
  process.env.TPW_HOME = home;
  process.env.SKYPILOT_USER = 'Ada_Lovelace';
  // As on Cloud TPU, zones differ: v6e only in the last two of the emulator's zones (us-central2-b is first).
  const offerings = { 'us-central2-b': ['v4-8', 'v4-16'], 'us-east5-b': ['v5p-8', 'v5litepod-16'] };
  emu = new Emulator({ dir: path.join(home, 'emulator'), opDelayMs: 30, addressPrefix: testAddressPrefix(161), offerings });
  await emu.start();
  fs.mkdirSync(path.join(ws, 'examples', 'tpu', 'tpu_app_code'), { recursive: true });
  // tpu_app on a type the emulator has (SkyPilot's file asks for tpu-v2-8, which Cloud TPU no longer sells).
  fs.writeFileSync(path.join(ws, 'examples', 'tpu', 'tpu_app.yaml'), example('tpu_app').replace('tpu-v2-8', 'tpu-v6e-8'));
  for (const name of ['v6e-serve-llama2-7b', 'v6e-train-llama3-8b', 'tpu_node_mnist']) fs.writeFileSync(path.join(ws, `${name}.yaml`), example(name));
});

after(async () => {
  await emu?.stop();
  fs.rmSync(ws, { recursive: true, force: true });
  fs.rmSync(home, { recursive: true, force: true });
  for (const [k, v] of [['TPW_HOME', saved.home], ['SKYPILOT_USER', saved.user]] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

test('a task without a name gets one as sky launch makes a cluster\'s, in a zone that offers its type', async () => {
  const r = await runTpw(ws, ['launch', 'v6e-serve-llama2-7b.yaml', '--secret', 'HF_TOKEN=x', '--dry-run']);
  assert.equal(r.code, 0, r.err.join('\n'));
  const text = r.out.join('\n');
  const m = /^VM: create (\S+) \(tpu-v6e-8, \S+\) in (\S+)$/m.exec(text);
  assert.ok(m, text);
  // sky-<4 hex>-<SkyPilot's cleaned user name, `_` as `-`>; the first zone (us-central2-b) does not offer v6e.
  assert.match(m[1], /^sky-[0-9a-f]{4}-ada-lovelace$/);
  assert.ok(NODE_ID_PATTERN.test(m[1]));
  assert.equal(m[2], 'us-east1-d');
  assert.match(text, new RegExp(`^Note: no -c: the VM is named ${m[1]}, as \`sky launch\` names a cluster \\(the task has no name\\); launch again with -c ${m[1]} to reuse it\\.$`, 'm'));
  // The example's envs point into SkyPilot's GCP user's home.
  assert.match(text, /^Warning: envs\.input_ckpt_dir: refers to \/home\/gcpuser\/sky_workdir\/ckpt\/llama2-7b\/original, the home of SkyPilot's GCP user/m);
});

test('a task name a TPU VM cannot have (tpu_app) is not used; workdir comes from where tpw runs; conda is warned about', async () => {
  const r = await runTpw(ws, ['launch', 'examples/tpu/tpu_app.yaml', '--dry-run']);
  assert.equal(r.code, 0, r.err.join('\n'));
  const text = r.out.join('\n');
  assert.match(text, /^VM: create sky-[0-9a-f]{4}-ada-lovelace /m);
  assert.match(text, /the task's name "tpu_app" is not a valid TPU VM name/);
  // SkyPilot: os.path.abspath('./examples/tpu/tpu_app_code') in the directory sky launch runs in (here: ws).
  assert.match(text, new RegExp(`^Sync: workdir ${fs.realpathSync(ws).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/examples/tpu/tpu_app_code → ~/sky_workdir`, 'm'));
  assert.match(text, /^Warning: setup: runs `conda activate huggingface`, but a TPU VM has no conda/m);
  // From the YAML's own folder the same relative workdir does not exist: refused, saying where it looked.
  const inside = await runTpw(path.join(ws, 'examples', 'tpu'), ['launch', 'tpu_app.yaml', '--dry-run']);
  assert.equal(inside.code, 1);
  assert.match(inside.err.join('\n'), /workdir \.\/examples\/tpu\/tpu_app_code of tpu_app\.yaml is not a folder \(.*examples\/tpu\/examples\/tpu\/tpu_app_code\): SkyPilot reads a relative workdir from the directory it is run in/);
});

test('-c names the VM; a -c a TPU VM cannot have is refused with a name it can', async () => {
  const r = await runTpw(ws, ['launch', 'v6e-train-llama3-8b.yaml', '--secret', 'HF_TOKEN=x', '-c', 'llama-train', '--dry-run']);
  assert.equal(r.code, 0, r.err.join('\n'));
  assert.match(r.out.join('\n'), /^VM: create llama-train \(tpu-v6e-8/m);
  assert.doesNotMatch(r.out.join('\n'), /^Warning:/m);
  const bad = await runTpw(ws, ['launch', 'v6e-train-llama3-8b.yaml', '--secret', 'HF_TOKEN=x', '-c', 'Llama_Train', '--dry-run']);
  assert.equal(bad.code, 1);
  assert.match(bad.err.join('\n'), /-c "Llama_Train" cannot be a TPU VM name: .*, e\.g\. -c llama-train\./);
});

test('a TPU Node task (tpu_vm: False) is refused on one line that names every field at fault', async () => {
  const r = await runTpw(ws, ['launch', 'tpu_node_mnist.yaml', '--dry-run']);
  assert.equal(r.code, 1);
  assert.equal(r.err.length, 1, r.err.join('\n'));
  for (const field of ['file_mounts./dataset', 'resources.instance_type', 'resources.accelerator_args.tpu_vm is false']) assert.ok(r.err[0].includes(field), `${field}: ${r.err[0]}`);
});

test('a zone that does not offer the type is refused naming every zone that does', async () => {
  fs.writeFileSync(path.join(ws, 'central.yaml'), 'resources:\n  accelerators: tpu-v6e-8\n  infra: gcp/us-central2\nrun: echo hi\n');
  const r = await runTpw(ws, ['launch', 'central.yaml', '-c', 'c1', '--dry-run']);
  assert.equal(r.code, 1);
  assert.match(r.err.join('\n'), /Zone us-central2-b \(the only one of region us-central2 this project uses\) does not offer tpu-v6e-8; it is offered in europe-west4-a, us-east1-d \(set resources\.zone or --zone\)\./);
  const z = await runTpw(ws, ['--zone', 'us-east5-b', 'launch', 'v6e-train-llama3-8b.yaml', '--secret', 'HF_TOKEN=x', '-c', 'c2', '--dry-run']);
  assert.equal(z.code, 1);
  assert.match(z.err.join('\n'), /Zone us-east5-b does not offer tpu-v6e-8; it is offered in europe-west4-a, us-east1-d/);
});
