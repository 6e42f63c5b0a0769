/**
 * A recipe in a workspace with no trainer of its own (a new project: recipes only) is still checked, against the
 * trainer schema shipped with the extension, and the server says so once (`tpuWorkbench/hydraModel`, which the
 * extension shows in the status bar). And one line number for one mistake: the editor's Problem, the `tpu`
 * task's Problem (the real trainer's message, located by core/run/problem-lines.ts) and `tpw run`'s own check
 * (core/recipes/recipe.ts) all name the line the override is on, not the command's first line.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';
import { parseRecipe } from '../../extension/src/core/recipes/recipe';
import { locateTrainerLine } from '../../extension/src/core/run/problem-lines';
import { LspClient, repoRoot } from './harness';

const VENV = process.env.TPW_VENV ?? path.join(os.homedir(), '.cache', 'tpu-workbench', 'venv');

/** The command's first line is 5; the misspelt override is on line 8. */
const RECIPE = `#!/usr/bin/env bash
export PJRT_DEVICE=CPU
export OMP_NUM_THREADS=1

python3 -m tpu_trainer.train \\
    model=tiny-llama \\
    max_steps=20 \\
    optimizer.lrr=1e-2 \\
    num_threads=1
`;

let root: string;
let c: LspClient;

before(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-lsp-no-trainer-'));
  fs.mkdirSync(path.join(root, 'recipes'));
  c = await LspClient.start(root);
});
after(async () => {
  await c.stop();
  fs.rmSync(root, { recursive: true, force: true });
});

test('a workspace without trainer/ is checked against the shipped schema, and the server says which', async () => {
  const diags = await c.openAndDiagnose(pathToFileURL(path.join(root, 'recipes', 'broken.sh')).toString(), RECIPE);
  const typo = diags.find((d) => /optimizer\.lrr/.test(d.message));
  assert.ok(typo, `a diagnostic on the misspelt key: ${JSON.stringify(diags)}`);
  assert.match(typo.message, /optimizer\.lr\b/, 'with the key it meant');
  assert.equal(typo.range.start.line + 1, 8, 'on the line the override is on');
  assert.deepEqual(c.hydraModels.map((m) => m.source), ['shipped'], 'said once: the shipped schema stands in');
  assert.equal(c.hydraModels[0].origin, 'schema');
});

test("the run's own check and the task's Problem name the same line as the editor", () => {
  const recipe = parseRecipe(RECIPE, path.join(root, 'recipes', 'broken.sh'));
  assert.equal(recipe.commandLine, 5);
  assert.deepEqual(recipe.overrideLines, [6, 7, 8, 9]);
  // The real trainer's message for it (its own check, before hydra starts).
  const message = execFileSync(path.join(VENV, 'bin', 'python3'), ['-c', 'import sys; from tpu_trainer.overrides import check_overrides; print(check_overrides(sys.argv[1:]))', ...recipe.overrides], {
    encoding: 'utf8',
    env: { ...process.env, PYTHONPATH: path.join(repoRoot, 'trainer') },
  }).trim();
  assert.match(message, /^error: unknown config key 'optimizer\.lrr' in override 'optimizer\.lrr=1e-2'/);
  const located = locateTrainerLine(`[w0] ${message}`, { ...recipe, path: 'recipes/broken.sh' });
  assert.match(located, /^recipes\/broken\.sh:8: \[w0\] error: unknown config key/);
  // A word that is no override at all: `tpw run` refuses the recipe, naming its line.
  assert.throws(() => parseRecipe(RECIPE.replace('max_steps=20', "'not an override'"), 'broken.sh'), /broken\.sh:7: "not an override" is not a hydra override/);
});
