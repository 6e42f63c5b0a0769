import type { TextDocument } from 'vscode-languageserver-textdocument';

/**
 * The keys of the mapping blocks that enclose line `line` (indented by `indent`), outermost first, read from the
 * lines above it by indentation. `keyOf` reads a line's key, or undefined when the line is not one that opens a
 * block this caller can type (a list item, say): the path is then `['\u0000']`, which matches no schema key.
 */
export function enclosingKeys(doc: TextDocument, line: number, indent: number, keyOf: (text: string) => string | undefined): string[] {
  const keys: string[] = [];
  let want = indent;
  for (let l = line - 1; l >= 0 && want > 0; l--) {
    const text = doc.getText({ start: { line: l, character: 0 }, end: { line: l + 1, character: 0 } }).replace(/\r?\n$/, '');
    if (text.trim() === '' || text.trim().startsWith('#')) continue;
    const ind = /^\s*/.exec(text)![0].length;
    if (ind >= want) continue;
    const key = keyOf(text);
    if (key === undefined) return ['\u0000'];
    keys.unshift(key);
    want = ind;
  }
  return keys;
}
