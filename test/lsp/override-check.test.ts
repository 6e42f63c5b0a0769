/**
 * Messages, severities and ranges of the override checks (issue 16), in process against the real trainer's
 * schema: did-you-mean by prefix, suffix, segment and leaf; warnings only where the run goes on.
 */
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { test } from 'node:test';
import { DiagnosticSeverity, type Diagnostic } from 'vscode-languageserver';
import { TextDocument } from 'vscode-languageserver-textdocument';
import { loadHydraModel } from '../../language-server/src/hydra/model';
import { overrideDiagnostics } from '../../language-server/src/service/overrides';

const model = loadHydraModel({ root: path.join(__dirname, '..', '..') });
const CMD = 'python -m tpu_trainer.train ';

function diags(line: string): { d: Diagnostic[]; doc: TextDocument } {
  const doc = TextDocument.create('file:///r.sh', 'shellscript', 1, CMD + line);
  return { d: overrideDiagnostics(model, doc), doc };
}
const text = (doc: TextDocument, d: Diagnostic) => doc.getText(d.range);

test('did-you-mean: a prefix or suffix of the key, a misspelt segment, the same key elsewhere', () => {
  const cases: [string, string][] = [
    ['batch_size=8', 'global_batch_size'],
    ['scheduler.warmup=10', 'scheduler.warmup_steps'],
    ['hydra.runn.dir=/tmp', 'hydra.run.dir'],
    ['warmup_steps=3', 'scheduler.warmup_steps'],
    ['lr=1e-3', 'optimizer.lr'],
    ['sed=1', 'seed'],
  ];
  for (const [line, want] of cases) {
    const { d } = diags(line);
    assert.equal(d.length, 1, line);
    assert.match(d[0].message, new RegExp(`Did you mean "${want.replace(/\./g, '\\.')}"\\?`), `${line}: ${d[0].message}`);
    assert.equal(d[0].severity, DiagnosticSeverity.Error);
  }
});

test('errors point at the part at fault; warnings where the run goes on', () => {
  let r = diags('max_steps=2.5');
  assert.equal(text(r.doc, r.d[0]), '2.5');
  assert.match(r.d[0].message, /max_steps: expected an integer, got the float 2.5/);
  r = diags('device=CPU');
  assert.match(r.d[0].message, /case matters: write cpu/);
  r = diags("'seed=choice(1,2)'");
  assert.equal(text(r.doc, r.d[0]), 'choice(1,2)');
  assert.match(r.d[0].message, /--multirun/);
  r = diags('seed=${SEED}');
  assert.deepEqual(r.d.map((x) => x.severity), [DiagnosticSeverity.Warning, DiagnosticSeverity.Error], r.d.map((x) => x.message).join('\n'));
  r = diags('resume=${RESUME}');
  assert.deepEqual(r.d.map((x) => x.severity), [DiagnosticSeverity.Warning]);
  r = diags('+seed=3');
  assert.equal(r.d[0].severity, DiagnosticSeverity.Error);
  assert.equal(text(r.doc, r.d[0]), '+seed');
  r = diags("'ici_mesh={fsdp:2, tensr:2}'");
  assert.equal(text(r.doc, r.d[0]), 'tensr:2');
  assert.match(r.d[0].message, /Did you mean "tensor"\?/);
});

test('accepted spellings get nothing: OmegaConf bools, quoted ints, digit separators, hydra settings, .yaml options', () => {
  for (const line of ['model.tie_word_embeddings=yes', 'model.tie_word_embeddings=0', "max_steps='20'", 'max_steps=1_000', 'hydra.run.dir=/tmp/x', 'hydra/job_logging=disabled', 'optimizer=sgd.yaml', '-m seed=1,2,3', "'output_dir=${model.name}'", 'dataset=wikitext', '"$@"', 'seed=3 2>&1 | tee log', 'output_dir=$(date +%s) seed=1', 'seed=3 >out.log']) {
    assert.deepEqual(diags(line).d.map((x) => x.message), [], line);
  }
});
