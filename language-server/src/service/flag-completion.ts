import { CompletionItemKind, type CompletionItem, type Position } from 'vscode-languageserver';
import type { TextDocument } from 'vscode-languageserver-textdocument';
import { FLAGS } from '../flags/catalog';

/** Inside an `export LIBTPU_INIT_ARGS=` or `XLA_FLAGS=` line, after `--`: offer the catalog's flags. */
export function completeFlags(doc: TextDocument, pos: Position): CompletionItem[] {
  const line = doc.getText({ start: { line: pos.line, character: 0 }, end: pos });
  if (!/\b(LIBTPU_INIT_ARGS|XLA_FLAGS)=/.test(line)) return [];
  const m = /--([\w]*)$/.exec(line);
  if (!m) return [];
  return FLAGS.filter((f) => f.name.startsWith(m[1])).map((f) => ({
    label: `--${f.name}`,
    kind: CompletionItemKind.Property,
    detail: f.type,
    documentation: f.doc,
    insertText: f.type === 'bool' ? `${f.name}=true` : `${f.name}=`,
  }));
}
