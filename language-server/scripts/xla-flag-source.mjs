// Reads the facts about XLA's debug-option flags out of XLA's own sources: every `tsl::Flag(...)` registered in
// xla/debug_options_flags.cc, its type (from the setter that parses it), its default (from
// DefaultDebugOptionsIgnoringFlags, or the proto zero value) and its accepted values (from xla/xla.proto's
// DebugOptions enums, or from the literal spellings a hand-written parser compares against). Only facts come out:
// names, types, defaults, values. Help text is never read.

/** DebugOptions enums and field types from xla.proto (the message is nested-brace aware). */
export function parseProto(text) {
  const start = text.indexOf('message DebugOptions {');
  if (start < 0) throw new Error('xla.proto: message DebugOptions not found');
  let depth = 0;
  let end = start;
  for (let i = text.indexOf('{', start); i < text.length; i++) {
    if (text[i] === '{') depth++;
    else if (text[i] === '}' && --depth === 0) {
      end = i;
      break;
    }
  }
  const body = text.slice(start, end).replace(/\/\/.*$/gm, '');
  const enums = new Map();
  for (const m of body.matchAll(/enum\s+(\w+)\s*\{([^}]*)\}/g)) {
    enums.set(m[1], [...m[2].matchAll(/(\w+)\s*=\s*-?\d+/g)].map((v) => v[1]));
  }
  const fields = new Map();
  // proto3 fields may carry `optional` (explicit presence) or `repeated`.
  for (const m of body.matchAll(/^\s*(?:(repeated|optional)\s+)?([\w.]+)\s+(xla_\w+)\s*=\s*\d+/gm)) {
    fields.set(m[3], { type: m[2], repeated: m[1] === 'repeated' });
  }
  return { enums, fields };
}

/** Reads one C++ call's arguments from `open` (just after its '('), honouring strings, comments and nesting. */
export function callArgs(text, open) {
  const out = [];
  let depth = 0;
  let cur = '';
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      cur += text.slice(i, j + 1);
      i = j;
      continue;
    }
    if (c === '/' && text[i + 1] === '*') {
      i = text.indexOf('*/', i + 2) + 1;
      continue;
    }
    if (c === '/' && text[i + 1] === '/') {
      i = text.indexOf('\n', i);
      continue;
    }
    if (c === '(' || c === '{' || c === '[') depth++;
    if (c === ')' || c === '}' || c === ']') {
      if (depth === 0) {
        out.push(cur.trim());
        return out;
      }
      depth--;
    }
    if (c === ',' && depth === 0) {
      out.push(cur.trim());
      cur = '';
    } else cur += c;
  }
  throw new Error('unbalanced call');
}

/** Defaults set in DefaultDebugOptionsIgnoringFlags: `opts.set_NAME(VALUE);`. */
function parseDefaults(text) {
  const defaults = new Map();
  for (const m of text.matchAll(/opts\.set_(xla_\w+)\(/g)) {
    const [value] = callArgs(text, m.index + m[0].length);
    defaults.set(m[1], value.replace(/\s+/g, ' '));
  }
  return defaults;
}

/** A C++ default expression → a JSON value, when it is a plain literal or an enum constant. */
function literal(expr) {
  if (expr === undefined) return undefined;
  if (expr === 'true' || expr === 'false') return expr === 'true';
  if (/^-?\d+(\.\d+)?(e-?\d+)?f?$/i.test(expr)) return Number(expr.replace(/f$/i, ''));
  if (/^-?\d+LL$/.test(expr)) return Number(expr.slice(0, -2));
  const s = /^"((?:[^"\\]|\\.)*)"$/.exec(expr);
  if (s) return s[1];
  const e = /^DebugOptions::(\w+)$/.exec(expr);
  if (e) return e[1];
  return undefined;
}

/** The C++ parameter type a value-taking lambda declares → our type, or undefined for text parameters. */
function paramType(cType) {
  if (/^bool$/.test(cType)) return 'bool';
  if (/^(int|int32_t|int64_t|uint32_t|uint64_t|size_t)$/.test(cType)) return 'int';
  if (/^(float|double)$/.test(cType)) return 'float';
  return undefined;
}

/** Everything the flags file defines, as facts: [{ name, type, list?, values?, default? }], sorted by name. */
export function readFlagFacts(cc, proto) {
  const { enums, fields } = parseProto(proto);
  const defaults = parseDefaults(cc);

  /** The text of `auto NAME = <lambda>;` up to the next top-level statement of the function. */
  function lambdaText(name) {
    const at = cc.search(new RegExp(`\\bauto ${name} =`));
    if (at < 0) return undefined;
    const next = cc.slice(at + 1).search(/\n {2}(auto |flag_list->|\/\/)/);
    return cc.slice(at, next < 0 ? undefined : at + 1 + next);
  }

  /** A parser's text plus the helper lambdas it calls (one level), e.g. a shared `detection_mode` sub-parser. */
  function withHelpers(text) {
    let all = text;
    for (const m of text.matchAll(/\b([a-z]\w*)\(/g)) {
      if (/_setter_for$|^setter_for_/.test(m[1]) || all.includes(`auto ${m[1]} =`)) continue;
      const helper = lambdaText(m[1]);
      if (helper) all += '\n' + helper;
    }
    return all;
  }

  /** What a hand-written parser accepts, from its text. */
  function parserType(text) {
    const split = /StrSplit/.test(text);
    const parsed = [...text.matchAll(/(\w+)_Parse\(/g)].map((p) => p[1]).find((e) => enums.has(e));
    if (parsed) return split ? { type: 'string', list: true, values: enums.get(parsed) } : { type: 'enum', values: enums.get(parsed) };
    // The lambda that receives the flag's value is the last `](TYPE` in the text (factories wrap one inside).
    const params = [...text.matchAll(/\]\s*\(\s*(?:const\s+)?([\w:]+)/g)].map((p) => p[1]);
    const t = params.length ? paramType(params[params.length - 1]) : undefined;
    if (t) return { type: t };
    // A parser that compares the text against fixed spellings accepts exactly those.
    const words = [...new Set([...text.matchAll(/\b\w+\s*==\s*"([A-Za-z0-9_]+)"/g)].map((w) => w[1]))];
    if (words.length >= 2) return split ? { type: 'string', list: true, values: words } : { type: 'enum', values: words };
    return undefined;
  }

  function fieldType(name) {
    const field = fields.get(name);
    if (!field || field.repeated) return undefined;
    if (field.type === 'bool') return { type: 'bool' };
    if (/^u?int(32|64)$/.test(field.type)) return { type: 'int' };
    if (field.type === 'float' || field.type === 'double') return { type: 'float' };
    if (enums.has(field.type)) return { type: 'enum', values: enums.get(field.type) };
    return undefined;
  }

  function flagType(name, rawSetter) {
    const setter = rawSetter.replace(/\s+/g, '');
    if (/^bool_setter_for\b/.test(setter)) return { type: 'bool' };
    if (/^int(32|64)_setter_for\b/.test(setter)) return { type: 'int' };
    if (/^float_setter_for\b/.test(setter)) return { type: 'float' };
    const noop = /^noop_flag_setter<([\w:]+)>$/.exec(setter);
    if (noop) return paramType(noop[1]) ? { type: paramType(noop[1]) } : { type: 'string' };
    // Before the `->mutable_` test: a repeated-enum setter also mentions a mutable_ field in its arguments.
    const rep = /^SetterForRepeatedEnum<(?:\w+::)*(\w+)>\("[^"]*","([^"]*)"/.exec(setter);
    if (rep) {
      // Users write the names without the enum's prefix (e.g. `dot` for LIBRARY_FUSION_TYPE_DOT), in any case.
      const values = (enums.get(rep[1]) ?? []).map((v) => (rep[2] && v.startsWith(rep[2]) ? v.slice(rep[2].length) : v));
      return values.length ? { type: 'string', list: true, values } : { type: 'string', list: true };
    }
    if (/^(uppercase_)?string_setter_for\b/.test(setter) || /^duration_setter_for\b/.test(setter) || /^debug_options->mutable_/.test(setter)) return { type: 'string' };
    // An inline lambda, a named parser (`setter_for_x`), or a parser factory applied to a field (`x_setter_for(&...)`).
    let text;
    if (setter.startsWith('[')) text = withHelpers(rawSetter);
    else {
      const ident = /^(\w+)/.exec(setter)?.[1];
      const found = ident ? lambdaText(ident) : undefined;
      if (found) text = withHelpers(found);
    }
    return (text && parserType(text)) ?? fieldType(name) ?? { type: 'string' };
  }

  /** A default spelled as an enum constant, in the spelling the flag accepts (`DETECTION_MODE_NONE` → `none`). */
  function inValues(def, values) {
    if (typeof def !== 'string' || !values) return def;
    const exact = values.find((v) => v.toLowerCase() === def.toLowerCase());
    if (exact) return exact;
    return values.find((v) => def.toLowerCase().endsWith('_' + v.toLowerCase()));
  }

  const flags = [];
  const seen = new Set();
  for (const m of cc.matchAll(/tsl::Flag\(/g)) {
    const a = callArgs(cc, m.index + m[0].length);
    const name = literal(a[0]);
    if (typeof name !== 'string' || seen.has(name)) continue;
    seen.add(name);
    const t = flagType(name, a[1]);
    // 4 arguments: (name, setter, default, help); 3: (name, pointer, help) where the default is in the proto.
    const shown = a.length >= 4 ? a[2].replace(/\s+/g, '') : '';
    let def = literal(defaults.get(name));
    // A shown default in brackets (`(none)`) is a placeholder for display, not a value.
    if (def === undefined && !/^"\(.*\)"$/.test(shown)) def = literal(shown);
    if (def === undefined && new RegExp(`debug_options->${name}\\(\\)`).test(shown)) {
      // Not set in the defaults function: the proto3 zero value is the default.
      const zero = fieldType(name);
      def = t.type === 'bool' ? false : t.type === 'int' || t.type === 'float' ? 0 : zero?.values?.[0];
    }
    if (t.type === 'bool' && typeof def !== 'boolean') def = undefined;
    if ((t.type === 'int' || t.type === 'float') && typeof def !== 'number') def = undefined;
    if (t.type === 'enum' || t.list) def = inValues(def, t.values);
    const fact = { name, type: t.type };
    if (t.list) fact.list = true;
    if (t.values && t.values.length) fact.values = t.values;
    if (def !== undefined && def !== '') fact.default = def;
    flags.push(fact);
  }
  return flags.sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
}
