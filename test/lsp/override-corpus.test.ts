/**
 * The differential test of issue 16: every line of test/fixtures/overrides/corpus.txt, checked by the language
 * server (against the real trainer's schema and config tree) and by the real trainer (its override check, hydra's
 * composition, its config conversion and validation; stored in verdicts.json by test/trainer/override_verdicts.py,
 * kept honest by test/trainer/test_override_verdicts.py). They must agree on every line: an error from the
 * server exactly where the trainer refuses.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { DiagnosticSeverity } from 'vscode-languageserver';
import { TextDocument } from 'vscode-languageserver-textdocument';
import { loadHydraModel } from '../../language-server/src/hydra/model';
import { overrideDiagnostics } from '../../language-server/src/service/overrides';

const repo = path.join(__dirname, '..', '..');
const dir = path.join(repo, 'test', 'fixtures', 'overrides');

interface Verdicts {
  command: string;
  verdicts: { line: string; ok: boolean; message: string }[];
}

export function serverErrors(line: string, model = loadHydraModel({ root: repo })): string[] {
  const doc = TextDocument.create('file:///r.sh', 'shellscript', 1, `python -m tpu_trainer.train ${line}\n`);
  return overrideDiagnostics(model, doc)
    .filter((d) => d.severity === DiagnosticSeverity.Error)
    .map((d) => d.message);
}

test('the stored verdicts cover the corpus, line for line', () => {
  const corpus = fs.readFileSync(path.join(dir, 'corpus.txt'), 'utf8').split('\n').filter((l) => l.trim() && !l.startsWith('#'));
  const v = JSON.parse(fs.readFileSync(path.join(dir, 'verdicts.json'), 'utf8')) as Verdicts;
  assert.match(v.command, /override_verdicts\.py/);
  assert.deepEqual(v.verdicts.map((r) => r.line), corpus, `regenerate with: ${v.command}`);
  assert.ok(corpus.length >= 250, `${corpus.length} lines`);
  // Both kinds are well represented, or agreement would mean little.
  assert.ok(v.verdicts.filter((r) => r.ok).length > 100 && v.verdicts.filter((r) => !r.ok).length > 100);
});

test('the language server errs exactly on the lines the trainer refuses', () => {
  const model = loadHydraModel({ root: repo });
  assert.equal(model.origin, 'schema');
  const v = JSON.parse(fs.readFileSync(path.join(dir, 'verdicts.json'), 'utf8')) as Verdicts;
  const wrong: string[] = [];
  for (const r of v.verdicts) {
    const errors = serverErrors(r.line, model);
    if (r.ok && errors.length) wrong.push(`FALSE ALARM  ${r.line}  -> ${errors.join(' | ')}`);
    if (!r.ok && !errors.length) wrong.push(`MISSED       ${r.line}  (trainer: ${r.message})`);
  }
  const agree = v.verdicts.length - wrong.length;
  assert.deepEqual(wrong, [], `${agree}/${v.verdicts.length} agree`);
});
