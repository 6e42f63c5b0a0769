/**
 * Python values as the trainer's rules see them (tpu_trainer/rules.py runs on Python objects): int and float
 * kept apart (a float prints as `2.0`), dicts in insertion order, tuples apart from lists, and Python's
 * truthiness, equality, ordering and arithmetic. `UNKNOWN` stands for a value the editor cannot know (an
 * environment variable, a resolver, a sweep it did not expand); anything computed from it is unknown too.
 */

/** The one value that stands for "not known here". */
export class Unknown {
  readonly kind = 'unknown';
}
export const UNKNOWN = new Unknown();

/** A Python float (a JS number alone is a Python int). */
export class PyFloat {
  constructor(readonly v: number) {}
}

export class PyTuple {
  constructor(readonly items: Py[]) {}
}

export type Py = null | boolean | number | string | PyFloat | PyTuple | Py[] | PyDict | Unknown;
export type PyDict = Map<string, Py>;

/** Raised where Python would raise (a TypeError, a ZeroDivisionError): the rule's verdict is then unknown. */
export class PyError extends Error {}

export const isUnknown = (v: unknown): v is Unknown => v instanceof Unknown;

/** The value as a JS number when it is a Python number or bool, else undefined. */
function num(v: Py): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (v instanceof PyFloat) return v.v;
  return undefined;
}

/** Python's bool(v); undefined when v is unknown (or holds unknowns where that matters). */
export function truthy(v: Py): boolean | undefined {
  if (isUnknown(v)) return undefined;
  if (v === null) return false;
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return v !== 0;
  if (v instanceof PyFloat) return v.v !== 0;
  if (typeof v === 'string') return v.length > 0;
  if (v instanceof PyTuple) return v.items.length > 0;
  if (Array.isArray(v)) return v.length > 0;
  return v.size > 0;
}

/** Python's a == b; undefined when either side is unknown. */
export function pyEq(a: Py, b: Py): boolean | undefined {
  if (isUnknown(a) || isUnknown(b)) return undefined;
  const na = num(a);
  const nb = num(b);
  if (na !== undefined || nb !== undefined) return na !== undefined && nb !== undefined && na === nb;
  if (a === null || b === null || typeof a === 'string' || typeof b === 'string') return a === b;
  if (a instanceof PyTuple || b instanceof PyTuple) {
    return a instanceof PyTuple && b instanceof PyTuple ? seqEq(a.items, b.items) : false;
  }
  if (Array.isArray(a) || Array.isArray(b)) return Array.isArray(a) && Array.isArray(b) ? seqEq(a, b) : false;
  const ma = a as PyDict;
  const mb = b as PyDict;
  if (ma.size !== mb.size) return false;
  let all: boolean | undefined = true;
  for (const [k, v] of ma) {
    if (!mb.has(k)) return false;
    const e = pyEq(v, mb.get(k)!);
    if (e === false) return false;
    if (e === undefined) all = undefined;
  }
  return all;
}

function seqEq(a: Py[], b: Py[]): boolean | undefined {
  if (a.length !== b.length) return false;
  let all: boolean | undefined = true;
  for (let i = 0; i < a.length; i++) {
    const e = pyEq(a[i], b[i]);
    if (e === false) return false;
    if (e === undefined) all = undefined;
  }
  return all;
}

/** Python's `<` (numbers with numbers, strings with strings); PyError otherwise, as Python's TypeError. */
export function pyLess(a: Py, b: Py, orEqual: boolean): Py {
  if (isUnknown(a) || isUnknown(b)) return UNKNOWN;
  const na = num(a);
  const nb = num(b);
  if (na !== undefined && nb !== undefined) return orEqual ? na <= nb : na < nb;
  if (typeof a === 'string' && typeof b === 'string') return orEqual ? a <= b : a < b;
  throw new PyError(`'<' not supported between ${typeName(a)} and ${typeName(b)}`);
}

/** Python's `a in b`. */
export function pyIn(a: Py, b: Py): Py {
  if (isUnknown(a) || isUnknown(b)) return UNKNOWN;
  if (typeof b === 'string') {
    if (typeof a !== 'string') throw new PyError("'in <string>' requires string as left operand");
    return b.includes(a);
  }
  if (b instanceof Map) return typeof a === 'string' ? b.has(a) : false;
  const items = b instanceof PyTuple ? b.items : Array.isArray(b) ? b : undefined;
  if (!items) throw new PyError(`argument of type '${typeName(b)}' is not iterable`);
  let unknown = false;
  for (const it of items) {
    const e = pyEq(a, it);
    if (e) return true;
    if (e === undefined) unknown = true;
  }
  return unknown ? UNKNOWN : false;
}

export type ArithOp = '+' | '-' | '*' | '//' | '%';

/** Python's arithmetic on numbers (booleans count as 0/1; a float operand makes a float), and `+` on sequences. */
export function pyArith(op: ArithOp, a: Py, b: Py): Py {
  if (isUnknown(a) || isUnknown(b)) return UNKNOWN;
  const na = num(a);
  const nb = num(b);
  if (na === undefined || nb === undefined) {
    if (op === '+' && typeof a === 'string' && typeof b === 'string') return a + b;
    if (op === '+' && Array.isArray(a) && Array.isArray(b)) return [...a, ...b];
    throw new PyError(`unsupported operand types for ${op}: ${typeName(a)} and ${typeName(b)}`);
  }
  const float = a instanceof PyFloat || b instanceof PyFloat;
  let r: number;
  if (op === '+') r = na + nb;
  else if (op === '-') r = na - nb;
  else if (op === '*') r = na * nb;
  else {
    if (nb === 0) throw new PyError('division by zero');
    const q = Math.floor(na / nb);
    r = op === '//' ? q : na - nb * q;
  }
  return float ? new PyFloat(r) : r;
}

export function pyNeg(a: Py): Py {
  if (isUnknown(a)) return UNKNOWN;
  if (a instanceof PyFloat) return new PyFloat(-a.v);
  const n = num(a);
  if (n === undefined) throw new PyError(`bad operand type for unary -: ${typeName(a)}`);
  return -n;
}

function typeName(v: Py): string {
  if (v === null) return 'NoneType';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return 'int';
  if (typeof v === 'string') return 'str';
  if (v instanceof PyFloat) return 'float';
  if (v instanceof PyTuple) return 'tuple';
  if (Array.isArray(v)) return 'list';
  return isUnknown(v) ? 'unknown' : 'dict';
}

/** Python's repr() of a float: the shortest digits that round-trip, fixed between 1e-4 and 1e16, else `1e-05`. */
export function floatRepr(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const [mant, expText] = x.toExponential().split('e');
  const exp = Number(expText);
  const sign = mant.startsWith('-') ? '-' : '';
  const digits = mant.replace(/^-/, '').replace('.', '');
  if (exp >= -4 && exp < 16) {
    if (exp < 0) return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`;
    const intPart = digits.slice(0, exp + 1).padEnd(exp + 1, '0');
    const frac = digits.slice(exp + 1);
    return `${sign}${intPart}.${frac || '0'}`;
  }
  const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  return `${sign}${m}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
}

/** Python's repr() of a str: single quotes unless the text has one and no double quote. */
function strRepr(s: string): string {
  const q = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = q;
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '\\' || ch === q) out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (c < 0x20 || c === 0x7f) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return out + q;
}

export function pyRepr(v: Py): string {
  if (typeof v === 'string') return strRepr(v);
  if (v instanceof PyTuple) return `(${v.items.map(pyRepr).join(', ')}${v.items.length === 1 ? ',' : ''})`;
  if (Array.isArray(v)) return `[${v.map(pyRepr).join(', ')}]`;
  if (v instanceof Map) return `{${[...v].map(([k, x]) => `${strRepr(k)}: ${pyRepr(x)}`).join(', ')}}`;
  return pyStr(v);
}

/** Python's str(). */
export function pyStr(v: Py): string {
  if (isUnknown(v)) return '?';
  if (v === null) return 'None';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') return v;
  if (v instanceof PyFloat) return floatRepr(v.v);
  return pyRepr(v);
}

/** True when the value, or anything inside it, is unknown. */
export function holdsUnknown(v: Py): boolean {
  if (isUnknown(v)) return true;
  if (v instanceof PyTuple) return v.items.some(holdsUnknown);
  if (Array.isArray(v)) return v.some(holdsUnknown);
  if (v instanceof Map) return [...v.values()].some(holdsUnknown);
  return false;
}
