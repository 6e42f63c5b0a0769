#!/usr/bin/env node
// Regenerates the generic part of the flag catalog (language-server/src/flags/xla-generic.json) from XLA's own
// sources: every `tsl::Flag(...)` registered in xla/debug_options_flags.cc, its type (from the setter used), its
// default (from DefaultDebugOptionsIgnoringFlags), and enum values (from xla/xla.proto's DebugOptions enums).
// Only facts are taken: names, types, defaults, enum values. XLA's help text is NOT copied; the one-line meaning is
// written by describeFlag() below from the flag's own name, in our words.
//
//   node language-server/scripts/gen-xla-flags.mjs PATH/debug_options_flags.cc PATH/xla.proto [--source LABEL] [--out FILE]
//
// The XLA sources are inputs only; they are not committed.
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeFlag } from './describe-flag.mjs';

const args = process.argv.slice(2);
const labelAt = args.indexOf('--source');
const label = labelAt >= 0 ? args.splice(labelAt, 2)[1] : 'openxla/xla xla/debug_options_flags.cc';
const outAt = args.indexOf('--out');
const outArg = outAt >= 0 ? args.splice(outAt, 2)[1] : undefined;
const [ccFile, protoFile] = args;
if (!ccFile || !protoFile) {
  console.error('usage: gen-xla-flags.mjs debug_options_flags.cc xla.proto [--source LABEL] [--out FILE]');
  process.exit(2);
}
const cc = readFileSync(ccFile, 'utf8');
const here0 = path.dirname(fileURLToPath(import.meta.url));
/** Hand-written meanings for the most used flags (our words); the rest get describeFlag's sentence. */
const notes = JSON.parse(readFileSync(path.join(here0, 'xla-flag-notes.json'), 'utf8'));
const proto = readFileSync(protoFile, 'utf8');

/** DebugOptions enums and field types from xla.proto (the message is nested-brace aware). */
function parseProto(text) {
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
  for (const m of body.matchAll(/^\s*(repeated\s+)?([\w.]+)\s+(xla_\w+)\s*=\s*\d+/gm)) {
    fields.set(m[3], { type: m[2], repeated: Boolean(m[1]) });
  }
  return { enums, fields };
}

/** Reads one C++ call's arguments from `open` (just after its '('), honouring strings and nesting. */
function callArgs(text, open) {
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

const { enums, fields } = parseProto(proto);
const defaults = parseDefaults(cc);

/** Custom setters `auto setter_for_X = [...](PARAMS) {...}`: what they parse. */
function customSetterType(name) {
  const at = cc.indexOf(`auto ${name} =`);
  if (at < 0) return undefined;
  // The lambda may hold nested lambdas: it ends where the next top-level statement of the function starts.
  const next = cc.slice(at + 1).search(/\n  (auto |flag_list->)/);
  const body = cc.slice(at, next < 0 ? undefined : at + 1 + next);
  const parsed = /(\w+)_Parse\(/.exec(body);
  // A setter that splits its input takes a comma-separated list of enum values.
  if (parsed && enums.has(parsed[1]) && /StrSplit/.test(body)) return { type: 'string', list: true, values: enums.get(parsed[1]) };
  if (parsed && enums.has(parsed[1])) return { type: 'enum', values: enums.get(parsed[1]) };
  if (/\]\s*\(\s*bool\b/.test(body)) return { type: 'bool' };
  if (/\]\s*\(\s*(int|int32_t|int64_t)\b/.test(body)) return { type: 'int' };
  return { type: 'string' };
}

function flagType(name, setter) {
  if (/^bool_setter_for\b/.test(setter)) return { type: 'bool' };
  if (/^int(32|64)_setter_for\b/.test(setter)) return { type: 'int' };
  if (/^float_setter_for\b/.test(setter)) return { type: 'float' };
  // Before the `->mutable_` test: a repeated-enum setter also mentions a mutable_ field in its arguments.
  const rep = /^SetterForRepeatedEnum<DebugOptions::(\w+)>\("[^"]*",(?:\/\*[^*]*\*\/)?"([^"]*)"/.exec(setter);
  if (rep) {
    // Users write the names without the enum's prefix (e.g. `dot` for LIBRARY_FUSION_TYPE_DOT), in any case.
    const values = (enums.get(rep[1]) ?? []).map((v) => (rep[2] && v.startsWith(rep[2]) ? v.slice(rep[2].length) : v));
    return { type: 'string', list: true, values };
  }
  if (/^(uppercase_)?string_setter_for\b/.test(setter) || /^debug_options->mutable_/.test(setter)) return { type: 'string' };
  if (/^setter_for_\w+$/.test(setter)) return customSetterType(setter) ?? { type: 'string' };
  // A bare variable (e.g. a pointer to a local) or anything unrecognised: fall back on the proto field type.
  const field = fields.get(name);
  if (field) {
    if (field.type === 'bool') return { type: 'bool' };
    if (/^u?int(32|64)$/.test(field.type)) return { type: 'int' };
    if (field.type === 'float' || field.type === 'double') return { type: 'float' };
    if (enums.has(field.type)) return { type: 'enum', values: enums.get(field.type) };
  }
  return { type: 'string' };
}

const flags = [];
const seen = new Set();
for (const m of cc.matchAll(/tsl::Flag\(/g)) {
  const a = callArgs(cc, m.index + m[0].length);
  const name = literal(a[0]);
  if (typeof name !== 'string' || !name.startsWith('xla_') || seen.has(name)) continue;
  seen.add(name);
  const t = flagType(name, a[1].replace(/\s+/g, ''));
  // 4 arguments: (name, setter, default, help); 3: (name, pointer, help) where the default is in the proto.
  let def = literal(defaults.get(name));
  if (def === undefined && a.length >= 4) def = literal(a[2].replace(/\s+/g, ''));
  if (def === undefined && a.length >= 4 && /^debug_options->(xla_\w+)\(\)$/.test(a[2].replace(/\s+/g, ''))) {
    // Not set in the defaults function: the proto3 zero value is the default.
    def = t.type === 'bool' ? false : t.type === 'int' || t.type === 'float' ? 0 : t.type === 'enum' ? t.values?.[0] : undefined;
  }
  const platform = name.startsWith('xla_gpu_') ? 'gpu' : name.startsWith('xla_cpu_') ? 'cpu' : 'any';
  const entry = { name, type: t.type };
  if (t.list) entry.list = true;
  if (t.values && t.values.length) entry.values = t.values;
  if (def !== undefined && def !== '') entry.default = def;
  entry.scope = 'xla';
  entry.platform = platform;
  entry.doc = typeof notes[name] === 'string' ? notes[name] : describeFlag(name, t.type);
  entry.source = label;
  flags.push(entry);
}
flags.sort((x, y) => x.name.localeCompare(y.name));

const here = path.dirname(fileURLToPath(import.meta.url));
const outFile = outArg ? path.resolve(outArg) : path.join(here, '..', 'src', 'flags', 'xla-generic.json');
writeFileSync(outFile, JSON.stringify(flags, null, 1) + '\n');
const byType = flags.reduce((acc, f) => ({ ...acc, [f.type]: (acc[f.type] ?? 0) + 1 }), {});
console.log(`wrote ${flags.length} flags to ${path.relative(process.cwd(), outFile)}`, byType);
