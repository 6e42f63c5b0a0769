/**
 * A small tokenizer for the subset of POSIX shell that recipes use: words with single quotes, double quotes,
 * backslash escapes and `$VAR` references. It does not run anything; it tells the caller which words would
 * expand on the remote (so they are passed through as shell text) and rejects what a recipe must not contain
 * (command substitution, pipes, redirections, `;`, `&&`), naming the line.
 */
export interface ShellWord {
  /** The word with quotes removed and escapes resolved (expansions left as written). */
  value: string;
  /** The word exactly as written, quotes included. */
  raw: string;
  /** True if the shell would expand `$...` in it (outside single quotes). */
  expands: boolean;
  /** Offset of the word's first character in the line it was split from. */
  start?: number;
}

export class ShellSyntaxError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

const OPERATORS = new Set([';', '|', '&', '<', '>', '(', ')']);

/** Splits one logical line (continuations already joined) into words. Throws ShellSyntaxError. */
export function splitShellWords(line: string): ShellWord[] {
  const words: ShellWord[] = [];
  let i = 0;
  while (i < line.length) {
    const c = line[i];
    if (c === ' ' || c === '\t') {
      i++;
      continue;
    }
    if (c === '#') break; // a comment runs to the end of the line
    const start = i;
    let value = '';
    let expands = false;
    while (i < line.length && line[i] !== ' ' && line[i] !== '\t') {
      const ch = line[i];
      if (ch === "'") {
        const end = line.indexOf("'", i + 1);
        if (end < 0) throw new ShellSyntaxError('unterminated single quote', i);
        value += line.slice(i + 1, end);
        i = end + 1;
      } else if (ch === '"') {
        i++;
        let closed = false;
        while (i < line.length) {
          const d = line[i];
          if (d === '"') {
            closed = true;
            i++;
            break;
          }
          if (d === '\\' && i + 1 < line.length && '$`"\\'.includes(line[i + 1])) {
            value += line[i + 1];
            i += 2;
            continue;
          }
          if (d === '`' || (d === '$' && line[i + 1] === '(')) {
            throw new ShellSyntaxError('command substitution is not allowed in a recipe', i);
          }
          if (d === '$') expands = true;
          value += d;
          i++;
        }
        if (!closed) throw new ShellSyntaxError('unterminated double quote', start);
      } else if (ch === '\\') {
        if (i + 1 < line.length) value += line[i + 1];
        i += 2;
      } else if (ch === '`' || (ch === '$' && line[i + 1] === '(')) {
        throw new ShellSyntaxError('command substitution is not allowed in a recipe', i);
      } else if (OPERATORS.has(ch)) {
        throw new ShellSyntaxError(`shell operator '${ch}' is not supported in a recipe (one command per recipe)`, i);
      } else {
        if (ch === '$') expands = true;
        value += ch;
        i++;
      }
    }
    words.push({ value, raw: line.slice(start, i), expands, start });
  }
  return words;
}
