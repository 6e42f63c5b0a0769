/**
 * Hydra config YAML over JSON-RPC: keys, values and `defaults:` completion, hover, diagnostics, go to
 * definition, reload when config files change, and the inferred mode used before the trainer exports a schema.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';
import type { CompletionItem, Location, MarkupContent } from 'vscode-languageserver-protocol';
import { labels, LspClient, repoRoot } from './harness';
import { FILES, INIT, makeWorkspace } from './fixture';

let root: string;
let c: LspClient;
const uri = (rel: string) => pathToFileURL(path.join(root, rel)).toString();

before(async () => {
  root = makeWorkspace();
  c = await LspClient.start(root, INIT);
});
after(async () => {
  await c.stop();
  fs.rmSync(root, { recursive: true, force: true });
});

const find = (items: CompletionItem[], label: string) => items.find((i) => i.label === label);

test('keys of a group option file come from the schema node of its group', async () => {
  const items = await c.completeAt(uri('configs/model/new.yaml'), 'name: x\nhid|\n', 'yaml');
  const hidden = find(items, 'hidden_size');
  assert.ok(hidden, labels(items).join(', '));
  assert.equal(hidden.detail, 'integer ≥ 1');
  assert.equal(hidden.insertText, 'hidden_size: ');
  assert.ok(!find(items, 'max_steps'), 'root keys are not offered in model/');
});

test('nested keys and enum / boolean values in the primary config', async () => {
  const nested = labels(await c.completeAt(uri('configs/config.yaml'), 'optimizer:\n  |\n', 'yaml'));
  assert.deepEqual(nested, ['name', 'lr']);
  const en = labels(await c.completeAt(uri('configs/config.yaml'), 'optimizer:\n  name: |\n', 'yaml'));
  assert.deepEqual(en, ['adamw', 'sgd']);
  const bool = labels(await c.completeAt(uri('configs/config.yaml'), 'model:\n  tie_word_embeddings: |\n', 'yaml'));
  assert.deepEqual(bool, ['true', 'false']);
  const top = labels(await c.completeAt(uri('configs/config.yaml'), '|\n', 'yaml'));
  for (const k of ['model', 'optimizer', 'max_steps', 'defaults', 'hydra']) assert.ok(top.includes(k), k);
});

test('defaults: list offers groups, then that group\'s options', async () => {
  const groups = labels(await c.completeAt(uri('configs/config.yaml'), 'defaults:\n  - |\n', 'yaml'));
  for (const g of ['model', 'model/remat', 'optimizer', '_self_']) assert.ok(groups.includes(g), groups.join(', '));
  const opts = await c.completeAt(uri('configs/config.yaml'), 'defaults:\n  - model: |\n', 'yaml');
  assert.deepEqual(labels(opts).sort(), ['big', 'tiny']);
  assert.equal(find(opts, 'tiny')?.detail, 'model (default)');
  const remat = labels(await c.completeAt(uri('configs/config.yaml'), 'defaults:\n  - model/remat: |\n', 'yaml'));
  assert.deepEqual(remat.sort(), ['llama-scan', 'none']);
});

test('hover on a key: type, meaning, default', async () => {
  const u = uri('configs/model/big.yaml');
  const pos = await c.openMarked(u, 'name: big\nhidden_s|ize: 4096\n', 'yaml');
  const md = ((await c.hover(u, pos))?.contents as MarkupContent).value;
  assert.match(md, /\*\*model\.hidden_size\*\* · `integer ≥ 1`/);
  assert.match(md, /Width of the residual stream/);
  assert.match(md, /Default: `64`/);
});

test('diagnostics: unknown key with did-you-mean, wrong types, unknown group option, bad interpolation', async () => {
  const text = [
    'defaults:',
    '  - model: tinny',
    '  - optimizer: sgd',
    '  - _self_',
    'max_step: 5',
    'seed: forty',
    'optimizer:',
    '  name: adam',
    '  lr: -1',
    'output_dir: ${ouput_dir}/x',
    'profile_dir: null',
    'model:',
    '  hidden_size: 12',
    '  attention_kernel: ${model.name}',
  ].join('\n');
  const d = await c.openAndDiagnose(uri('configs/config.yaml'), text, 'yaml');
  const got = d.map((x) => `${x.range.start.line}:${x.code}: ${x.message}`);
  assert.deepEqual(
    got.map((g) => g.split(' ')[0]),
    ['1:unknown-option:', '4:unknown-key:', '5:wrong-type:', '7:wrong-type:', '8:wrong-type:', '9:bad-interpolation:'],
    got.join('\n'),
  );
  assert.match(got[0], /Unknown option "tinny" for group model. Did you mean "tiny"\?/);
  assert.match(got[1], /Unknown key "max_step" in the root config. Did you mean "max_steps"\?/);
  assert.match(got[2], /seed: expected integer, got string "forty"/);
  assert.match(got[3], /"adam" is not one of "adamw", "sgd"/);
  assert.match(got[4], /-1 is below the minimum 0/);
  assert.match(got[5], /"ouput_dir" does not exist. Did you mean \$\{output_dir\}\?/);
  // The real files of the fixture are clean.
  for (const rel of Object.keys(FILES)) {
    const diags = await c.openAndDiagnose(uri(rel), FILES[rel], 'yaml');
    assert.deepEqual(diags, [], rel);
  }
});

test('go to definition: a defaults entry opens the option\'s file', async () => {
  const u = uri('configs/config.yaml');
  const pos = await c.openMarked(u, 'defaults:\n  - model: bi|g\n', 'yaml');
  const loc = (await c.definition(u, pos)) as Location;
  assert.equal(loc.uri, uri('configs/model/big.yaml'));
});

test('a new option file is offered after the file watcher reports it', async () => {
  const file = path.join(root, 'configs/model/huge.yaml');
  fs.writeFileSync(file, 'name: huge\n');
  await c.conn.sendNotification('workspace/didChangeWatchedFiles', { changes: [{ uri: pathToFileURL(file).toString(), type: 1 }] });
  const opts = labels(await c.completeAt(uri('configs/config.yaml'), 'defaults:\n  - model: |\n', 'yaml'));
  assert.deepEqual(opts.sort(), ['big', 'huge', 'tiny']);
  fs.rmSync(file);
  await c.conn.sendNotification('workspace/didChangeWatchedFiles', { changes: [{ uri: pathToFileURL(file).toString(), type: 3 }] });
  assert.deepEqual(labels(await c.completeAt(uri('configs/config.yaml'), 'defaults:\n  - model: |\n', 'yaml')).sort(), ['big', 'tiny']);
});

test('without a schema, keys and types are inferred from the YAML tree', async () => {
  const bare = makeWorkspace(false);
  const s = await LspClient.start(bare, { configDirs: ['configs'] });
  try {
    const u = pathToFileURL(path.join(bare, 'configs/model/new.yaml')).toString();
    const keys = labels(await s.completeAt(u, '|\n', 'yaml'));
    for (const k of ['name', 'hidden_size', 'num_hidden_layers', 'attention_kernel']) assert.ok(keys.includes(k), keys.join(', '));
    const d = await s.openAndDiagnose(u, 'hidden_size: wide\n', 'yaml');
    assert.equal(d.length, 1);
    assert.match(d[0].message, /expected integer \| number, got string "wide"/);
  } finally {
    await s.stop();
    fs.rmSync(bare, { recursive: true, force: true });
  }
});

test('the trainer\'s real config tree and schema: every config file is clean', async () => {
  const s = await LspClient.start(repoRoot);
  try {
    const dir = path.join(repoRoot, 'trainer/tpu_trainer/configs');
    const files = fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.yaml'));
    assert.ok(files.length >= 4);
    for (const f of files) {
      const d = await s.openAndDiagnose(pathToFileURL(path.join(dir, f)).toString(), fs.readFileSync(path.join(dir, f), 'utf8'), 'yaml');
      assert.deepEqual(d, [], `${f}: ${d.map((x) => x.message).join('; ')}`);
    }
    const u = pathToFileURL(path.join(dir, 'model', 'scratch.yaml')).toString();
    assert.ok(labels(await s.completeAt(u, 'num_|\n', 'yaml')).includes('num_hidden_layers'));
  } finally {
    await s.stop();
  }
});

test('a group file\'s own defaults: list names subgroups relative to it (`remat` in model/ is model/remat)', async () => {
  const u = uri('configs/model/withdefaults.yaml');
  assert.deepEqual(await c.openAndDiagnose(u, 'defaults:\n  - remat: llama-scan\n  - /optimizer: sgd\n  - _self_\nname: x\n', 'yaml'), []);
  const d = await c.openAndDiagnose(u, 'defaults:\n  - remat: llama-scna\nname: x\n', 'yaml');
  assert.deepEqual(d.map((x) => x.code), ['unknown-option']);
  assert.match(d[0].message, /for group model\/remat. Did you mean "llama-scan"\?/);
  assert.deepEqual(labels(await c.completeAt(u, 'defaults:\n  - remat: |\n', 'yaml')).sort(), ['llama-scan', 'none']);
  const names = labels(await c.completeAt(u, 'defaults:\n  - |\n', 'yaml'));
  assert.ok(names.includes('remat') && names.includes('/optimizer'), names.join(', '));
  const pos = await c.openMarked(u, 'defaults:\n  - remat: no|ne\n', 'yaml');
  assert.equal(((await c.definition(u, pos)) as Location).uri, uri('configs/model/remat/none.yaml'));
});

test('a quick fix renames an unknown key to the suggested one', async () => {
  const u = uri('configs/model/typo.yaml');
  const d = await c.openAndDiagnose(u, 'name: x\nhiden_size: 3\n', 'yaml');
  assert.equal(d.length, 1);
  const actions = await c.codeActions(u, d);
  assert.equal(actions[0].title, 'Change to "hidden_size"');
  assert.deepEqual(actions[0].edit!.changes![u][0], { range: { start: { line: 1, character: 0 }, end: { line: 1, character: 10 } }, newText: 'hidden_size' });
});
