/**
 * Hydra overrides after the trainer command, in recipes and task YAML `run:` blocks: completion of keys,
 * dotted paths, groups and values; validation with did-you-mean; hover; go to an option's file.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';
import type { Location, MarkupContent, TextEdit } from 'vscode-languageserver-protocol';
import { labels, LspClient } from './harness';
import { INIT, makeWorkspace } from './fixture';

let root: string;
let c: LspClient;
const recipe = () => pathToFileURL(path.join(root, 'recipes/r.sh')).toString();
const CMD = 'export PJRT_DEVICE=TPU\npython3 -m tpu_trainer.train \\\n    model=big \\\n    ';

before(async () => {
  root = makeWorkspace();
  c = await LspClient.start(root, INIT);
});
after(async () => {
  await c.stop();
  fs.rmSync(root, { recursive: true, force: true });
});

test('keys and groups complete after the trainer command, on a continuation line', async () => {
  const items = await c.completeAt(recipe(), `${CMD}max|\n`);
  const ms = items.find((i) => i.label === 'max_steps');
  assert.ok(ms, labels(items).join(', '));
  assert.equal((ms.textEdit as TextEdit).newText, 'max_steps=');
  assert.deepEqual((ms.textEdit as TextEdit).range, { start: { line: 3, character: 4 }, end: { line: 3, character: 7 } });
  const all = labels(await c.completeAt(recipe(), `${CMD}|\n`));
  for (const k of ['model', 'model/remat', 'optimizer', 'ici_mesh', 'seed']) assert.ok(all.includes(k), k);
  const obj = items.find((i) => i.label === 'max_steps');
  assert.equal(obj?.detail, 'integer ≥ 1');
});

test('dotted paths: children of a node, with + and ~ prefixes kept', async () => {
  const dotted = labels(await c.completeAt(recipe(), `${CMD}model.hid|\n`));
  assert.ok(dotted.includes('model.hidden_size'), dotted.join(', '));
  assert.ok(dotted.every((l) => l.startsWith('model.')));
  const plus = await c.completeAt(recipe(), `${CMD}+ici_mesh.|\n`);
  const fsdp = plus.find((i) => i.label === 'ici_mesh.fsdp');
  assert.ok(fsdp);
  assert.equal((fsdp.textEdit as TextEdit).range.start.character, 5, 'the + stays');
});

test('values: group options, nested groups, enums, booleans', async () => {
  assert.deepEqual(labels(await c.completeAt(recipe(), `${CMD}optimizer=|\n`)).sort(), ['adamw', 'sgd']);
  assert.deepEqual(labels(await c.completeAt(recipe(), `${CMD}model/remat=|\n`)).sort(), ['llama-scan', 'none']);
  assert.deepEqual(labels(await c.completeAt(recipe(), `${CMD}model.attention_kernel=spl|\n`)), ['default', 'splash_attention', 'flash_attention']);
  assert.deepEqual(labels(await c.completeAt(recipe(), `${CMD}model.tie_word_embeddings=|\n`)), ['true', 'false']);
});

test('no override completion before the trainer command or in other commands', async () => {
  assert.deepEqual(await c.completeAt(recipe(), 'export PJRT_DEVICE=TPU\necho max|\n'), []);
  assert.deepEqual(await c.completeAt(recipe(), 'python3 other.py max|\n'), []);
});

test('validation: every override form, with did-you-mean', async () => {
  const text = [
    'python3 -m tpu_trainer.train \\',
    '    model=bigg \\',
    '    model/remat=llama-scan \\',
    '    model/remat=llama-scna \\',
    '    max_step=5 \\',
    '    optimizer.name=adam \\',
    '    ici_mesh.fsdp=256 \\',
    '    max_steps=ten \\',
    '    +seed=3 \\',
    '    ~profile_dir \\',
    '    ++model.hidden_size=128 \\',
    '    model.attention_kernel=splash_attention \\',
    "    'optimizer.lr=1e-4' \\",
    '    output_dir=$OUT seed=1,2,3 \\',
    '    model/rematt=none \\',
    '    "$@"',
  ].join('\n');
  const d = await c.openAndDiagnose(recipe(), text);
  const got = d.map((x) => `${x.range.start.line}:${x.code}: ${x.message}`);
  assert.deepEqual(
    got.map((g) => g.split(' ')[0]),
    // `~` on a null key and a sweep without --multirun stop the run (hydra refuses both): errors since issue 16.
    ['1:unknown-option:', '3:unknown-option:', '4:unknown-key:', '5:wrong-type:', '7:wrong-type:', '8:override-exists:', '9:delete-missing:', '13:sweep-without-multirun:', '14:unknown-group:'],
    got.join('\n'),
  );
  assert.match(got[0], /Unknown option "bigg" for group model. Did you mean "big"\?/);
  assert.match(got[1], /Did you mean "llama-scan"\?/);
  assert.match(got[2], /Unknown config key "max_step". Did you mean "max_steps"\?/);
  assert.match(got[3], /optimizer.name: "adam" is not one of "adamw", "sgd"/);
  assert.match(got[4], /max_steps: expected an integer, got the string ten/);
  assert.match(got[8], /Unknown config group "model\/rematt". Did you mean "model\/remat"\?/);
  assert.deepEqual(d[0].range, { start: { line: 1, character: 10 }, end: { line: 1, character: 14 } });
});

test('the same in a task YAML run: block', async () => {
  const u = pathToFileURL(path.join(root, 'task.yaml')).toString();
  const d = await c.openAndDiagnose(u, 'envs:\n  PJRT_DEVICE: TPU\nrun: |\n  python -m tpu_trainer.train model=tiny optimzer.lr=0.1\n', 'yaml');
  assert.equal(d.length, 1);
  assert.match(d[0].message, /Unknown config key "optimzer.lr". Did you mean "optimizer.lr"\?/);
  const items = await c.completeAt(u, 'run: |\n  python -m tpu_trainer.train model=¦\n', 'yaml', '¦');
  assert.deepEqual(labels(items).sort(), ['big', 'tiny']);
});

test('hover on an override and go to an option\'s file', async () => {
  const u = recipe();
  const pos = await c.openMarked(u, 'python3 -m tpu_trainer.train optimizer.l|r=1e-3 model=big\n');
  const md = ((await c.hover(u, pos))?.contents as MarkupContent).value;
  assert.match(md, /\*\*optimizer\.lr\*\* · `number ≥ 0`/);
  assert.match(md, /Peak learning rate/);
  const gpos = await c.openMarked(u, 'python3 -m tpu_trainer.train optimizer.lr=1e-3 mo|del=big\n');
  assert.match(((await c.hover(u, gpos))?.contents as MarkupContent).value, /Options: `big`, `tiny` \(default\)/);
  const dpos = await c.openMarked(u, 'python3 -m tpu_trainer.train model=b|ig\n');
  const loc = (await c.definition(u, dpos)) as Location;
  assert.equal(loc.uri, pathToFileURL(path.join(root, 'configs/model/big.yaml')).toString());
});

test('overrides after `tpw run RECIPE --vm X --` are checked and completed like the trainer\'s', async () => {
  const u = pathToFileURL(path.join(root, 'recipes/launch.sh')).toString();
  const d = await c.openAndDiagnose(u, 'tpw run recipes/r.sh --vm my-vm -- model=bigg max_steps=5\n');
  assert.deepEqual(d.map((x) => x.code), ['unknown-option']);
  assert.deepEqual(labels(await c.completeAt(u, 'tpw run recipes/r.sh --vm my-vm -- optimizer=|\n')).sort(), ['adamw', 'sgd']);
  assert.deepEqual(await c.completeAt(u, 'tpw run recipes/r.sh --vm my-vm max|\n'), [], 'nothing before the --');
});

test('quick fixes replace a misspelt override key or option with the suggestion', async () => {
  const u = recipe();
  const d = await c.openAndDiagnose(u, 'python3 -m tpu_trainer.train max_step=5 model=bigg\n');
  assert.deepEqual(d.map((x) => x.code), ['unknown-key', 'unknown-option']);
  const [key] = await c.codeActions(u, [d[0]]);
  assert.equal(key.title, 'Change to "max_steps"');
  assert.deepEqual(key.edit!.changes![u][0], { range: { start: { line: 0, character: 29 }, end: { line: 0, character: 37 } }, newText: 'max_steps' });
  const [opt] = await c.codeActions(u, [d[1]]);
  assert.equal(opt.title, 'Change to "big"');
  assert.equal(opt.edit!.changes![u][0].range.start.character, 46);
});
