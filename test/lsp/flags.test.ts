/**
 * LIBTPU_INIT_ARGS / XLA_FLAGS over JSON-RPC: completion (fuzzy names, values by type), hover, diagnostics
 * (unknown with did-you-mean and its quick fix, bad values, duplicates, misplaced flags), in shell, YAML, .env
 * and settings JSON; the seed recipes give no diagnostics; the catalog's size is pinned.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import type { Diagnostic, MarkupContent, TextEdit } from 'vscode-languageserver-protocol';
import { checkValue, FLAGS } from '../../language-server/src/flags/catalog';
import generic from '../../language-server/src/flags/xla-generic.json';
import { labels, LspClient } from './harness';

let c: LspClient;
before(async () => {
  c = await LspClient.start();
});
after(async () => {
  assert.equal(await c.stop(), 0, 'the server exits cleanly on shutdown/exit');
});

const flagDiags = (d: Diagnostic[]) => d.filter((x) => x.source === 'tpu-workbench');

test('initialize advertises completion, hover, definition and quick fixes', () => {
  assert.ok(c.init.capabilities.completionProvider);
  assert.equal(c.init.capabilities.hoverProvider, true);
  assert.equal(c.init.capabilities.definitionProvider, true);
  assert.ok(c.init.capabilities.codeActionProvider);
  assert.equal(c.init.serverInfo?.name, 'tpu-workbench-language-server');
});

test('the catalog: 508 flags (330 generic from XLA debug options + 178 libtpu/public), each complete', () => {
  assert.equal(FLAGS.length, 508);
  assert.equal(generic.length, 330);
  assert.equal(new Set(FLAGS.map((f) => f.name)).size, FLAGS.length, 'names are unique');
  for (const f of FLAGS) {
    assert.ok(['bool', 'int', 'float', 'enum', 'string'].includes(f.type), `${f.name} type`);
    assert.ok(f.doc.length > 10 && f.source.length > 0, `${f.name} has a meaning and a source`);
    if (f.type === 'enum') assert.ok(f.values && f.values.length > 0, `${f.name} enum values`);
  }
  const byName = new Map(FLAGS.map((f) => [f.name, f]));
  assert.deepEqual(byName.get('xla_gpu_shape_checks')?.values, ['IGNORE', 'RUNTIME', 'COMPILE_TIME']);
  assert.equal(byName.get('xla_backend_optimization_level')?.default, 3);
  assert.equal(byName.get('xla_tpu_enable_async_collective_fusion')?.scope, 'libtpu');
  assert.deepEqual(byName.get('xla_gpu_pipeline_all_gather')?.values, ['default', 'off', 'on', 'explicit'], 'spellings a hand-written XLA parser accepts');
  assert.equal(byName.get('xla_gpu_enable_cudnn_fmha')?.type, 'bool', 'a deprecated no-op flag keeps its type');
});

test('megascale, SparseCore and TPU flags from public docs and recipes: typed by the values seen, each with where', () => {
  const byName = new Map(FLAGS.map((f) => [f.name, f]));
  const expect: [string, string, RegExp][] = [
    ['megascale_grpc_premap_memory_bytes', 'int', /tpu-recipes@\w+ microbenchmarks\/trillium\/collectives/],
    ['megascale_graph_hang_threshold', 'string', /megascale_hang_playbook\.md/],
    ['megascale_grpc_use_chaotic_good', 'bool', /Llama3\.1-405B-PyTorch\/XPK\/train\.sh/],
    ['xla_sc_detect_nan', 'bool', /openxla\/xla@\w+ docs\/sparsecore\.md/],
    ['xla_sc_num_serialized_tables_to_optimize_hbm', 'int', /docs\/errors\/error_1000\.md/],
    ['xla_tpu_rematerialization_block_effort_factor', 'float', /docs\/errors\/error_1000\.md/],
    ['xla_mosaic_dump_to', 'string', /docs\/hlo_dumps\.md/],
  ];
  for (const [name, type, where] of expect) {
    const f = byName.get(name);
    assert.ok(f, `${name} is in the catalog`);
    assert.deepEqual([f.type, f.scope, f.platform], [type, 'libtpu', 'tpu'], name);
    assert.match(f.source, where, `${name}: where it was seen`);
  }
  for (const f of FLAGS.filter((x) => x.scope === 'libtpu')) {
    for (const v of f.seen ?? []) assert.equal(checkValue(f, v), undefined, `${f.name}: the value seen in public (${v}) is valid for its type`);
  }
});

test('a megascale flag in a recipe: checked, and refused in XLA_FLAGS', async () => {
  const uri = 'file:///w/recipes/ms.sh';
  const ok = flagDiags(await c.openAndDiagnose(uri, "export LIBTPU_INIT_ARGS='--megascale_grpc_premap_memory_bytes=17179869184 --xla_sc_detect_nan=true'\n"));
  assert.deepEqual(ok, []);
  const bad = flagDiags(await c.openAndDiagnose('file:///w/recipes/ms2.sh', "export LIBTPU_INIT_ARGS='--megascale_grpc_premap_memory_bytes=16GiB'\nexport XLA_FLAGS='--megascale_grpc_use_chaotic_good=true'\n"));
  assert.equal(bad.length, 2, JSON.stringify(bad));
  assert.match(bad[0].message, /16GiB.*an integer/);
  assert.match(bad[1].message, /libtpu flag/);
});

test('flag names complete inside LIBTPU_INIT_ARGS, prefix matches first, with a replace range over the typed word', async () => {
  const items = await c.completeAt('file:///w/recipes/a.sh', "export LIBTPU_INIT_ARGS='--xla_tpu_enable_async_coll|'\npython3 -m tpu_trainer.train\n");
  const names = labels(items);
  assert.equal(names[0], '--xla_tpu_enable_async_collective_fusion');
  assert.ok(names.includes('--xla_tpu_enable_async_collective_fusion_fuse_all_gather'));
  const edit = items[0].textEdit as TextEdit;
  assert.equal(edit.newText, '--xla_tpu_enable_async_collective_fusion=true', 'booleans insert =true');
  assert.deepEqual(edit.range, { start: { line: 0, character: 25 }, end: { line: 0, character: 52 } });
});

test('fuzzy: word starts in any order of typing find the flag', async () => {
  const names = labels(await c.completeAt('file:///w/recipes/f.sh', 'export LIBTPU_INIT_ARGS="--xla_tpu_scovmem|"\n'));
  assert.equal(names[0], '--xla_tpu_scoped_vmem_limit_kib');
  const vmem = labels(await c.completeAt('file:///w/recipes/f.sh', 'export LIBTPU_INIT_ARGS="--scoped_vmem|"\n'));
  assert.ok(vmem.includes('--xla_tpu_scoped_vmem_limit_kib'), vmem.slice(0, 5).join(' '));
});

test('values complete by type: booleans, tri-states, enums from xla.proto', async () => {
  const b = labels(await c.completeAt('file:///w/recipes/v.sh', "export LIBTPU_INIT_ARGS='--xla_tpu_enable_flash_attention=|'\n"));
  assert.deepEqual(b, ['true', 'false']);
  const t = labels(await c.completeAt('file:///w/recipes/v.sh', "export LIBTPU_INIT_ARGS='--xla_enable_async_all_gather=|'\n"));
  for (const v of ['true', 'ENABLED', 'AUTO', 'kEnabled', 'kAuto']) assert.ok(t.includes(v), v);
  const e = labels(await c.completeAt('file:///w/recipes/v.sh', 'export XLA_FLAGS="--xla_gpu_shape_checks=R|"\n'));
  assert.deepEqual(e, ['IGNORE', 'RUNTIME', 'COMPILE_TIME']);
});

test('no flag completion outside a flags variable or in a `$XLA_FLAGS` expansion', async () => {
  assert.deepEqual(await c.completeAt('file:///w/recipes/b.sh', 'export OTHER=--xla|\n'), []);
  assert.deepEqual(await c.completeAt('file:///w/recipes/b.sh', 'echo $XLA_FLAGS --xla|\n'), []);
});

test('completion in YAML envs:, .env files and settings JSON', async () => {
  const yaml = labels(await c.completeAt('file:///w/task.yaml', 'envs:\n  LIBTPU_INIT_ARGS: "--xla_tpu_enable_flash|"\nrun: echo\n', 'yaml'));
  assert.equal(yaml[0], '--xla_tpu_enable_flash_attention');
  const env = labels(await c.completeAt('file:///w/.env', 'XLA_FLAGS=--xla_dump_t|\n', 'dotenv'));
  assert.equal(env[0], '--xla_dump_to');
  const json = labels(await c.completeAt('file:///w/.vscode/settings.json', '{ "env": { "LIBTPU_INIT_ARGS": "--xla_tpu_overlap|" } }', 'json'));
  assert.equal(json[0], '--xla_tpu_overlap_compute_collective_tc');
});

test('hover shows type, default, values and source', async () => {
  const uri = 'file:///w/recipes/h.sh';
  const pos = await c.openMarked(uri, "export XLA_FLAGS='--xla_backend_opt|imization_level=0'\n");
  const h = await c.hover(uri, pos);
  const md = (h?.contents as MarkupContent).value;
  assert.match(md, /\*\*--xla_backend_optimization_level\*\* · int/);
  assert.match(md, /default: `3`/);
  assert.match(md, /debug_options_flags\.cc/);
});

test('diagnostics: unknown flag with did-you-mean, and a quick fix that corrects it', async () => {
  const uri = 'file:///w/recipes/typo.sh';
  const d = flagDiags(await c.openAndDiagnose(uri, "export LIBTPU_INIT_ARGS='--xla_tpu_enable_async_colective_fusion=true --xla_tpu_scoped_vmem_limit_kib=98304'\n"));
  assert.equal(d.length, 1, JSON.stringify(d));
  assert.equal(d[0].code, 'unknown-flag');
  assert.equal(d[0].severity, 2, 'a warning: libtpu has private flags');
  assert.match(d[0].message, /Did you mean --xla_tpu_enable_async_collective_fusion\?/);
  assert.deepEqual(d[0].range, { start: { line: 0, character: 27 }, end: { line: 0, character: 64 } });
  const actions = await c.codeActions(uri, d);
  assert.equal(actions[0].title, 'Change to --xla_tpu_enable_async_collective_fusion');
  assert.equal(actions[0].isPreferred, true);
  const edit = actions[0].edit!.changes![uri][0];
  assert.equal(edit.newText, 'xla_tpu_enable_async_collective_fusion');
  assert.deepEqual(edit.range, d[0].range);
});

test('diagnostics: bad values for the type, and every public tri-state spelling is accepted', async () => {
  const uri = 'file:///w/recipes/values.sh';
  const d = flagDiags(
    await c.openAndDiagnose(
      uri,
      [
        "export LIBTPU_INIT_ARGS='--xla_tpu_scoped_vmem_limit_kib=lots --xla_tpu_enable_flash_attention=maybe",
        ' --xla_enable_async_all_gather=kAuto --xla_lhs_prioritize_async_depth_over_stall=ENABLED',
        ' --xla_should_add_loop_invariant_op_in_chain=kDisabled --xla_tpu_aggressive_opt_barrier_removal=true',
        " --xla_tpu_use_tc_device_shape_on_sc=True --xla_enable_async_collective_permute=AUTO --xla_sc_disjoint_spmem=0'",
        'export XLA_FLAGS="--xla_gpu_shape_checks=SOMETIMES --xla_backend_optimization_level=1.5 --xla_dump_to"',
        '',
      ].join('\n'),
    ),
  );
  const msgs = d.map((x) => `${x.range.start.line}:${x.code}:${x.message}`);
  assert.deepEqual(
    msgs.map((m) => m.split(':').slice(0, 2).join(':')),
    ['0:bad-value', '0:bad-value', '4:bad-value', '4:bad-value', '4:bad-value'],
    msgs.join('\n'),
  );
  assert.match(msgs[0], /"lots" is not a valid value .* expected an integer/);
  assert.match(msgs[2], /one of IGNORE, RUNTIME, COMPILE_TIME/);
  assert.match(msgs[4], /--xla_dump_to needs a value/);
});

test('diagnostics: a flag given twice with different values, and misplaced flags', async () => {
  const uri = 'file:///w/recipes/dup.sh';
  const d = flagDiags(
    await c.openAndDiagnose(
      uri,
      [
        "export LIBTPU_INIT_ARGS='--xla_tpu_scoped_vmem_limit_kib=98304 --xla_tpu_enable_flash_attention=true",
        "  --xla_tpu_scoped_vmem_limit_kib=81920 --xla_tpu_enable_flash_attention=1 --xla_gpu_enable_triton_gemm=false'",
        'export XLA_FLAGS="--xla_tpu_enable_async_collective_fusion=true"',
      ].join('\n'),
    ),
  );
  const byCode = (code: string) => d.filter((x) => x.code === code);
  assert.equal(byCode('duplicate-flag').length, 1, 'true and 1 are the same value; 98304 vs 81920 is not');
  assert.match(byCode('duplicate-flag')[0].message, /given twice with different values \(98304 on line 1, then 81920\)/);
  assert.equal(byCode('duplicate-flag')[0].relatedInformation?.[0].location.range.start.line, 0);
  const misplaced = byCode('misplaced-flag');
  assert.equal(misplaced.length, 2);
  assert.equal(misplaced[0].severity, 2, 'a GPU flag in LIBTPU_INIT_ARGS does nothing: warning');
  assert.equal(misplaced[1].severity, 1, 'a libtpu flag in XLA_FLAGS kills XLA at start-up: error');
  assert.match(misplaced[1].message, /Put it in LIBTPU_INIT_ARGS/);
});

test('torchprime\'s published recipes and the sample recipe give no diagnostics at all', async () => {
  const seedFile = path.join(__dirname, 'fixtures', 'torchprime-recipes.sh');
  const seed = fs.readFileSync(seedFile, 'utf8');
  assert.ok((seed.match(/--xla_\w+=/g) ?? []).length > 80, 'the fixture really has flag strings to check');
  assert.deepEqual(await c.openAndDiagnose('file:///w/seeds/torchprime-recipes.sh', seed), []);
  const recipe = path.join(__dirname, '..', '..', 'recipes', 'tiny-llama.sh');
  assert.deepEqual(await c.openAndDiagnose(`file://${recipe}`, fs.readFileSync(recipe, 'utf8')), []);
});

test('diagnostics follow incremental edits', async () => {
  const uri = 'file:///w/recipes/inc.sh';
  assert.equal(flagDiags(await c.openAndDiagnose(uri, "export LIBTPU_INIT_ARGS='--xla_tpu_enable_flash_attention=true'\n")).length, 0);
  await c.edit(uri, { start: { line: 0, character: 60 }, end: { line: 0, character: 64 } }, 'yes please');
  const d = flagDiags(await c.diagnostics(uri));
  assert.equal(d.length, 1);
  assert.equal(d[0].code, 'bad-value');
});

test('YAML block scalars and .env files are checked too', async () => {
  const d = flagDiags(await c.openAndDiagnose('file:///w/task2.yaml', 'envs:\n  LIBTPU_INIT_ARGS: >-\n    --xla_tpu_enable_flash_attention=true\n    --xla_tpu_enable_flash_atention=false\nrun: echo hi\n', 'yaml'));
  assert.equal(d.length, 1);
  assert.equal(d[0].range.start.line, 3);
  assert.match(d[0].message, /Did you mean --xla_tpu_enable_flash_attention\?/);
  const env = flagDiags(await c.openAndDiagnose('file:///w/.env', 'XLA_FLAGS=--xla_dump_to=/tmp/d --xla_dump_hlo_as_text=maybe # dump\nOTHER=--xla_nothing\n', 'dotenv'));
  assert.deepEqual(env.map((x) => `${x.code}:${x.range.start.character}`), ['bad-value:54'], 'the second flag of an unquoted .env value is read; the comment is not');
  const inline = flagDiags(await c.openAndDiagnose('file:///w/recipes/inline.sh', 'XLA_FLAGS=--xla_dump_to=/tmp/d python3 x.py --xla_not_a_flag=1\n'));
  assert.deepEqual(inline, [], 'an inline assignment ends where the command starts');
});
