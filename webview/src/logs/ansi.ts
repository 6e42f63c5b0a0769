/**
 * ANSI SGR escape sequences (colours, bold, italic, underline) → styled segments. Anything else
 * (cursor movement, OSC titles) is dropped: a log view has no cursor. Colours map to the terminal theme
 * variables VS Code exposes to webviews (--vscode-terminal-ansiRed …), so themes apply.
 */
export interface Segment {
  text: string;
  fg?: string;
  bg?: string;
  bold?: boolean;
  italic?: boolean;
  underline?: boolean;
}

const NAMES = ['Black', 'Red', 'Green', 'Yellow', 'Blue', 'Magenta', 'Cyan', 'White'];
const basic = (i: number, bright: boolean): string => `var(--vscode-terminal-ansi${bright ? 'Bright' : ''}${NAMES[i]})`;

function xterm256(n: number): string {
  if (n < 8) return basic(n, false);
  if (n < 16) return basic(n - 8, true);
  if (n >= 232) {
    const v = 8 + (n - 232) * 10;
    return `rgb(${v},${v},${v})`;
  }
  const c = n - 16;
  const level = (x: number): number => (x === 0 ? 0 : 55 + x * 40);
  return `rgb(${level(Math.floor(c / 36))},${level(Math.floor(c / 6) % 6)},${level(c % 6)})`;
}

// CSI ... final byte, and OSC ... BEL/ST.
// eslint-disable-next-line no-control-regex
const ESCAPES = /\x1b\[([0-9;?]*)([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]/g;

/** True when the line has an escape character at all: the common case (none) skips the parser. */
export function hasAnsi(line: string): boolean {
  return line.includes('\x1b');
}

export function stripAnsi(line: string): string {
  return hasAnsi(line) ? line.replace(ESCAPES, '') : line;
}

export function parseAnsi(line: string): Segment[] {
  if (!hasAnsi(line)) return [{ text: line }];
  const out: Segment[] = [];
  let style: Omit<Segment, 'text'> = {};
  let last = 0;
  ESCAPES.lastIndex = 0;
  for (let m = ESCAPES.exec(line); m; m = ESCAPES.exec(line)) {
    if (m.index > last) out.push({ text: line.slice(last, m.index), ...style });
    last = m.index + m[0].length;
    if (m[2] !== 'm') continue;
    const codes = (m[1] || '0').split(';').map((c) => Number(c) || 0);
    for (let i = 0; i < codes.length; i++) {
      const c = codes[i];
      if (c === 0) style = {};
      else if (c === 1) style.bold = true;
      else if (c === 3) style.italic = true;
      else if (c === 4) style.underline = true;
      else if (c === 22) style.bold = false;
      else if (c === 23) style.italic = false;
      else if (c === 24) style.underline = false;
      else if (c >= 30 && c <= 37) style.fg = basic(c - 30, false);
      else if (c >= 90 && c <= 97) style.fg = basic(c - 90, true);
      else if (c === 39) style.fg = undefined;
      else if (c >= 40 && c <= 47) style.bg = basic(c - 40, false);
      else if (c >= 100 && c <= 107) style.bg = basic(c - 100, true);
      else if (c === 49) style.bg = undefined;
      else if ((c === 38 || c === 48) && codes[i + 1] === 5) {
        const colour = xterm256(codes[i + 2] ?? 0);
        if (c === 38) style.fg = colour;
        else style.bg = colour;
        i += 2;
      } else if ((c === 38 || c === 48) && codes[i + 1] === 2) {
        const colour = `rgb(${codes[i + 2] ?? 0},${codes[i + 3] ?? 0},${codes[i + 4] ?? 0})`;
        if (c === 38) style.fg = colour;
        else style.bg = colour;
        i += 4;
      }
    }
  }
  if (last < line.length) out.push({ text: line.slice(last), ...style });
  return out;
}
