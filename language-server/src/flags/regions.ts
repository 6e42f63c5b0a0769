/**
 * Finds flag strings in any text — shell exports, `.env` files, YAML `envs:` blocks, VS Code settings JSON — and
 * splits them into `--name=value` tokens with their offsets. One scanner for every file kind, because the same
 * LIBTPU_INIT_ARGS string travels between all of them and must be read the same way everywhere.
 */
import type { FlagVariable } from './catalog';

export interface FlagToken {
  /** Offsets in the document of the whole token (`--name=value`). */
  start: number;
  end: number;
  name: string;
  nameStart: number;
  nameEnd: number;
  /** Undefined for a bare `--flag`. */
  value?: string;
  valueStart: number;
  valueEnd: number;
}

export interface FlagRegion {
  variable: FlagVariable;
  /** Offsets of the value's content (inside the quotes, if any). */
  start: number;
  end: number;
  tokens: FlagToken[];
}

// `NAME=`, `export NAME=`, `NAME: ` (YAML), `"NAME": ` (JSON), `["NAME"] = ` (Python); never `$NAME` or `${NAME}`.
const ASSIGN = /(?<![\w$.{-])(LIBTPU_INIT_ARGS|XLA_FLAGS)(["']?\]?)[ \t]*([=:])[ \t]*/g;

// Completion, hover and diagnostics of one document version all scan the same text: remember the last few
// results (compared by identity first, which is O(1) for the editor's unchanged document string).
const memo: { text: string; regions: FlagRegion[] }[] = [];

export function findFlagRegions(text: string): FlagRegion[] {
  const hit = memo.find((m) => m.text === text);
  if (hit) return hit.regions;
  const regions = scan(text);
  memo.unshift({ text, regions });
  if (memo.length > 4) memo.pop();
  return regions;
}

function scan(text: string): FlagRegion[] {
  const regions: FlagRegion[] = [];
  ASSIGN.lastIndex = 0;
  for (let m = ASSIGN.exec(text); m; m = ASSIGN.exec(text)) {
    const variable = m[1] as FlagVariable;
    const i = m.index + m[0].length;
    let start = i;
    let end: number;
    const c = text[i];
    if (c === "'" || c === '"') {
      start = i + 1;
      end = closingQuote(text, start, c);
      ASSIGN.lastIndex = Math.min(text.length, end + 1);
    } else if ((c === '|' || c === '>') && m[3] === ':') {
      // A YAML block scalar: the lines below that are indented deeper than the key.
      const lineStart = text.lastIndexOf('\n', m.index) + 1;
      const keyIndent = /^[ \t]*/.exec(text.slice(lineStart, m.index))![0].length;
      const nl = text.indexOf('\n', i);
      start = nl < 0 ? text.length : nl + 1;
      end = start;
      let p = start;
      while (p < text.length) {
        const e = text.indexOf('\n', p);
        const line = text.slice(p, e < 0 ? text.length : e);
        const indent = /^[ \t]*/.exec(line)![0].length;
        if (line.trim() !== '' && indent <= keyIndent) break;
        end = e < 0 ? text.length : e;
        p = e < 0 ? text.length : e + 1;
      }
      ASSIGN.lastIndex = end;
    } else {
      // Unquoted: to the end of the line (YAML, .env) or the first blank (shell); a ` #` starts a comment.
      const nl = text.indexOf('\n', i);
      let stop = nl < 0 ? text.length : nl;
      const comment = text.slice(i, stop).search(/\s#/);
      if (comment >= 0) stop = i + comment;
      if (m[3] === '=') {
        // Shell: `XLA_FLAGS=--a python x.py` ends at the command; .env: `XLA_FLAGS=--a --b` is one value.
        // So the value runs over blank-separated words for as long as they are flags.
        const re = /\S+/g;
        re.lastIndex = i;
        let last = i;
        for (let w = re.exec(text); w && w.index < stop; w = re.exec(text)) {
          if (w.index > i && !w[0].startsWith('-')) break;
          last = Math.min(stop, w.index + w[0].length);
        }
        stop = last;
      }
      end = stop;
      while (end > i && /\s/.test(text[end - 1])) end--;
      ASSIGN.lastIndex = Math.max(i, stop);
    }
    regions.push({ variable, start, end, tokens: tokenize(text, start, end) });
  }
  return regions;
}

/** The offset of the quote closing the one just before `from`, or the end of text when it is unclosed. */
function closingQuote(text: string, from: number, quote: string): number {
  for (let i = from; i < text.length; i++) {
    if (text[i] === '\\' && quote === '"') {
      i++;
      continue;
    }
    if (text[i] === quote) return i;
  }
  return text.length;
}

/** Splits [start, end) at blanks (and backslash-newlines); tokens that are not `-flag` (e.g. `$VAR`) are skipped. */
function tokenize(text: string, start: number, end: number): FlagToken[] {
  const tokens: FlagToken[] = [];
  let i = start;
  while (i < end) {
    while (i < end && (/\s/.test(text[i]) || (text[i] === '\\' && text[i + 1] === '\n'))) i++;
    if (i >= end) break;
    const s = i;
    while (i < end && !/\s/.test(text[i]) && !(text[i] === '\\' && text[i + 1] === '\n')) i++;
    const word = text.slice(s, i);
    const dashes = word.startsWith('--') ? 2 : word.startsWith('-') ? 1 : 0;
    if (dashes === 0 || !/^[\w]/.test(word.slice(dashes))) continue;
    const eq = word.indexOf('=');
    const nameEnd = eq < 0 ? i : s + eq;
    tokens.push({
      start: s,
      end: i,
      name: text.slice(s + dashes, nameEnd),
      nameStart: s + dashes,
      nameEnd,
      value: eq < 0 ? undefined : word.slice(eq + 1),
      valueStart: eq < 0 ? i : s + eq + 1,
      valueEnd: i,
    });
  }
  return tokens;
}
