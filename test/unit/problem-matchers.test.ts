/**
 * The `tpu` task's problem matchers, exactly as package.json declares them, over real `tpw run` output of the
 * real trainer on an emulated worker (test/fixtures/trainer-output/, made by make-fixtures.sh there; the first
 * line of each file is its command). A traceback's frame in the synced workspace (~/.tpw/workspaces/<name>/)
 * becomes a Problem at the LOCAL file and line.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { readRecipe } from '../../extension/src/core/recipes/recipe';
import { locateTrainerLine } from '../../extension/src/core/run/problem-lines';
import { matchProblems, type ProblemMatcherContribution } from '../../extension/src/core/run/problem-match';

const ROOT = path.resolve(__dirname, '../..');
const FIXTURES = path.join(ROOT, 'test/fixtures/trainer-output');
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  contributes: { problemMatchers: ProblemMatcherContribution[]; taskDefinitions: { type: string; required: string[]; properties?: Record<string, unknown> }[] };
};
const matchers = pkg.contributes.problemMatchers;
const WS = '/home/me/my-project';

function fixture(name: string): string[] {
  return fs.readFileSync(path.join(FIXTURES, name), 'utf8').split('\n');
}

test('a NameError in the trainer (caret line under the name) is one Problem at the local train.py and line', () => {
  const problems = matchProblems(fixture('traceback.txt'), matchers, WS);
  assert.deepEqual(problems, [
    {
      matcher: 'tpu-python-traceback',
      file: `${WS}/trainer/tpu_trainer/train.py`,
      line: 290,
      message: "NameError: name 'lr_scale' is not defined",
      severity: 'error',
    },
  ]);
});

test('a raise statement (no caret line) is matched by the plain traceback matcher', () => {
  const problems = matchProblems(fixture('traceback-raise.txt'), matchers, WS);
  assert.equal(problems.length, 1, JSON.stringify(problems));
  assert.equal(problems[0].matcher, 'tpu-python-traceback-plain');
  assert.equal(problems[0].file, `${WS}/trainer/tpu_trainer/train.py`);
  assert.equal(problems[0].line, 290);
  assert.equal(problems[0].message, 'RuntimeError: lr_scale is not set for this optimizer');
});

test('runs without a Python traceback yield no traceback Problem (a hydra override error, a diverged loss)', () => {
  for (const name of ['hydra-override-error.txt', 'diverged.txt']) {
    const lines = fixture(name);
    assert.ok(lines.some((l) => l.startsWith('[w0] ')), `${name} holds the trainer's output`);
    assert.deepEqual(matchProblems(lines, matchers, WS), [], name);
  }
});

/** The fixture's lines as the `tpu` task writes them: failures that name no file get the recipe's command location. */
function asTaskWritesIt(name: string, recipe: string): string[] {
  const r = readRecipe(path.join(FIXTURES, recipe));
  return fixture(name).map((l) => locateTrainerLine(l, { path: `recipes/${recipe}`, commandLine: r.commandLine }));
}

test("failures that name no file are Problems on the recipe's trainer command: unknown override, non-finite loss, XLA OOM", () => {
  const tiny = readRecipe(path.join(FIXTURES, 'tiny.sh')).commandLine;
  const oom = readRecipe(path.join(FIXTURES, 'oom.sh')).commandLine;
  const at = (name: string, recipe: string) => matchProblems(asTaskWritesIt(name, recipe), matchers, WS).map((p) => [p.matcher, path.relative(WS, p.file), p.line, p.message]);
  assert.deepEqual(at('hydra-override-error.txt', 'tiny.sh'), [
    ['tpu-hydra-override', 'recipes/tiny.sh', tiny, "error: unknown config key 'optimizer.lrr' in override 'optimizer.lrr=0.1'; did you mean 'optimizer.lr'? (python -m tpu_trainer.train --help lists the keys)"],
  ]);
  assert.deepEqual(at('diverged.txt', 'tiny.sh'), [['tpu-diverged', 'recipes/tiny.sh', tiny, 'loss is not finite at step 3; stopping']]);
  const ooms = at('xla-oom.txt', 'oom.sh');
  assert.equal(ooms.length, 1, JSON.stringify(ooms));
  assert.deepEqual(ooms[0].slice(0, 3), ['tpu-xla-oom', 'recipes/oom.sh', oom]);
  assert.match(String(ooms[0][3]), /^RuntimeError: Out of memory allocating 2199023255552 bytes\.$/, 'the size XLA reports (2 TiB asked for)');
  // The summary's quoted tail ("  [w0] …") is not matched a second time.
  assert.ok(fixture('hydra-override-error.txt').some((l) => l.startsWith('  [w0] error: unknown config key')));
});

test("a host sync in the step (a user's .item()) is a warning at its local line, from torch_xla's own compile analysis", () => {
  const lines = fixture('host-sync.txt');
  const problems = matchProblems(lines, matchers, WS);
  // The trainer's own syncs are compiled too, but triggered from torch_xla's sync(): not the user's line.
  assert.ok(lines.filter((l) => l.endsWith('Compilation Analysis:   user torch_xla.sync')).length >= 2);
  assert.deepEqual(problems, [
    {
      matcher: 'tpu-xla-compile-cause',
      file: `${WS}/trainer/tpu_trainer/train.py`,
      line: 295,
      message: 'most likely user code trying to access tensor value before torch_xla.sync',
      severity: 'warning',
    },
  ]);
});

test('the tpu task definition requires a recipe (the VM is asked for when left out), and its matchers all exist', () => {
  const def = pkg.contributes.taskDefinitions.find((d) => d.type === 'tpu');
  assert.ok(def);
  assert.deepEqual(def.required, ['recipe']);
  assert.ok(def.properties?.vm, 'a task may still name its VM');
  const tasks = fs.readFileSync(path.join(ROOT, 'extension/src/vscode/tasks.ts'), 'utf8');
  const used = /TPU_PROBLEM_MATCHERS = \[([^\]]*)\]/.exec(tasks)?.[1].match(/\$[\w-]+/g) ?? [];
  assert.ok(used.length > 0);
  for (const u of used) assert.ok(matchers.some((m) => `$${m.name}` === u), `${u} is declared in package.json`);
});
