import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { isTpwError } from '../../extension/src/core/errors';
import { parseRecipe, readRecipe, recipeArgv, runsTpuTrainer } from '../../extension/src/core/recipes/recipe';

const SEED_STYLE = `#!/usr/bin/env bash
# Llama 3.0 8B on v6e-256
set -euo pipefail
export HF_TOKEN_NAME=hf
export LIBTPU_INIT_ARGS='--xla_tpu_scoped_vmem_limit_kib=98304 --xla_tpu_enable_async_collective_fusion=true'
export XLA_FLAGS="--xla_dump_to=$HOME/dump"   # expands on the worker
export A=1 B="two words"

tp run torchprime/torch_xla_models/train.py \\
    model=llama-3-8b \\
    global_batch_size=1024 \\
    ici_mesh.fsdp=256 \\
    model/remat=llama-scan \\
    +extra.key=x \\
    ~dropped
`;

test('parses a seed-style recipe into env, program and overrides', () => {
  const r = parseRecipe(SEED_STYLE, 'llama.sh');
  assert.deepEqual(
    r.env.map((e) => [e.name, e.value]),
    [
      ['HF_TOKEN_NAME', 'hf'],
      ['LIBTPU_INIT_ARGS', '--xla_tpu_scoped_vmem_limit_kib=98304 --xla_tpu_enable_async_collective_fusion=true'],
      ['XLA_FLAGS', '--xla_dump_to=$HOME/dump'],
      ['A', '1'],
      ['B', 'two words'],
    ],
  );
  assert.equal(r.env[2].expands, true);
  assert.equal(r.env[1].expands, false, 'single quotes never expand');
  assert.deepEqual(r.program, ['python3', 'torchprime/torch_xla_models/train.py']);
  assert.deepEqual(r.overrides, ['model=llama-3-8b', 'global_batch_size=1024', 'ici_mesh.fsdp=256', 'model/remat=llama-scan', '+extra.key=x', '~dropped']);
  assert.equal(r.commandLine, 9);
});

test('python -m entry points and extra overrides', () => {
  const r = parseRecipe('export PJRT_DEVICE=CPU\npython3 -u -m tpu_trainer.train model=tiny-llama max_steps=5\n');
  assert.deepEqual(r.program, ['python3', '-u', '-m', 'tpu_trainer.train']);
  assert.ok(runsTpuTrainer(r));
  assert.deepEqual(recipeArgv(r, ['max_steps=7']), ['python3', '-u', '-m', 'tpu_trainer.train', 'model=tiny-llama', 'max_steps=5', 'max_steps=7']);
});

test('cd sets the run directory but may not leave the workspace', () => {
  assert.equal(parseRecipe('cd trainer\npython3 train.py a=1').cwd, 'trainer');
  assert.throws(() => parseRecipe('cd ../etc\npython3 train.py'), /leaves the workspace/);
  assert.throws(() => parseRecipe('cd /etc\npython3 train.py'), /leaves the workspace/);
});

const BAD: [string, RegExp][] = [
  ["export X='unterminated\npython3 t.py", /bad\.sh:1: unterminated single quote/],
  ['python3 t.py a=1\npython3 t.py b=2', /bad\.sh:2: only one command/],
  ['python3 t.py a=$(whoami)', /bad\.sh:1: command substitution/],
  ['python3 t.py | tee log', /bad\.sh:1: shell operator '\|'/],
  ['export 1X=2\npython3 t.py', /bad\.sh:1: "1X=2" is not NAME=value/],
  ['export\npython3 t.py', /bad\.sh:1: `export` needs NAME=value/],
  ['# only comments\n\n', /bad\.sh: no command found/],
  ['python3 t.py a=1 --flag', /bad\.sh:1: "--flag" is not a hydra override/],
  ['python3 t.py lr=$LR', /expands a variable in the command/],
];
for (const [text, expected] of BAD) {
  test(`malformed recipe is rejected with its line: ${JSON.stringify(text).slice(0, 40)}`, () => {
    assert.throws(
      () => parseRecipe(text, '/some/dir/bad.sh'),
      (e: unknown) => isTpwError(e, 'RECIPE') && expected.test((e as Error).message),
    );
  });
}

test('a missing recipe file is NOT_FOUND naming the path', () => {
  const missing = path.join(os.tmpdir(), 'no-such-dir-tpw', 'nope.sh');
  assert.throws(() => readRecipe(missing), (e: unknown) => isTpwError(e, 'NOT_FOUND') && (e as Error).message.includes(missing));
});

test('the sample recipe in the repo parses and runs the trainer', () => {
  const file = path.join(__dirname, '..', '..', 'recipes', 'tiny-llama.sh');
  assert.ok(fs.existsSync(file), 'recipes/tiny-llama.sh exists');
  const r = readRecipe(file);
  assert.ok(runsTpuTrainer(r), `program is the trainer: ${r.program.join(' ')}`);
  assert.ok(r.overrides.some((o) => o.startsWith("model=")));
  assert.ok(!r.overrides.some((o) => o.includes("$")), "the \"$@\" placeholder is not an override");
});
