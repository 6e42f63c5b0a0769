/**
 * The trainer's cross-field rules, read from its schema (`x-rules`, written by `python -m tpu_trainer.schema`
 * from tpu_trainer/rules.py) and run here as the trainer runs them: the aliases in order, then every check.
 * The expressions are the Python subset rules.py describes; this parses and evaluates that subset with
 * Python's semantics (py-values.ts), so one definition serves the trainer and the editor.
 */
import {
  PyError,
  PyFloat,
  PyTuple,
  UNKNOWN,
  holdsUnknown,
  isUnknown,
  pyArith,
  pyEq,
  pyIn,
  pyLess,
  pyNeg,
  pyRepr,
  pyStr,
  truthy,
  type ArithOp,
  type Py,
  type PyDict,
} from './py-values';

export type Expr =
  | { k: 'lit'; v: Py }
  | { k: 'key'; key: string }
  | { k: 'and' | 'or'; items: Expr[] }
  | { k: 'not'; x: Expr }
  | { k: 'neg'; x: Expr }
  | { k: 'cmp'; op: '==' | '!=' | '<' | '<=' | '>' | '>=' | 'in' | 'not in'; a: Expr; b: Expr }
  | { k: 'bin'; op: ArithOp; a: Expr; b: Expr }
  | { k: 'tuple'; items: Expr[] }
  | { k: 'call'; fn: string; args: Expr[] };

export interface RuleCheck {
  check: Expr;
  message: string;
  /** The config keys the check reads. */
  keys: string[];
}

export interface RuleAlias {
  when: Expr;
  set: { key: string; value: Expr }[];
  keys: string[];
}

export interface TrainerRules {
  aliases: RuleAlias[];
  checks: RuleCheck[];
}

export class RuleSyntaxError extends Error {}

const TOKEN = /\s*(?:(\d[\d_]*\.?[\d_]*(?:[eE][+-]?\d+)?|\.\d[\d_]*(?:[eE][+-]?\d+)?)|('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")|([A-Za-z_]\w*)|(==|!=|<=|>=|\/\/|[<>+\-*%(),.]))/y;

interface Tok {
  t: 'num' | 'str' | 'name' | 'op';
  s: string;
}

function tokenize(src: string): Tok[] {
  const out: Tok[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < src.length) {
    if (/^\s*$/.test(src.slice(TOKEN.lastIndex))) break;
    const at = TOKEN.lastIndex;
    const m = TOKEN.exec(src);
    if (!m) throw new RuleSyntaxError(`cannot read "${src.slice(at).trim()}" in rule ${src}`);
    if (m[1] !== undefined) out.push({ t: 'num', s: m[1] });
    else if (m[2] !== undefined) out.push({ t: 'str', s: m[2] });
    else if (m[3] !== undefined) out.push({ t: 'name', s: m[3] });
    else out.push({ t: 'op', s: m[4] });
  }
  return out;
}

function unquote(s: string): string {
  return s.slice(1, -1).replace(/\\(.)/g, (_m, c: string) => ({ n: '\n', t: '\t', r: '\r' })[c] ?? c);
}

/** Parses one rule expression (the subset rules.py's parse() accepts). */
export function parseRule(src: string): Expr {
  const toks = tokenize(src);
  let p = 0;
  const peek = () => toks[p];
  const isOp = (s: string) => peek()?.t === 'op' && peek().s === s;
  const isWord = (s: string) => peek()?.t === 'name' && peek().s === s;
  const fail = (what: string): never => {
    throw new RuleSyntaxError(`${what} at "${toks.slice(p).map((t) => t.s).join(' ')}" in rule ${src}`);
  };
  const expect = (s: string) => (isOp(s) ? p++ : fail(`expected "${s}"`));

  /** `a or b or …` / `a and b and …`: one node for the run, as Python's BoolOp. */
  const boolChain = (word: 'or' | 'and', operand: () => Expr) => (): Expr => {
    const items = [operand()];
    while (isWord(word)) {
      p++;
      items.push(operand());
    }
    return items.length === 1 ? items[0] : { k: word, items };
  };
  const notExpr = (): Expr => {
    if (isWord('not')) {
      p++;
      return { k: 'not', x: notExpr() };
    }
    return comparison();
  };
  const andExpr = boolChain('and', notExpr);
  const orExpr = boolChain('or', andExpr);
  const comparison = (): Expr => {
    const a = sum();
    let op: Extract<Expr, { k: 'cmp' }>['op'] | undefined;
    if (peek()?.t === 'op' && ['==', '!=', '<', '<=', '>', '>='].includes(peek().s)) op = peek().s as typeof op;
    else if (isWord('in')) op = 'in';
    else if (isWord('not') && toks[p + 1]?.t === 'name' && toks[p + 1].s === 'in') {
      op = 'not in';
      p++;
    }
    if (!op) return a;
    p++;
    const b = sum();
    if (peek()?.t === 'op' && ['==', '!=', '<', '<=', '>', '>='].includes(peek().s)) fail('one comparison at a time');
    return { k: 'cmp', op, a, b };
  };
  const sum = (): Expr => {
    let a = term();
    while (isOp('+') || isOp('-')) {
      const op = toks[p++].s as ArithOp;
      a = { k: 'bin', op, a, b: term() };
    }
    return a;
  };
  const term = (): Expr => {
    let a = factor();
    while (isOp('*') || isOp('//') || isOp('%')) {
      const op = toks[p++].s as ArithOp;
      a = { k: 'bin', op, a, b: factor() };
    }
    return a;
  };
  const factor = (): Expr => {
    if (isOp('-')) {
      p++;
      return { k: 'neg', x: factor() };
    }
    return atom();
  };
  const atom = (): Expr => {
    const t = peek();
    if (!t) return fail('expected a value');
    if (t.t === 'num') {
      p++;
      const text = t.s.replace(/_/g, '');
      return { k: 'lit', v: /[.eE]/.test(text) ? new PyFloat(Number(text)) : Number(text) };
    }
    if (t.t === 'str') {
      p++;
      return { k: 'lit', v: unquote(t.s) };
    }
    if (t.t === 'name') {
      p++;
      if (t.s === 'None' || t.s === 'True' || t.s === 'False') return { k: 'lit', v: t.s === 'None' ? null : t.s === 'True' };
      if (isOp('(')) {
        p++;
        const args: Expr[] = [];
        while (!isOp(')')) {
          args.push(orExpr());
          if (!isOp(')')) expect(',');
        }
        p++;
        return { k: 'call', fn: t.s, args };
      }
      let key = t.s;
      while (isOp('.')) {
        p++;
        const n = peek();
        if (n?.t !== 'name') fail('expected a key after "."');
        key += `.${toks[p++].s}`;
      }
      return { k: 'key', key };
    }
    if (isOp('(')) {
      p++;
      if (isOp(')')) {
        p++;
        return { k: 'tuple', items: [] };
      }
      const first = orExpr();
      if (isOp(')')) {
        p++;
        return first;
      }
      const items = [first];
      while (isOp(',')) {
        p++;
        if (isOp(')')) break;
        items.push(orExpr());
      }
      expect(')');
      // A tuple of literals is one constant: the same object at every evaluation (functions memoise on it).
      if (items.every((x) => x.k === 'lit')) return { k: 'lit', v: new PyTuple(items.map((x) => (x as { v: Py }).v)) };
      return { k: 'tuple', items };
    }
    return fail('expected a value');
  };

  const e = orExpr();
  if (p < toks.length) fail('expected the end of the rule');
  return e;
}

/** The config keys an expression reads. */
export function keysOf(e: Expr, out: string[] = []): string[] {
  if (e.k === 'key') {
    if (!out.includes(e.key)) out.push(e.key);
  } else if (e.k === 'and' || e.k === 'or' || e.k === 'tuple') for (const x of e.items) keysOf(x, out);
  else if (e.k === 'not' || e.k === 'neg') keysOf(e.x, out);
  else if (e.k === 'cmp' || e.k === 'bin') {
    keysOf(e.a, out);
    keysOf(e.b, out);
  } else if (e.k === 'call') for (const x of e.args) keysOf(x, out);
  return out;
}

// A preset's specs are shared by every line that keeps the preset (values are never changed in place), and the
// axes are one constant tuple: each (specs, where, axes) is looked at once.
const specMemo = new WeakMap<object, Map<string, WeakMap<object, Py>>>();

function memoised(value: Py, where: string, axes: Py, compute: () => Py): Py {
  if (typeof value !== 'object' || value === null || typeof axes !== 'object' || axes === null) return compute();
  let byWhere = specMemo.get(value);
  if (!byWhere) specMemo.set(value, (byWhere = new Map()));
  let byAxes = byWhere.get(where);
  if (!byAxes) byWhere.set(where, (byAxes = new WeakMap()));
  let v = byAxes.get(axes);
  if (v === undefined) byAxes.set(axes, (v = compute()));
  return v;
}

function specProblem(where: string, spec: Py, axes: Py): Py {
  return memoised(spec, where, axes, () => specProblemOf(where, spec, axes));
}

function specProblemOf(where: string, spec: Py, axes: Py): Py {
  if (holdsUnknown(spec)) return UNKNOWN;
  const list = spec instanceof PyTuple ? spec.items : Array.isArray(spec) ? spec : undefined;
  if (!list) return `${where} must be a list with one entry per tensor dimension, not ${pyRepr(spec)}`;
  for (const entry of list) {
    const names = entry instanceof PyTuple ? entry.items : Array.isArray(entry) ? entry : [entry];
    for (const name of names) {
      if (name !== null && pyIn(name, axes) === false) {
        const listed = axes instanceof PyTuple ? axes.items.map(pyStr).join(', ') : pyStr(axes);
        return `${where}: ${pyRepr(name)} is not a mesh axis (one of: ${listed})`;
      }
    }
  }
  return null;
}

/** The functions rules.py's FUNCTIONS offers, with the same results. */
const FUNCTIONS: Record<string, (args: Py[]) => Py> = {
  partition_spec_problem: ([where, spec, axes]) => specProblem(pyStr(where), spec, axes),
  partition_specs_problem: ([where, specs, axes]) => {
    if (isUnknown(specs)) return UNKNOWN;
    if (!(specs instanceof Map)) throw new PyError(`'${pyStr(where)}' is not a mapping`);
    return memoised(specs, pyStr(where), axes, () => {
      for (const [pattern, spec] of specs as PyDict) {
        const problem = specProblemOf(`${pyStr(where)}[${pyRepr(pattern)}]`, spec, axes);
        if (problem !== null) return problem;
      }
      return null;
    });
  },
};

export type Lookup = (key: string) => Py;

/** The expression's value, as Python computes it; UNKNOWN where it depends on what the editor cannot know. */
export function evaluate(e: Expr, get: Lookup): Py {
  switch (e.k) {
    case 'lit':
      return e.v;
    case 'key':
      return get(e.key);
    case 'tuple':
      return new PyTuple(e.items.map((x) => evaluate(x, get)));
    case 'and':
    case 'or': {
      let v = evaluate(e.items[0], get);
      for (const x of e.items.slice(1)) {
        const t = truthy(v);
        if (t === undefined) return UNKNOWN;
        if (e.k === 'and' ? !t : t) return v;
        v = evaluate(x, get);
      }
      return v;
    }
    case 'not': {
      const t = truth(e.x, get);
      return t === undefined ? UNKNOWN : !t;
    }
    case 'neg':
      return pyNeg(evaluate(e.x, get));
    case 'bin':
      return pyArith(e.op, evaluate(e.a, get), evaluate(e.b, get));
    case 'call': {
      const fn = FUNCTIONS[e.fn];
      if (!fn) throw new PyError(`no function ${e.fn}`);
      return fn(e.args.map((x) => evaluate(x, get)));
    }
    case 'cmp': {
      const a = evaluate(e.a, get);
      const b = evaluate(e.b, get);
      if (e.op === '==' || e.op === '!=') {
        const eq = pyEq(a, b);
        return eq === undefined ? UNKNOWN : e.op === '==' ? eq : !eq;
      }
      if (e.op === 'in' || e.op === 'not in') {
        const r = pyIn(a, b);
        return isUnknown(r) ? UNKNOWN : e.op === 'in' ? r : !r;
      }
      return e.op === '<' || e.op === '<=' ? pyLess(a, b, e.op === '<=') : pyLess(b, a, e.op === '>=');
    }
  }
}

/**
 * The expression's truth, where only that matters (a check, an alias's `when`): `a and b` is false as soon as
 * one operand is known false, even when another is unknown. An error Python would raise makes it unknown.
 */
export function truth(e: Expr, get: Lookup): boolean | undefined {
  try {
    if (e.k === 'and' || e.k === 'or') {
      let unknown = false;
      for (const x of e.items) {
        const t = truth(x, get);
        if (t === undefined) unknown = true;
        else if (e.k === 'and' ? !t : t) return t;
      }
      return unknown ? undefined : e.k === 'and';
    }
    if (e.k === 'not') {
      const t = truth(e.x, get);
      return t === undefined ? undefined : !t;
    }
    return truthy(evaluate(e, get));
  } catch (err) {
    if (err instanceof PyError) return undefined;
    throw err;
  }
}

/** A message with each `{expression}` filled with str() of its value, as rules.py's fill() does. */
export function fillMessage(template: string, get: Lookup): string {
  let out = '';
  let depth = 0;
  let start = 0;
  let from = 0;
  for (let j = 0; j < template.length; j++) {
    const c = template[j];
    if (c === '{') {
      if (depth === 0) {
        out += template.slice(from, j);
        start = j + 1;
      }
      depth++;
    } else if (c === '}' && depth > 0 && --depth === 0) {
      let v: Py;
      try {
        v = evaluate(parseRule(template.slice(start, j)), get);
      } catch {
        v = UNKNOWN;
      }
      out += pyStr(v);
      from = j + 1;
    }
  }
  return out + template.slice(from);
}

interface RulesJson {
  aliases?: { when: string; set: [string, string][] }[];
  checks?: { check: string; message: string }[];
}

/** The schema's `x-rules`, parsed; undefined when it has none or a rule this parser cannot read. */
export function loadRules(json: unknown): TrainerRules | undefined {
  if (!json || typeof json !== 'object') return undefined;
  const r = json as RulesJson;
  try {
    const aliases = (r.aliases ?? []).map((a) => {
      const when = parseRule(a.when);
      const set = a.set.map(([key, value]) => ({ key, value: parseRule(value) }));
      const keys = keysOf(when);
      for (const s of set) keysOf(s.value, keys);
      return { when, set, keys };
    });
    const checks = (r.checks ?? []).map((c) => {
      const check = parseRule(c.check);
      return { check, message: c.message, keys: keysOf(check) };
    });
    return { aliases, checks };
  } catch (e) {
    if (e instanceof RuleSyntaxError) return undefined;
    throw e;
  }
}
