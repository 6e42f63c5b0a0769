/**
 * Flags XLA no longer takes, known as such (issue 33): `src/flags/xla-removed.json`, generated from openxla/xla's
 * history up to the catalog's pin by language-server/scripts/gen-xla-removed.mjs, says which commit removed each
 * one and what to use instead; DebugOptions fields that were never flags (--xla_detailed_logging) are named so.
 * The editor says it over JSON-RPC, as an error in XLA_FLAGS (XLA's parser stops the program on a name it does not
 * take: torch_xla 2.9 dies with "Unknown flag in XLA_FLAGS: --xla_detailed_logging=false").
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Diagnostic, MarkupContent } from 'vscode-languageserver-protocol';
import { FLAG_BY_NAME, GONE_FLAGS } from '../../language-server/src/flags/catalog';
import removed from '../../language-server/src/flags/xla-removed.json';
import pin from '../../language-server/scripts/xla-source.json';
import { LspClient } from './harness';

let c: LspClient;
before(async () => {
  c = await LspClient.start(null);
});
after(async () => {
  await c.stop();
});

const flagDiags = (ds: Diagnostic[]) => ds.filter((d) => ['removed-flag', 'not-a-flag', 'unknown-flag'].includes(String(d.code)));

test('the history: each removed flag names the commit, at or before the pin, and a replacement the catalog has', () => {
  assert.equal(removed.pin, pin.commit, 'generated against the pinned revision');
  assert.ok(GONE_FLAGS.size >= 150, `${GONE_FLAGS.size} names`);
  for (const g of GONE_FLAGS.values()) {
    assert.match(g.commit, /^[0-9a-f]{12}$/, g.name);
    assert.ok(g.date <= pin.date.slice(0, 10), `${g.name}: ${g.date}`);
    assert.equal(FLAG_BY_NAME.has(g.name), false, `${g.name} is in the catalog and gone at once`);
    if (g.replacement) assert.ok(FLAG_BY_NAME.has(g.replacement), `${g.name} -> ${g.replacement} is not in the catalog`);
  }
  // The three in the issue, as XLA's history has them.
  assert.deepEqual([GONE_FLAGS.get('xla_gpu_graph_level')?.commit, GONE_FLAGS.get('xla_gpu_graph_level')?.replacement], ['add6972510a4', 'xla_gpu_enable_command_buffer']);
  for (const name of ['xla_detailed_logging', 'xla_enable_dumping']) assert.deepEqual([GONE_FLAGS.get(name)?.kind, GONE_FLAGS.get(name)?.commit], ['field', 'b25f0c717da8']);
  // A rename followed through later renames: cuda_graph_level -> graph_level -> the command-buffer list.
  assert.equal(GONE_FLAGS.get('xla_gpu_enable_cuda_graphs')?.replacement, 'xla_gpu_enable_command_buffer');
});

test('in XLA_FLAGS a removed flag is an error naming the revision and what to use; in LIBTPU_INIT_ARGS a warning', async () => {
  const uri = 'file:///w/recipes/old-gpu.sh';
  const d = flagDiags(
    await c.openAndDiagnose(uri, 'export XLA_FLAGS="--xla_gpu_graph_level=0 --xla_detailed_logging=false --xla_enable_dumping=false"\nexport LIBTPU_INIT_ARGS="--xla_gpu_enable_async_all_reduce=true"\n'),
  );
  assert.deepEqual(d.map((x) => [x.code, x.severity, x.range.start.line]), [
    ['removed-flag', 1, 0],
    ['not-a-flag', 1, 0],
    ['not-a-flag', 1, 0],
    ['removed-flag', 2, 1],
  ]);
  assert.match(d[0].message, /^--xla_gpu_graph_level was removed from XLA in openxla\/xla@add6972510a4 \(2025-09-12\); use --xla_gpu_enable_command_buffer \(graph_level=0 is an empty list/);
  assert.match(d[0].message, /XLA_FLAGS stops the program at start-up on it\.$/);
  assert.match(d[1].message, /^--xla_detailed_logging is not a flag: it is a DebugOptions field \(xla\.proto, number 252, as of openxla\/xla@b25f0c717da8 \(2023-10-03\)\)/);
  assert.match(d[3].message, /^--xla_gpu_enable_async_all_reduce was removed from XLA in openxla\/xla@4298a065f7b8 \(2024-04-29\); use --xla_gpu_disable_async_collectives\./);
  assert.doesNotMatch(d[3].message, /stops the program/);
});

test('a renamed flag gets a quick fix to its new name; one whose value changes meaning does not', async () => {
  const uri = 'file:///w/recipes/rename.sh';
  const d = flagDiags(await c.openAndDiagnose(uri, 'export XLA_FLAGS="--xla_gpu_enable_address_computation_fusion=false --xla_gpu_disable_autotune=true"\n'));
  assert.equal(d.length, 2);
  const fixes = await c.codeActions(uri, [d[0]]);
  assert.equal(fixes[0]?.title, 'Change to --xla_gpu_enable_dynamic_slice_fusion');
  assert.equal(fixes[0].edit!.changes![uri][0].newText, 'xla_gpu_enable_dynamic_slice_fusion');
  assert.deepEqual(await c.codeActions(uri, [d[1]]), [], 'disable_autotune=true is autotune_level=0: no name-only fix');
  assert.match(d[1].message, /use --xla_gpu_autotune_level \(--xla_gpu_disable_autotune=true is --xla_gpu_autotune_level=0\)/);
});

test('hover on a removed flag says when it went and what replaced it', async () => {
  const uri = 'file:///w/recipes/hover.sh';
  await c.open(uri, 'export XLA_FLAGS="--xla_gpu_graph_level=0"\n');
  const h = await c.hover(uri, { line: 0, character: 25 });
  assert.match((h?.contents as MarkupContent).value, /\*\*--xla_gpu_graph_level\*\* · not in XLA[\s\S]*openxla\/xla@add6972510a4/);
});
