/**
 * The "Run on TPU with Overrides…" input: a typed line of overrides is completed and checked by the same code
 * as overrides in recipes (service/override-line.ts), directly and through CompleteOverridesRequest
 * (`tpuWorkbench/completeOverrides`), the request the extension sends. `|` marks the cursor.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { after, before, test } from 'node:test';
import { loadHydraModel, type HydraModel } from '../../language-server/src/hydra/model';
import { CompleteOverridesRequest, type CompleteOverridesResult } from '../../protocol/language-server-requests';
import { completeOverrideLine } from '../../language-server/src/service/override-line';
import { INIT, makeWorkspace } from './fixture';
import { LspClient } from './harness';

let root: string;
let model: HydraModel;

before(() => {
  root = makeWorkspace();
  model = loadHydraModel({ root, ...INIT });
});
after(() => fs.rmSync(root, { recursive: true, force: true }));

/** Completes/validates `marked` (a line with a `|` cursor). */
function at(marked: string): CompleteOverridesResult {
  const cursor = marked.indexOf('|');
  assert.ok(cursor >= 0, 'no | cursor marker');
  return completeOverrideLine(model, marked.replace('|', ''), cursor);
}

test('the last key completes, and choosing it rewrites only that token', () => {
  const r = at('model=big max_st|');
  const ms = r.items.find((i) => i.label === 'max_steps');
  assert.ok(ms, r.items.map((i) => i.label).join(', '));
  assert.equal(ms.line, 'model=big max_steps=');
  assert.equal(ms.cursor, ms.line.length);
  assert.equal(ms.detail, 'integer ≥ 1');
  // Groups too, as in a recipe.
  assert.ok(at('|').items.some((i) => i.label === 'model/remat'));
});

test('group options, enum and bool values complete after =', () => {
  assert.deepEqual(at('model=|').items.map((i) => i.label).sort(), ['big', 'tiny']);
  assert.deepEqual(at('optimizer.name=a|').items.map((i) => i.line).sort(), ['optimizer.name=adamw', 'optimizer.name=sgd']);
  assert.ok(at('model.tie_word_embeddings=|').items.some((i) => i.label === 'true'));
});

test('a typo gets the recipe\'s did-you-mean message, on the whole token', () => {
  const r = at('model=big max_step=3|');
  assert.equal(r.problems.length, 1);
  const p = r.problems[0];
  assert.equal(p.severity, 'error');
  assert.match(p.message, /Unknown config key "max_step"\. Did you mean "max_steps"\?/);
  assert.deepEqual([p.token, p.start, p.end], ['max_step=3', 10, 20]);
  assert.match(at('model=bigg|').problems[0].message, /Did you mean "big"/);
  assert.match(at('max_steps=0|').problems[0].message, /max_steps/);
});

test('valid overrides pass, split like the shell would, quotes removed', () => {
  const r = at(`max_steps=50 model=big optimizer.lr=3e-4 output_dir='runs/a b'|`);
  assert.deepEqual(r.problems, []);
  assert.deepEqual(r.overrides, ['max_steps=50', 'model=big', 'optimizer.lr=3e-4', 'output_dir=runs/a b']);
  assert.equal(r.checked, true);
  assert.deepEqual(at('  |').overrides, []);
});

test('without a trainer config nothing is checked, and overrides still pass through', () => {
  const r = completeOverrideLine(loadHydraModel({ root: '/nonexistent-tpw' }), 'max_step=3', 10);
  assert.equal(r.checked, false);
  assert.deepEqual(r.problems, []);
  assert.deepEqual(r.overrides, ['max_step=3']);
});

test('the server answers tpuWorkbench/completeOverrides with the same result', async () => {
  const c = await LspClient.start(root, INIT);
  try {
    const line = 'model=big max_step=3';
    const got = await c.conn.sendRequest(CompleteOverridesRequest, { line, cursor: line.length });
    assert.deepEqual(got, completeOverrideLine(model, line, line.length));
    assert.match(got.problems[0].message, /Did you mean "max_steps"/);
    assert.deepEqual(c.errors, []);
  } finally {
    await c.stop();
  }
});
