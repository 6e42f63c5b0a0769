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
import { matchProblems, type ProblemMatcherContribution } from '../../extension/src/core/run/problem-match';

const ROOT = path.resolve(__dirname, '../..');
const FIXTURES = path.join(ROOT, 'test/fixtures/trainer-output');
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  contributes: { problemMatchers: ProblemMatcherContribution[]; taskDefinitions: { type: string; required: string[] }[] };
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

test('the tpu task definition requires a recipe and a VM, and its matchers all exist', () => {
  const def = pkg.contributes.taskDefinitions.find((d) => d.type === 'tpu');
  assert.ok(def);
  assert.deepEqual(def.required, ['recipe', 'vm']);
  const tasks = fs.readFileSync(path.join(ROOT, 'extension/src/vscode/tasks.ts'), 'utf8');
  const used = /TPU_PROBLEM_MATCHERS = \[([^\]]*)\]/.exec(tasks)?.[1].match(/\$[\w-]+/g) ?? [];
  assert.ok(used.length > 0);
  for (const u of used) assert.ok(matchers.some((m) => `$${m.name}` === u), `${u} is declared in package.json`);
});
