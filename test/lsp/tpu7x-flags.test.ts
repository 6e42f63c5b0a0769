/**
 * TPU7x (Ironwood): the LIBTPU_INIT_ARGS strings of Google's public Ironwood training recipes
 * (fixtures/tpu7x-recipes.sh, copied from AI-Hypercomputer/tpu-recipes with the commit of each) give no
 * diagnostic, and the SparseCore flags only those recipes set complete and hover with where they were seen.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import type { MarkupContent, TextEdit } from 'vscode-languageserver-protocol';
import { FLAG_BY_NAME } from '../../language-server/src/flags/catalog';
import { labels, LspClient } from './harness';

let c: LspClient;
before(async () => {
  c = await LspClient.start();
});
after(async () => {
  assert.equal(await c.stop(), 0, 'the server exits cleanly on shutdown/exit');
});

const fixture = fs.readFileSync(path.join(__dirname, 'fixtures', 'tpu7x-recipes.sh'), 'utf8');

test("the TPU7x recipes' LIBTPU_INIT_ARGS give no diagnostics", async () => {
  const flags = new Set(fixture.match(/--\w+(?==)/g) ?? []);
  assert.ok(flags.size >= 50, `the fixture really has TPU7x flag strings to check (${flags.size} distinct)`);
  for (const f of flags) assert.ok(FLAG_BY_NAME.has(f.slice(2)), `${f} is in the catalog`);
  assert.deepEqual(await c.openAndDiagnose('file:///w/seeds/tpu7x-recipes.sh', fixture), []);
});

test('a TPU7x SparseCore flag completes with its value and hovers with the Ironwood recipe it came from', async () => {
  const items = await c.completeAt('file:///w/recipes/ironwood.sh', "export LIBTPU_INIT_ARGS='--xla_tpu_rerun_latency_hid|'\n");
  assert.equal(labels(items)[0], '--xla_tpu_rerun_latency_hiding_scheduler_post_sc_assignment');
  assert.equal((items[0].textEdit as TextEdit).newText, '--xla_tpu_rerun_latency_hiding_scheduler_post_sc_assignment=true');

  const uri = 'file:///w/recipes/ironwood-hover.sh';
  const pos = await c.openMarked(uri, "export LIBTPU_INIT_ARGS='--xla_tpu_enable_offloading_co|py_to_sparsecore=false'\n");
  const md = ((await c.hover(uri, pos))?.contents as MarkupContent).value;
  assert.match(md, /\*\*--xla_tpu_enable_offloading_copy_to_sparsecore\*\* · bool/);
  assert.match(md, /tpu-recipes@\w+ training\/ironwood\/gpt-oss-120b\/8k-bf16-tpu7x-4x8x8/);
});

test('a wrong value for a TPU7x flag is named, and it belongs in LIBTPU_INIT_ARGS, not XLA_FLAGS', async () => {
  const d = (await c.openAndDiagnose('file:///w/recipes/ironwood-bad.sh',
    "export LIBTPU_INIT_ARGS='--xla_tpu_enable_offloading_copy_to_sparsecore=maybe'\nexport XLA_FLAGS='--xla_tpu_rerun_latency_hiding_scheduler_post_sc_assignment=true'\n",
  )).filter((x) => x.source === 'tpu-workbench');
  assert.equal(d.length, 2, JSON.stringify(d));
  assert.match(d[0].message, /"maybe" is not a valid value for --xla_tpu_enable_offloading_copy_to_sparsecore/);
  assert.match(d[1].message, /libtpu flag/);
});
