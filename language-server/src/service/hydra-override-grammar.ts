/**
 * Hydra's override grammar (hydra-core 1.3, OverrideLexer.g4 / OverrideParser.g4), parsed the way hydra parses
 * it: the same tokens (longest match, ties to the earlier rule), the same two lexer modes (key before `=`,
 * value after), the same parser rules, and the same conversion of a primitive's tokens to a value (one INT,
 * FLOAT, BOOL or NULL token is typed; several tokens are a string with escapes removed and outer blanks
 * trimmed). Offsets are into the override text so diagnostics can point at the part at fault.
 */

export type OverridePrefix = '' | '+' | '++' | '~';

export interface OverrideKey {
  /** `model`, `model.hidden_size`, `model/remat` (packageOrGroup). */
  path: string;
  /** The text after `@`, when there is one (`model@foo=…`). */
  pkg?: string;
  start: number;
  end: number;
}

export type PrimitiveType = 'string' | 'int' | 'float' | 'bool' | 'null';

export interface Primitive {
  kind: 'primitive';
  type: PrimitiveType;
  /** The value hydra hands OmegaConf: the string, or the number/boolean/null. */
  value: string | number | boolean | null;
  /** A quoted string ('…' or "…"): always a string, never typed. */
  quoted: boolean;
  /** `${…}` interpolations inside it, without the `${` `}`. */
  interpolations: string[];
  start: number;
  end: number;
}

export interface ListValue {
  kind: 'list';
  items: Element[];
  start: number;
  end: number;
}

export interface DictValue {
  kind: 'dict';
  entries: { key: string; value: Element; start: number; end: number }[];
  start: number;
  end: number;
}

export interface FunctionCall {
  kind: 'function';
  name: string;
  args: { name?: string; value: Element }[];
  start: number;
  end: number;
}

export type Element = Primitive | ListValue | DictValue | FunctionCall;

/** `a,b,c`: a simple choice sweep. */
export interface Sweep {
  kind: 'sweep';
  items: Element[];
  start: number;
  end: number;
}

export interface ParsedOverride {
  prefix: OverridePrefix;
  key: OverrideKey;
  /** Undefined for `~key` (no `=`); an empty string primitive for `key=`. */
  value?: Element | Sweep;
  valueStart: number;
}

export class OverrideSyntaxError extends Error {
  constructor(
    message: string,
    readonly start: number,
    readonly end: number,
  ) {
    super(message);
  }
}

type Tok =
  | 'EQUAL' | 'TILDE' | 'PLUS' | 'AT' | 'COLON' | 'SLASH' | 'ID' | 'KEY_SPECIAL' | 'DOT_PATH'
  | 'POPEN' | 'COMMA' | 'PCLOSE' | 'BRACKET_OPEN' | 'BRACKET_CLOSE' | 'BRACE_OPEN' | 'BRACE_CLOSE'
  | 'FLOAT' | 'INT' | 'BOOL' | 'NULL' | 'UNQUOTED_CHAR' | 'ESC' | 'WS' | 'QUOTED_VALUE' | 'INTERPOLATION';

interface Token {
  type: Tok;
  text: string;
  start: number;
  end: number;
}

const INTU = '(?:0|[1-9](?:_?[0-9])*)';
const DIGITS = '[0-9](?:_?[0-9])*';
const KS = '[a-zA-Z_$][a-zA-Z0-9_\\-$]*';
const POINT = `(?:(?:${INTU})?\\.${DIGITS}|${INTU}\\.)`;

// Rule order matters: on equal length the earlier rule wins, as in ANTLR.
const KEY_RULES: [Tok, RegExp][] = [
  ['EQUAL', /=[ \t]*/y],
  ['TILDE', /~/y],
  ['PLUS', /\+/y],
  ['AT', /@/y],
  ['COLON', /:/y],
  ['SLASH', /\//y],
  ['ID', /[a-zA-Z_][a-zA-Z0-9_-]*/y],
  ['KEY_SPECIAL', new RegExp(KS, 'y')],
  ['DOT_PATH', new RegExp(`(?:${KS}|${INTU})(?:\\.(?:${KS}|${INTU}))+`, 'y')],
];

const VALUE_RULES: [Tok, RegExp][] = [
  ['POPEN', /[ \t]*\([ \t]*/y],
  ['COMMA', /[ \t]*,[ \t]*/y],
  ['PCLOSE', /[ \t]*\)/y],
  ['BRACKET_OPEN', /\[[ \t]*/y],
  ['BRACKET_CLOSE', /[ \t]*\]/y],
  ['BRACE_OPEN', /\{[ \t]*/y],
  ['BRACE_CLOSE', /[ \t]*\}/y],
  ['COLON', /[ \t]*:[ \t]*/y],
  ['EQUAL', /[ \t]*=[ \t]*/y],
  ['FLOAT', new RegExp(`[+-]?(?:${POINT}(?:[eE][+-]?${DIGITS})?|${INTU}[eE][+-]?${DIGITS}|[Ii][Nn][Ff]|[Nn][Aa][Nn])`, 'y')],
  ['INT', new RegExp(`[+-]?${INTU}`, 'y')],
  ['BOOL', /[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]/y],
  ['NULL', /[Nn][Uu][Ll][Ll]/y],
  ['UNQUOTED_CHAR', /[/\-\\+.$%*@?|]/y],
  ['ID', /[a-zA-Z_][a-zA-Z0-9_-]*/y],
  ['ESC', /(?:\\\\|\\[()[\]{}:=, \t])+/y],
  ['WS', /[ \t]+/y],
  ['INTERPOLATION', /\$\{[^}]+\}/y],
];

/** The characters each token can start with: the lexer tries only the rules that can match here. */
const FIRST: Partial<Record<Tok, RegExp>> = {
  EQUAL: /[ \t=]/, TILDE: /~/, PLUS: /\+/, AT: /@/, COLON: /[ \t:]/, SLASH: /\//, ID: /[a-zA-Z_]/, KEY_SPECIAL: /[a-zA-Z_$]/,
  DOT_PATH: /[a-zA-Z_$0-9]/, POPEN: /[ \t(]/, COMMA: /[ \t,]/, PCLOSE: /[ \t)]/, BRACKET_OPEN: /\[/, BRACKET_CLOSE: /[ \t\]]/,
  BRACE_OPEN: /\{/, BRACE_CLOSE: /[ \t}]/, FLOAT: /[+\-0-9.iInN]/, INT: /[+\-0-9]/, BOOL: /[tTfF]/, NULL: /[nN]/,
  UNQUOTED_CHAR: /[/\-\\+.$%*@?|]/, ESC: /\\/, WS: /[ \t]/, INTERPOLATION: /\$/,
};
const byFirst = new Map<[Tok, RegExp][], Map<string, [Tok, RegExp][]>>();

function rulesFor(mode: [Tok, RegExp][], c: string): [Tok, RegExp][] {
  let table = byFirst.get(mode);
  if (!table) byFirst.set(mode, (table = new Map()));
  let rules = table.get(c);
  if (!rules) table.set(c, (rules = mode.filter(([t]) => FIRST[t]?.test(c) ?? true)));
  return rules;
}

/** A quoted value: up to the first closing quote preceded by an even number of backslashes. */
function quotedLength(s: string, i: number): number {
  const q = s[i];
  if (q !== '"' && q !== "'") return 0;
  for (let j = i + 1; j < s.length; j++) {
    if (s[j] !== q) continue;
    let bs = 0;
    for (let k = j - 1; k > i && s[k] === '\\'; k--) bs++;
    if (bs % 2 === 0) return j + 1 - i;
  }
  return 0;
}

function lex(s: string, from: number): Token[] {
  const out: Token[] = [];
  let mode = KEY_RULES;
  let i = from;
  while (i < s.length) {
    let best: Token | undefined;
    for (const [type, re] of rulesFor(mode, s[i])) {
      re.lastIndex = i;
      const m = re.exec(s);
      if (m && m[0].length > 0 && (!best || m[0].length > best.text.length)) best = { type, text: m[0], start: i, end: i + m[0].length };
    }
    if (mode === VALUE_RULES) {
      const q = quotedLength(s, i);
      if (q > 0 && (!best || q > best.text.length)) best = { type: 'QUOTED_VALUE', text: s.slice(i, i + q), start: i, end: i + q };
    }
    if (!best) {
      const c = s[i];
      const what = c === '"' || c === "'" ? `unterminated quote ${c}` : /[^\x20-\x7e]/.test(c) ? `"${c}" (only ASCII is allowed unquoted)` : `"${c}"`;
      throw new OverrideSyntaxError(`hydra cannot read ${what} here${mode === KEY_RULES ? ' in the key' : ''}`, i, i + 1);
    }
    out.push(best);
    if (best.type === 'EQUAL') mode = VALUE_RULES;
    i = best.end;
  }
  return out;
}

const PRIMITIVE_TOKENS = new Set<Tok>(['ID', 'NULL', 'INT', 'FLOAT', 'BOOL', 'INTERPOLATION', 'UNQUOTED_CHAR', 'COLON', 'ESC', 'WS']);
const DICT_KEY_TOKENS = new Set<Tok>(['ID', 'NULL', 'INT', 'FLOAT', 'BOOL', 'UNQUOTED_CHAR', 'ESC', 'WS']);

class Parser {
  private p = 0;
  constructor(
    private readonly toks: Token[],
    private readonly text: string,
  ) {}

  private peek(k = 0): Token | undefined {
    return this.toks[this.p + k];
  }
  private fail(what: string, t = this.peek()): never {
    const at = t ? t.start : this.text.length;
    throw new OverrideSyntaxError(t ? `hydra cannot parse "${t.text.trim() || t.text}" here: ${what}` : `the override ends early: ${what}`, at, t ? t.end : at);
  }
  private take(type: Tok, what: string): Token {
    const t = this.peek();
    if (t?.type !== type) this.fail(what);
    this.p++;
    return t;
  }

  override(): ParsedOverride {
    let prefix: OverridePrefix = '';
    if (this.peek()?.type === 'TILDE') {
      prefix = '~';
      this.p++;
    } else if (this.peek()?.type === 'PLUS') {
      this.p++;
      prefix = '+';
      if (this.peek()?.type === 'PLUS') {
        this.p++;
        prefix = '++';
      }
    }
    const key = this.key();
    const eq = this.peek();
    if (!eq) {
      if (prefix === '~') return { prefix, key, valueStart: this.text.length };
      this.fail(`expected "=" after the key (write ${key.path || 'key'}=value${prefix === '' ? `, or ~${key.path} to delete it` : ''})`);
    }
    if (eq.type !== 'EQUAL') this.fail(`expected "=" after the key`);
    this.p++;
    const valueStart = eq.end;
    let value: Element | Sweep;
    if (!this.peek()) value = { kind: 'primitive', type: 'string', value: '', quoted: false, interpolations: [], start: valueStart, end: valueStart };
    else value = this.value();
    if (this.peek()) this.fail('expected the end of the override (quote the value if it is meant literally)');
    return { prefix, key, value, valueStart };
  }

  private key(): OverrideKey {
    const start = this.peek()?.start ?? this.text.length;
    let path = '';
    const t = this.peek();
    if (t?.type === 'ID' && this.peek(1)?.type === 'SLASH') {
      path = t.text;
      this.p++;
      while (this.peek()?.type === 'SLASH') {
        this.p++;
        path += `/${this.take('ID', 'expected a group name after "/"').text}`;
      }
    } else if (t && (t.type === 'ID' || t.type === 'KEY_SPECIAL' || t.type === 'DOT_PATH')) {
      path = t.text;
      this.p++;
    }
    let pkg: string | undefined;
    if (this.peek()?.type === 'AT') {
      this.p++;
      const n = this.peek();
      pkg = '';
      if (n && (n.type === 'ID' || n.type === 'KEY_SPECIAL' || n.type === 'DOT_PATH')) {
        pkg = n.text;
        this.p++;
      }
    }
    const end = this.toks[this.p - 1]?.end ?? start;
    return { path, pkg, start, end: Math.max(start, end) };
  }

  private value(): Element | Sweep {
    const first = this.element();
    if (this.peek()?.type !== 'COMMA') return first;
    const items = [first];
    while (this.peek()?.type === 'COMMA') {
      this.p++;
      items.push(this.element());
    }
    return { kind: 'sweep', items, start: first.start, end: items[items.length - 1].end };
  }

  private element(): Element {
    const t = this.peek();
    if (!t) this.fail('expected a value');
    if (t.type === 'BRACKET_OPEN') return this.list();
    if (t.type === 'BRACE_OPEN') return this.dict();
    if (t.type === 'ID' && this.peek(1)?.type === 'POPEN') return this.call();
    return this.primitive();
  }

  private list(): ListValue {
    const open = this.take('BRACKET_OPEN', 'expected "["');
    const items: Element[] = [];
    if (this.peek()?.type !== 'BRACKET_CLOSE') {
      items.push(this.element());
      while (this.peek()?.type === 'COMMA') {
        this.p++;
        items.push(this.element());
      }
    }
    const close = this.take('BRACKET_CLOSE', 'expected "," or "]" in the list');
    return { kind: 'list', items, start: open.start, end: close.end };
  }

  private dict(): DictValue {
    const open = this.take('BRACE_OPEN', 'expected "{"');
    const entries: DictValue['entries'] = [];
    if (this.peek()?.type !== 'BRACE_CLOSE') {
      for (;;) {
        const ks = this.peek()?.start ?? this.text.length;
        let key = '';
        while (this.peek() && DICT_KEY_TOKENS.has(this.peek()!.type)) key += unescape(this.toks[this.p++]);
        if (!key.trim()) this.fail('expected a dict key');
        this.take('COLON', 'expected ":" after the dict key');
        const value = this.element();
        entries.push({ key: key.trim(), value, start: ks, end: value.end });
        if (this.peek()?.type !== 'COMMA') break;
        this.p++;
      }
    }
    const close = this.take('BRACE_CLOSE', 'expected "," or "}" in the dict');
    return { kind: 'dict', entries, start: open.start, end: close.end };
  }

  private call(): FunctionCall {
    const name = this.take('ID', 'expected a function name');
    this.take('POPEN', 'expected "("');
    const args: FunctionCall['args'] = [];
    if (this.peek()?.type !== 'PCLOSE') {
      for (;;) {
        let argName: string | undefined;
        if (this.peek()?.type === 'ID' && this.peek(1)?.type === 'EQUAL') {
          argName = this.peek()!.text;
          this.p += 2;
        }
        args.push({ name: argName, value: this.element() });
        if (this.peek()?.type !== 'COMMA') break;
        this.p++;
      }
    }
    const close = this.take('PCLOSE', 'expected "," or ")" in the call');
    return { kind: 'function', name: name.text, args, start: name.start, end: close.end };
  }

  private primitive(): Primitive {
    const t = this.peek()!;
    if (t.type === 'QUOTED_VALUE') {
      this.p++;
      const q = t.text[0];
      // Backslashes escape the quote and each other only before a quote and at the end; elsewhere they stay.
      const halve = (bs: string) => '\\'.repeat(Math.floor(bs.length / 2));
      const body = t.text
        .slice(1, -1)
        .replace(new RegExp(`(\\\\+)(${q})`, 'g'), (_m, bs: string) => halve(bs) + q)
        .replace(/(\\+)$/, (_m, bs: string) => halve(bs));
      return { kind: 'primitive', type: 'string', value: body, quoted: true, interpolations: interpolationsIn(body), start: t.start, end: t.end };
    }
    const toks: Token[] = [];
    while (this.peek() && PRIMITIVE_TOKENS.has(this.peek()!.type)) toks.push(this.toks[this.p++]);
    if (toks.length === 0) this.fail('expected a value');
    const start = toks[0].start;
    const end = toks[toks.length - 1].end;
    const inner = toks.slice(toks[0].type === 'WS' ? 1 : 0, toks[toks.length - 1].type === 'WS' ? -1 : undefined);
    if (inner.length === 0) throw new OverrideSyntaxError('a value of only blanks', start, end);
    const interpolations: string[] = [];
    let text = '';
    for (const x of inner) {
      if (x.type === 'INTERPOLATION') interpolations.push(x.text.slice(2, -1));
      text += unescape(x);
    }
    let type: PrimitiveType = 'string';
    let value: Primitive['value'] = text;
    if (inner.length === 1) {
      const one = inner[0];
      if (one.type === 'INT') [type, value] = ['int', Number(one.text.replace(/_/g, ''))];
      else if (one.type === 'FLOAT') [type, value] = ['float', floatValue(one.text.replace(/_/g, ''))];
      else if (one.type === 'BOOL') [type, value] = ['bool', one.text.toLowerCase() === 'true'];
      else if (one.type === 'NULL') [type, value] = ['null', null];
    }
    return { kind: 'primitive', type, value, quoted: false, interpolations, start, end };
  }
}

function floatValue(n: string): number {
  const lower = n.toLowerCase();
  if (lower.endsWith('inf')) return lower.startsWith('-') ? -Infinity : Infinity;
  return lower.endsWith('nan') ? NaN : Number(n);
}

function unescape(t: Token): string {
  return t.type === 'ESC' ? [...t.text].filter((_, i) => i % 2 === 1).join('') : t.text;
}

/** The `${…}` bodies in a string (no nesting: hydra's lexer has none outside quotes either). */
export function interpolationsIn(s: string): string[] {
  return [...s.matchAll(/\$\{([^}]+)\}/g)].map((m) => m[1]);
}

/** Parses one override as hydra does; throws OverrideSyntaxError (with offsets into `text`) where hydra refuses it. */
export function parseHydraOverride(text: string): ParsedOverride {
  return new Parser(lex(text, 0), text).override();
}

/** The elements a value is made of, sweeps and function arguments included (for checking each one). */
export function* leaves(v: Element | Sweep): Generator<Element> {
  if (v.kind === 'sweep') for (const it of v.items) yield* leaves(it);
  else if (v.kind === 'function') for (const a of v.args) yield* leaves(a.value);
  else yield v;
}
