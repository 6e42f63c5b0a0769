/**
 * The trainer's cross-field rules in the language server (issue 33): read from the schema the trainer writes
 * (`x-rules`, from tpu_trainer/rules.py), run over the config a command line composes, with Python's semantics.
 * The corpus test (override-corpus.test.ts) holds the verdicts to the real trainer's; these pin what it cannot
 * show on its own: a rule added to the trainer reaches the editor without a change here, where a diagnostic
 * lands, silence where the value is not knowable, and Python's number printing in the messages.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { DiagnosticSeverity, type Diagnostic } from 'vscode-languageserver';
import { TextDocument } from 'vscode-languageserver-textdocument';
import { loadHydraModel, nodeAt, type HydraModel } from '../../language-server/src/hydra/model';
import { UNKNOWN, floatRepr, type Py } from '../../language-server/src/hydra/py-values';
import { parseRule, truth } from '../../language-server/src/hydra/rules';
import { overrideDiagnostics } from '../../language-server/src/service/overrides';

const repo = path.join(__dirname, '..', '..');
const schemaFile = path.join(repo, 'trainer', 'config.schema.json');
const PREFIX = 'python -m tpu_trainer.train ';

function errors(line: string, model: HydraModel): Diagnostic[] {
  const doc = TextDocument.create('file:///r.sh', 'shellscript', 1, `${PREFIX}${line}\n`);
  return overrideDiagnostics(model, doc).filter((d) => d.severity === DiagnosticSeverity.Error);
}

const trainer = loadHydraModel({ root: repo });

test('every rule of the trainer parses here, and reads only keys its schema has', () => {
  const schema = JSON.parse(fs.readFileSync(schemaFile, 'utf8')) as { 'x-rules': { checks: unknown[]; aliases: unknown[] } };
  assert.ok(trainer.rules, 'the schema has x-rules and every expression parses');
  assert.equal(trainer.rules.checks.length, schema['x-rules'].checks.length);
  assert.equal(trainer.rules.aliases.length, schema['x-rules'].aliases.length);
  assert.ok(trainer.rules.checks.length >= 20, `${trainer.rules.checks.length} checks`);
  for (const r of [...trainer.rules.checks, ...trainer.rules.aliases]) {
    for (const key of r.keys) assert.ok(nodeAt(trainer, key.split('.')), `a rule reads ${key}`);
  }
});

test("a rule added to the trainer's schema is enforced with no change to the server", () => {
  // What another engineer's new field and its rule look like once `python -m tpu_trainer.schema` has run.
  const schema = JSON.parse(fs.readFileSync(schemaFile, 'utf8')) as {
    properties: Record<string, unknown>;
    'x-rules': { checks: { check: string; message: string }[] };
  };
  schema.properties.warmup_fraction = { type: 'number', default: 0.1, minimum: 0 };
  schema['x-rules'].checks.push({ check: 'warmup_fraction * max_steps <= max_steps // 2', message: 'warmup_fraction={warmup_fraction} leaves under half of max_steps={max_steps}' });
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-rules-'));
  try {
    fs.writeFileSync(path.join(root, 'schema.json'), JSON.stringify(schema));
    const model = loadHydraModel({ root, schemaFile: 'schema.json', configDirs: [path.join(repo, 'trainer', 'tpu_trainer', 'configs')] });
    assert.deepEqual(errors('warmup_fraction=0.25', model), []);
    assert.deepEqual(
      errors('max_steps=10 warmup_fraction=0.75', model).map((d) => d.message),
      ['warmup_fraction=0.75 leaves under half of max_steps=10'],
    );
    // Without the rule in the schema the same line is clean: the server holds no copy of the rules.
    schema['x-rules'].checks.pop();
    fs.writeFileSync(path.join(root, 'schema.json'), JSON.stringify(schema));
    assert.deepEqual(errors('max_steps=10 warmup_fraction=0.75', loadHydraModel({ root, schemaFile: 'schema.json', configDirs: [path.join(repo, 'trainer', 'tpu_trainer', 'configs')] })), []);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test('the diagnostic lands on the override that set what the rule reads', () => {
  const line = 'seed=1 model.hidden_size=65 max_steps=3';
  const [d, ...rest] = errors(line, trainer);
  assert.deepEqual(rest, []);
  assert.equal(d.message, 'model.hidden_size=65 is not divisible by model.num_attention_heads=4');
  const start = PREFIX.length + line.indexOf('model.hidden_size');
  assert.deepEqual([d.range.start.character, d.range.end.character], [start, start + 'model.hidden_size=65'.length]);
  // A preset that brings the value in is the override named (dataset=file leaves data.path unset).
  const [p] = errors('seed=1 dataset=file', trainer);
  assert.equal(p.message, 'data.path must be set when data.name=file');
  assert.equal(p.range.start.character, PREFIX.length + 'seed=1 '.length);
});

test('a value the editor cannot know keeps it silent instead of guessing', () => {
  for (const line of [
    "'block_size=${oc.env:BLOCK_SIZE,4096}'",
    "-m 'model=glob(tiny*)' block_size=4096",
    'block_size=$BLOCK model.max_position_embeddings=64',
    '--cfg job model.hidden_size=65',
  ]) {
    assert.deepEqual(
      errors(line, trainer).filter((d) => d.code === 'config-rule'),
      [],
      line,
    );
  }
});

test("hydra's casts fail as Python's int() and float() do", () => {
  assert.deepEqual(errors("'max_steps=int(twenty)'", trainer).map((d) => d.message), ["hydra cannot evaluate int(twenty): invalid literal for int() with base 10: 'twenty'"]);
  assert.deepEqual(errors("'optimizer.lr=float(abc)'", trainer).map((d) => d.message), ["hydra cannot evaluate float(abc): could not convert string to float: 'abc'"]);
  assert.deepEqual(errors("'max_steps=int(2.5)'", trainer), []);
});

test('an escaped ${ is literal text after the one resolution, and must still fit its field', () => {
  assert.deepEqual(errors("'model.name=\\${nothing.here}'", trainer), []);
  assert.equal(errors("'block_size=\\${model.hidden_size}'", trainer).length, 1);
  // Two backslashes before ${ are one literal backslash and a live interpolation.
  assert.match(errors("\"model.name='\\\\\\\\\\${nothing.here}'\"", trainer)[0]?.message ?? '', /no key "nothing.here"/);
});

test("Python's repr of floats, as the trainer's messages print them", () => {
  // Expected strings from CPython 3.11's repr().
  const cases: [number, string][] = [
    [0, '0.0'], [1, '1.0'], [2.5, '2.5'], [100, '100.0'], [1e-5, '1e-05'], [0.0001, '0.0001'], [0.00012, '0.00012'],
    [1e16, '1e+16'], [1.5e16, '1.5e+16'], [123456789012345.6, '123456789012345.6'], [1234567890123456.8, '1234567890123456.8'],
    [3e-4, '0.0003'], [1e22, '1e+22'], [-2, '-2.0'], [Infinity, 'inf'], [NaN, 'nan'], [5e-324, '5e-324'],
    [1.7976931348623157e308, '1.7976931348623157e+308'], [0.30000000000000004, '0.30000000000000004'],
  ];
  for (const [x, py] of cases) assert.equal(floatRepr(x), py, String(x));
});

test("and/or decide as Python's do, even with an unknown operand", () => {
  const values: Record<string, Py> = { a: 0, b: 3, s: '', u: UNKNOWN };
  const get = (k: string) => values[k];
  assert.equal(truth(parseRule('a or b > 2'), get), true);
  assert.equal(truth(parseRule('u or b > 2'), get), true);
  assert.equal(truth(parseRule('u and a'), get), false);
  assert.equal(truth(parseRule('u and b'), get), undefined);
  assert.equal(truth(parseRule('not s and (b - 4) // 2 == -1'), get), true);
  assert.equal(truth(parseRule("b in (1, 2) or s == ''"), get), true);
  assert.equal(truth(parseRule('b % -2 == -1'), get), true, "Python's modulo takes the divisor's sign");
  assert.throws(() => parseRule('a < b < 3'), /one comparison at a time/);
});
