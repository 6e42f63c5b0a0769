/**
 * A line of hydra overrides typed outside any file (the "Run on TPU with Overrides…" input). It is checked by
 * the very code that checks overrides in recipes: the line is put after a trainer command in a one-line
 * document, so completion, did-you-mean and the shell-word splitting cannot drift from what recipes get.
 */
import { DiagnosticSeverity, type TextEdit } from 'vscode-languageserver';
import { TextDocument } from 'vscode-languageserver-textdocument';
import type { HydraModel } from '../hydra/model';
import type { CompleteOverridesResult, OverrideLineItem, OverrideLineProblem } from '../../../protocol/language-server-requests';
import { findTrainerCommands, overrideCompletion, overrideDiagnostics } from './overrides';

const PREFIX = 'python3 -m tpu_trainer.train ';

export function completeOverrideLine(model: HydraModel, line: string, cursor: number): CompleteOverridesResult {
  // Newlines would end the trainer command (or continue it with a backslash): the input is one logical line.
  const flat = line.replace(/[\r\n]/g, ' ');
  const at = Math.max(0, Math.min(cursor, flat.length));
  const doc = TextDocument.create('untitled:overrides', 'shellscript', 1, PREFIX + flat);
  const cmd = findTrainerCommands(doc.getText())[0];
  const overrides = cmd ? cmd.words.map((w) => w.value) : [];
  const problems: OverrideLineProblem[] = overrideDiagnostics(model, doc).map((d) => {
    const start = doc.offsetAt(d.range.start) - PREFIX.length;
    const end = doc.offsetAt(d.range.end) - PREFIX.length;
    // The diagnostic covers the key or value; the user thinks in tokens, so name the whole word.
    const w = cmd?.words.find((x) => x.start - PREFIX.length <= start && x.end - PREFIX.length >= end);
    const s = w ? w.start - PREFIX.length : start;
    const e = w ? w.end - PREFIX.length : end;
    return { token: flat.slice(s, e), start: s, end: e, message: d.message, severity: d.severity === DiagnosticSeverity.Error ? 'error' : 'warning' };
  });
  const list = overrideCompletion(model, doc, doc.positionAt(PREFIX.length + at));
  const items: OverrideLineItem[] = (list?.items ?? []).flatMap((it) => {
    const edit = it.textEdit as TextEdit | undefined;
    if (!edit) return [];
    const s = doc.offsetAt(edit.range.start) - PREFIX.length;
    const e = doc.offsetAt(edit.range.end) - PREFIX.length;
    const next = flat.slice(0, s) + edit.newText + flat.slice(e);
    return [{ label: it.label, detail: it.detail, line: next, cursor: s + edit.newText.length }];
  });
  return { items, problems, overrides, checked: model.origin !== 'none' };
}
