/**
 * The value hydra hands OmegaConf for a parsed override, as Python objects (hydra/_internal/grammar/
 * grammar_functions.py): primitives as they are, quoted strings as their text, and the functions evaluated:
 * the casts int/float/bool/str with Python's own conversions (so `int(twenty)` fails as it does in hydra),
 * and the sweeps (a,b / choice / range / sort / shuffle / tag) as the list of values a multirun goes over.
 */
import { PyFloat, UNKNOWN, floatRepr, isUnknown, type Py, type Unknown } from '../hydra/py-values';
import type { Element, FunctionCall, Sweep } from './hydra-override-grammar';

/** A sweep's values (`glob` and `interval` have values only their sweeper knows: UNKNOWN). */
export interface SweepValue {
  sweep: (Py | SweepValue)[] | Unknown;
}

export type HydraValue = Py | SweepValue;

export const isSweepValue = (v: HydraValue): v is SweepValue => typeof v === 'object' && v !== null && !(v instanceof Map) && !Array.isArray(v) && 'sweep' in v;

/** Why hydra refuses to evaluate a function of the override, in Python's words. */
export class HydraEvalError extends Error {
  constructor(
    message: string,
    readonly call: FunctionCall,
  ) {
    super(message);
  }
}

const PY_INT = /^\s*[+-]?\d(?:_?\d)*\s*$/;
const PY_FLOAT = /^\s*[+-]?(?:(?:\d(?:_?\d)*)?\.\d(?:_?\d)*(?:[eE][+-]?\d(?:_?\d)*)?|\d(?:_?\d)*\.?(?:[eE][+-]?\d(?:_?\d)*)?|inf(?:inity)?|nan)\s*$/i;

/** Python's repr() of a str, for the messages Python's int()/float() give. */
const quote = (s: string) => (s.includes("'") && !s.includes('"') ? `"${s}"` : `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`);

/** Python's float(str), or undefined where Python raises. */
export function pyParseFloat(s: string): number | undefined {
  if (!PY_FLOAT.test(s)) return undefined;
  const t = s.trim().replace(/_/g, '').toLowerCase();
  if (/inf/.test(t)) return t.startsWith('-') ? -Infinity : Infinity;
  return t.endsWith('nan') ? NaN : Number(t);
}

type Cast = 'int' | 'float' | 'bool' | 'str';

function castScalar(fn: Cast, v: Py, call: FunctionCall): Py {
  const fail = (m: string): never => {
    throw new HydraEvalError(`${m}`, call);
  };
  if (isUnknown(v)) return UNKNOWN;
  if (v === null || (typeof v === 'object' && !(v instanceof PyFloat))) {
    return fail(`hydra cannot cast null with ${fn}() (its cast functions take a number, a string or a boolean)`);
  }
  const n = typeof v === 'boolean' ? (v ? 1 : 0) : typeof v === 'number' ? v : undefined;
  switch (fn) {
    case 'int':
      if (typeof v === 'string') {
        if (!PY_INT.test(v)) fail(`invalid literal for int() with base 10: ${quote(v)}`);
        return Number(v.trim().replace(/_/g, ''));
      }
      if (v instanceof PyFloat) {
        if (Number.isNaN(v.v)) fail('cannot convert float NaN to integer');
        if (!Number.isFinite(v.v)) fail('cannot convert float infinity to integer');
        return Math.trunc(v.v);
      }
      return n!;
    case 'float':
      if (typeof v === 'string') {
        const f = pyParseFloat(v);
        if (f === undefined) fail(`could not convert string to float: ${quote(v)}`);
        return new PyFloat(f!);
      }
      return new PyFloat(v instanceof PyFloat ? v.v : n!);
    case 'bool':
      if (typeof v === 'string') {
        if (v.toLowerCase() === 'true') return true;
        if (v.toLowerCase() === 'false') return false;
        return fail(`Cannot cast ${quote(v)} to bool`);
      }
      return v instanceof PyFloat ? v.v !== 0 : n !== 0;
    case 'str':
      if (typeof v === 'boolean') return v ? 'true' : 'false';
      if (v instanceof PyFloat) return floatRepr(v.v);
      return String(v);
  }
}

function cast(fn: Cast, v: HydraValue, call: FunctionCall): HydraValue {
  if (isSweepValue(v)) {
    if (isUnknown(v.sweep)) return v;
    return { sweep: v.sweep.map((x) => cast(fn, x, call)) };
  }
  if (Array.isArray(v)) return v.map((x) => cast(fn, x, call) as Py);
  if (v instanceof Map) return new Map([...v].map(([k, x]) => [k, cast(fn, x, call) as Py]));
  return castScalar(fn, v, call);
}

function numberOf(v: HydraValue): number | undefined {
  if (typeof v === 'number') return v;
  if (v instanceof PyFloat) return v.v;
  return undefined;
}

function rangeValues(call: FunctionCall, args: HydraValue[], named: Map<string, HydraValue>): SweepValue {
  const start = args.length >= 2 ? args[0] : (named.get('start') ?? (args.length === 1 ? 0 : undefined));
  const stop = args.length >= 2 ? args[1] : args.length === 1 ? args[0] : named.get('stop');
  const step = args[2] ?? named.get('step') ?? 1;
  const [a, b, s] = [start, stop, step].map((x) => (x === undefined ? undefined : numberOf(x)));
  if (a === undefined || b === undefined || s === undefined || s === 0) return { sweep: UNKNOWN };
  const float = [start, stop, step].some((x) => x instanceof PyFloat);
  const out: Py[] = [];
  for (let i = 0, x = a; s > 0 ? x < b : x > b; i++, x = a + s * i) {
    if (out.length > 1000) return { sweep: UNKNOWN };
    out.push(float ? new PyFloat(x) : x);
  }
  void call;
  return { sweep: out };
}

function callValue(call: FunctionCall): HydraValue {
  const args: HydraValue[] = [];
  const named = new Map<string, HydraValue>();
  for (const a of call.args) {
    const v = elementValue(a.value);
    if (a.name === undefined) args.push(v);
    else named.set(a.name, v);
  }
  const name = call.name;
  if (name === 'int' || name === 'float' || name === 'bool' || name === 'str') {
    for (const k of named.keys()) if (k !== 'value') throw new HydraEvalError(`got an unexpected keyword argument '${k}'`, call);
    if (args.length && named.size) throw new HydraEvalError('cannot use both position and named arguments', call);
    if (!args.length && !named.size) throw new HydraEvalError('No positional args or value specified', call);
    const v = named.get('value') ?? (args.length === 1 ? args[0] : { sweep: args });
    return cast(name, v, call);
  }
  if (name === 'choice') return { sweep: args.flatMap((a) => (isSweepValue(a) && !isUnknown(a.sweep) ? a.sweep : [a])) };
  if (name === 'range') return rangeValues(call, args, named);
  if (name === 'sort' || name === 'shuffle') {
    // One list: a list, sorted (or shuffled); anything else is a sweep over the same values.
    if (args.length === 1 && Array.isArray(args[0])) return name === 'sort' ? [...args[0]].sort(pyOrder) : { sweep: UNKNOWN };
    const items = args.length === 1 && isSweepValue(args[0]) ? args[0].sweep : args;
    return { sweep: isUnknown(items) ? UNKNOWN : (items as Py[]) };
  }
  if (name === 'tag') {
    const last = args[args.length - 1];
    return last !== undefined && isSweepValue(last) ? last : { sweep: UNKNOWN };
  }
  return { sweep: UNKNOWN };
}

function pyOrder(a: Py, b: Py): number {
  const x = numberOf(a) ?? String(a);
  const y = numberOf(b) ?? String(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** The Python value hydra gives for a parsed element (HydraEvalError where hydra refuses to evaluate). */
export function elementValue(el: Element | Sweep): HydraValue {
  switch (el.kind) {
    case 'sweep':
      return { sweep: el.items.map((x) => elementValue(x) as Py) };
    case 'list':
      return el.items.map((x) => elementValue(x) as Py);
    case 'dict':
      return new Map(el.entries.map((e) => [e.key, elementValue(e.value) as Py]));
    case 'function':
      return callValue(el);
    case 'primitive':
      if (el.type === 'float') return new PyFloat(el.value as number);
      return el.value;
  }
}
