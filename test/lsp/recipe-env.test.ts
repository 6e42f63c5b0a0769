/**
 * The variables a recipe may export for TorchTPU, over JSON-RPC: names complete after `export `, values after
 * `=`, hover says what each does, a TORCH_TPU_* name torch_tpu does not read is flagged with the nearest one, and a
 * device=tpu recipe without tcmalloc preloaded gets TorchTPU's own hint. The names are checked against the real
 * torch_tpu wheel by test/trainer/test_launch_oracle.py.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';
import type { MarkupContent } from 'vscode-languageserver-protocol';
import { labels, LspClient } from './harness';
import { INIT, makeWorkspace } from './fixture';

let root: string;
let c: LspClient;
let n = 0;
const recipe = () => pathToFileURL(path.join(root, 'recipes', `r${n++}.sh`)).toString();

before(async () => {
  root = makeWorkspace();
  c = await LspClient.start(root, INIT);
});
after(async () => {
  await c.stop();
  fs.rmSync(root, { recursive: true, force: true });
});

test('TORCH_TPU_ names complete after export, values after =', async () => {
  const names = labels(await c.completeAt(recipe(), '#!/usr/bin/env bash\nexport TORCH_TPU_|\n'));
  for (const v of ['TORCH_TPU_TOPOLOGY', 'TORCH_TPU_SLICEBUILDER_ADDRESSES', 'TORCH_TPU_XPROF_SESSION_ID', 'TORCH_TPU_BASE_PORT']) {
    assert.ok(names.includes(v), names.join(', '));
  }
  assert.ok(names.every((v) => v.startsWith('TORCH_TPU_')), names.join(', '));
  assert.ok(labels(await c.completeAt(recipe(), 'export LD_|\n')).includes('LD_PRELOAD'));
  assert.deepEqual(labels(await c.completeAt(recipe(), 'export LD_PRELOAD=|\n')), ['/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4']);
  assert.ok(labels(await c.completeAt(recipe(), 'export TORCH_TPU_TOPOLOGY=|\n')).includes('2,2,1,2'));
});

test('hover says what a variable does', async () => {
  const uri = recipe();
  await c.open(uri, 'export TORCH_TPU_BASE_PORT=9000\npython3 -m tpu_trainer.train device=tpu\n');
  const h = await c.hover(uri, { line: 0, character: 12 });
  assert.match((h?.contents as MarkupContent).value, /TORCH_TPU_BASE_PORT[\s\S]*8070/);
});

test('an unknown TORCH_TPU_ name is a warning naming the nearest one; device=tpu without tcmalloc gets the hint', async () => {
  const text = 'export TORCH_TPU_TOPOLGY=2,2,1\npython3 -m tpu_trainer.train \\\n    device=tpu \\\n    max_steps=5\n';
  const diags = await c.openAndDiagnose(recipe(), text);
  const typo = diags.find((d) => d.message.includes('TORCH_TPU_TOPOLGY'));
  assert.ok(typo, JSON.stringify(diags));
  assert.match(typo.message, /did you mean TORCH_TPU_TOPOLOGY\?/);
  assert.deepEqual(typo.range.start, { line: 0, character: 7 });
  const hint = diags.find((d) => d.message.includes('tcmalloc'));
  assert.ok(hint && hint.range.start.line === 2, JSON.stringify(diags));
  const fixed = await c.openAndDiagnose(recipe(), `export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4\n${text}`);
  assert.ok(!fixed.some((d) => d.message.includes('tcmalloc')), JSON.stringify(fixed));
});
