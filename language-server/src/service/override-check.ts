/**
 * What hydra and OmegaConf do with one override of the trainer's config, decided without running them: the
 * grammar (hydra-override-grammar.ts), then hydra's rules for `+`, `++`, `~`, groups, packages and sweeps, then
 * OmegaConf's conversion of the value into the field's type (`yes`/`on`/`1` for a bool, `'20'` for an int, no
 * float into an int), the trainer's enum and minimum checks, and interpolation targets and resolvers.
 * An error means the run would stop; a warning means it would run, probably not as meant.
 */
import { omegaPieces } from '../hydra/compose';
import { BUILTIN_RESOLVERS, nodeAt, typeText, type HydraModel, type SchemaNode } from '../hydra/model';
import { PyFloat } from '../hydra/py-values';
import { didYouMean } from './fuzzy';
import { leaves, parseHydraOverride, OverrideSyntaxError, type Element, type ParsedOverride, type Primitive, type Sweep } from './hydra-override-grammar';
import { HydraEvalError, elementValue, isSweepValue } from './hydra-values';

export interface Problem {
  /** Offsets into the override text. */
  start: number;
  end: number;
  message: string;
  code: string;
  severity: 'error' | 'warning';
  suggestions?: string[];
}

/** hydra's sweep functions (BasicSweeper runs choice/range/glob and simple `a,b` lists; interval needs another sweeper). */
const SWEEPS = new Set(['choice', 'range', 'interval', 'glob', 'sort', 'shuffle', 'tag']);
const CASTS = new Set(['int', 'float', 'str', 'bool']);
/** The functions hydra-core 1.3 registers for overrides. */
const FUNCTIONS = new Set([...SWEEPS, ...CASTS]);

/** What the rest of the command line says that one override's check needs: the option each group ends with. */
export interface LineContext {
  /** Group → the option the line's last `group=option` picks. */
  choices: Map<string, string>;
}

/** The option a group holds once the line's overrides are in (what `~group=option` must name). */
export function currentOption(model: HydraModel, group: string, ctx: LineContext | undefined): string | undefined {
  const picked = ctx?.choices.get(group);
  if (picked !== undefined) return picked;
  const slash = group.lastIndexOf('/');
  if (slash > 0) {
    const parent = currentOption(model, group.slice(0, slash), ctx);
    const preset = parent === undefined ? undefined : model.groups.get(group.slice(0, slash))?.options.get(parent)?.preset;
    for (const entry of preset?.defaults ?? []) {
      if (typeof entry === 'object' && typeof entry[group.slice(slash + 1)] === 'string') return entry[group.slice(slash + 1)] as string;
    }
  }
  return model.groups.get(group)?.default;
}

/** Checks one override; `multirun` when `-m`/`--multirun` is on the line. */
export function checkOverride(model: HydraModel, text: string, multirun: boolean, ctx?: LineContext): { parsed?: ParsedOverride; problems: Problem[] } {
  let o: ParsedOverride;
  try {
    o = parseHydraOverride(text);
  } catch (e) {
    if (!(e instanceof OverrideSyntaxError)) throw e;
    return { problems: [{ start: e.start, end: Math.max(e.end, e.start + 1), message: `${e.message} (in "${text}")`, code: 'override-syntax', severity: 'error' }] };
  }
  const problems: Problem[] = [];
  const err = (start: number, end: number, message: string, code: string, suggestions?: string[]) =>
    problems.push({ start, end, message, code, severity: 'error', suggestions });
  const warn = (start: number, end: number, message: string, code: string) => problems.push({ start, end, message, code, severity: 'warning' });
  const { key, prefix, value } = o;
  const ks = key.start;
  const ke = key.end;
  const kEnd = Math.max(ke, ks + 1);

  // Functions: unknown names, and sweeps without --multirun.
  if (value) {
    for (const f of functionsIn(value)) {
      if (!FUNCTIONS.has(f.name)) {
        const near = didYouMean(f.name, FUNCTIONS);
        err(f.start, f.end, `hydra has no function "${f.name}"${near.length ? `. Did you mean "${near[0]}"?` : ` (it has ${[...FUNCTIONS].join(', ')})`}`, 'unknown-function', near);
        return { parsed: o, problems };
      }
    }
    const sweep = isSweep(value);
    if (sweep && !multirun) {
      err(value.start, value.end, `${key.path}=${text.slice(value.start, value.end)} is a sweep: add --multirun (-m) to run one job per value, or write a list as [a,b] or quote the value to pass it as one string`, 'sweep-without-multirun');
      return { parsed: o, problems };
    }
    if (sweep && value.kind === 'function' && value.name === 'interval') {
      err(value.start, value.end, "interval() needs a sweeper plugin (optuna, ax, nevergrad); hydra's basic sweeper refuses it", 'interval-basic-sweeper');
      return { parsed: o, problems };
    }
    try {
      // A cast of several values (`int(1,2)`) is a sweep too.
      if (!multirun && isSweepValue(elementValue(value))) {
        err(value.start, value.end, `${key.path}=${text.slice(value.start, value.end)} is a sweep: add --multirun (-m) to run one job per value`, 'sweep-without-multirun');
        return { parsed: o, problems };
      }
    } catch (e) {
      if (!(e instanceof HydraEvalError)) throw e;
      const call = text.slice(e.call.start, e.call.end);
      err(e.call.start, e.call.end, `hydra cannot evaluate ${call}: ${e.message}`, 'function-error');
      return { parsed: o, problems };
    }
  }

  const group = model.groups.get(key.path);
  if (group) {
    const optionsText = [...group.options.keys()].join(', ');
    if (key.pkg !== undefined) err(ks, kEnd, `${key.path}@${key.pkg}: the defaults list has no ${key.path} in package "${key.pkg}" to override`, 'group-package');
    else if (prefix === '++') err(ks - 2, kEnd, `hydra cannot force-add a config group: write ${key.path}=${text.slice(o.valueStart)}`, 'group-force-add');
    else if (prefix === '+' && group.default !== undefined) err(ks - 1, kEnd, `${key.path} is already chosen (default ${group.default}): write ${key.path}=... to pick another option, without "+"`, 'group-append-exists');
    else if (prefix === '~' && group.default === undefined) err(ks - 1, kEnd, `${key.path} has no default to delete`, 'group-delete-missing');
    else if (prefix === '~' && value?.kind === 'primitive' && value.type !== 'null') {
      // hydra deletes only the entry the defaults list ends with, compared as written (no `.yaml` dropped).
      const current = currentOption(model, key.path, ctx);
      if (current !== undefined && String(value.value) !== current) {
        err(value.start, value.end, `hydra cannot delete ${key.path}=${String(value.value)}: the defaults list has ${key.path}=${current} (write ~${key.path} to drop whatever it is)`, 'group-delete-mismatch');
      }
    }
    if (problems.length) return { parsed: o, problems };
    if (!value) return { parsed: o, problems };
    for (const el of leaves(value)) {
      if (el.kind === 'function') continue; // glob(...) and friends filter the options
      if (el.kind !== 'primitive') {
        err(el.start, el.end, `${key.path} takes an option name (${optionsText})`, 'unknown-option');
        continue;
      }
      if (el.type === 'null') {
        if (prefix !== '~') err(el.start, el.end, `hydra cannot set the group ${key.path} to null: write ~${key.path} to drop it from the defaults list, or pick an option (${optionsText})`, 'group-null');
        continue;
      }
      const name = String(el.value).replace(/\.ya?ml$/, '');
      if (!group.options.has(name)) {
        const near = didYouMean(name, group.options.keys());
        err(el.start, el.end, `Unknown option "${name}" for group ${key.path}${near.length ? `. Did you mean "${near[0]}"?` : ` (options: ${optionsText})`}`, 'unknown-option', near);
      }
    }
    return { parsed: o, problems };
  }
  if (key.path.includes('/')) {
    const near = didYouMean(key.path, model.groups.keys());
    err(ks, kEnd, `Unknown config group "${key.path}"${near.length ? `. Did you mean "${near[0]}"?` : ''}`, 'unknown-group', near);
    return { parsed: o, problems };
  }
  if (key.pkg !== undefined) {
    err(ks, kEnd, `"@${key.pkg}" names a package, which only config groups have; ${key.path} is not a group`, 'package-on-key');
    return { parsed: o, problems };
  }

  const path = key.path.split('.');
  const node = nodeAt(model, path);
  const parent = nodeAt(model, path.slice(0, -1));
  if (!node) {
    const addable = (prefix === '+' || prefix === '++') && parent !== undefined && !parent.closed && path.length > 1;
    if (addable) return { parsed: o, problems };
    if (!parent && !model.root.closed && model.origin !== 'schema') return { parsed: o, problems };
    const near = keySuggestions(model, key.path, path, parent);
    const what = prefix === '+' || prefix === '++' ? `"${key.path}" cannot be added: ${parent?.closed || !parent ? 'the config has a fixed set of keys' : 'its parent is not a config node'}` : `Unknown config key "${key.path}"`;
    err(ks, kEnd, `${what}${near.length ? `. Did you mean "${near[0]}"?` : ''}`, 'unknown-key', near);
    return { parsed: o, problems };
  }
  if (prefix === '+') {
    err(ks - 1, kEnd, `"${key.path}" already exists: "+" only adds new keys (write ${key.path}=... to change it)`, 'override-exists');
    return { parsed: o, problems };
  }
  if (prefix === '~') {
    if (path.length > 1 && parent?.closed) err(ks - 1, kEnd, `hydra cannot delete ${key.path}: ${path.slice(0, -1).join('.')} has a fixed set of keys (set it instead)`, 'delete-fixed');
    else if (node.default === null) err(ks - 1, kEnd, `hydra cannot delete ${key.path}: it is null, which hydra treats as absent`, 'delete-missing');
    else if (value && value.kind === 'primitive' && node.default !== undefined && !sameScalar(node.default, value)) {
      // A key no preset sets keeps its default, so the mismatch is certain; under a group a preset may change it.
      const byPreset = [...model.groups.keys()].some((g) => key.path.startsWith(`${g.split('/')[0]}.`));
      if (!byPreset) err(value.start, value.end, `hydra deletes ${key.path} only if its value is ${text.slice(value.start)}, and it is ${JSON.stringify(node.default)}: write ~${key.path}`, 'delete-value');
      else warn(value.start, value.end, `~${key.path}=${text.slice(value.start)} deletes only if the value is ${JSON.stringify(node.default)} (its default); a preset may set another`, 'delete-value');
    }
    return { parsed: o, problems };
  }
  if (value) for (const p of checkValue(model, key.path, node, value)) problems.push(p);
  return { parsed: o, problems };
}

function* functionsIn(v: Element | Sweep): Generator<Extract<Element, { kind: 'function' }>> {
  if (v.kind === 'function') {
    yield v;
    for (const a of v.args) yield* functionsIn(a.value);
  } else if (v.kind === 'sweep' || v.kind === 'list') for (const it of v.items) yield* functionsIn(it);
  else if (v.kind === 'dict') for (const e of v.entries) yield* functionsIn(e.value);
}

function isSweep(v: Element | Sweep): boolean {
  if (v.kind === 'sweep') return true;
  if (v.kind !== 'function') return false;
  if (v.name === 'sort' || v.name === 'shuffle') return !(v.args.length === 1 && v.args[0].value.kind === 'list') || v.args.some((a) => isSweep(a.value));
  return SWEEPS.has(v.name) || v.args.some((a) => isSweep(a.value));
}

function sameScalar(d: unknown, p: Primitive): boolean {
  return String(d) === String(p.value);
}

/** Did-you-mean for keys: edit distance, and keys the typed word is a prefix or suffix of (`batch_size` → `global_batch_size`). */
export function keySuggestions(model: HydraModel, typed: string, path: string[], parent: SchemaNode | undefined): string[] {
  const prefix = path.slice(0, -1).join('.');
  const siblings = parent?.properties ? [...parent.properties.keys()].map((k) => (prefix ? `${prefix}.${k}` : k)) : [];
  const all = [...siblings, ...allLeafPaths(model.root), ...model.groups.keys()];
  const near = didYouMean(typed, parent ? [...siblings, ...model.groups.keys()] : all);
  const last = path[path.length - 1].toLowerCase();
  const affix = (parent ? siblings : all).filter((c) => {
    const leaf = c.split('.').pop()!.toLowerCase();
    return leaf !== last && last.length >= 3 && (leaf.startsWith(last) || leaf.endsWith(last) || leaf.startsWith(`${last}_`));
  });
  affix.sort((a, b) => a.length - b.length);
  // The same key under another node (`lr` → `optimizer.lr`), and a misspelt segment repaired (`hydra.runn.dir`).
  const sameLeaf = all.filter((c) => c !== typed && c.split('.').pop() === path[path.length - 1] && c.includes('.'));
  const repaired: string[] = [];
  let node: SchemaNode | undefined = model.root;
  for (let i = 0; i < path.length && node?.properties; i++) {
    const next: SchemaNode | undefined = node.properties.get(path[i]);
    if (!next) {
      for (const cand of didYouMean(path[i], node.properties.keys())) {
        const full = [...path.slice(0, i), cand, ...path.slice(i + 1)];
        if (nodeAt(model, full)) repaired.push(full.join('.'));
      }
      break;
    }
    node = next;
  }
  return [...new Set([...repaired, ...affix, ...sameLeaf, ...near])].slice(0, 3);
}

function allLeafPaths(n: SchemaNode, prefix = '', out: string[] = []): string[] {
  for (const [k, c] of n.properties ?? []) {
    const p = prefix ? `${prefix}.${k}` : k;
    out.push(p);
    if (k !== 'hydra') allLeafPaths(c, p, out);
  }
  return out;
}

type Kind = 'int' | 'float' | 'bool' | 'string' | 'null' | 'list' | 'dict' | 'unknown';

/** The value's kind and, for scalars, its value, as OmegaConf receives it. */
function kindOf(el: Element): { kind: Kind; value?: string | number | boolean | null } {
  if (el.kind === 'list') return { kind: 'list' };
  if (el.kind === 'dict') return { kind: 'dict' };
  if (el.kind === 'function') {
    let v;
    try {
      v = elementValue(el);
    } catch {
      return { kind: 'unknown' };
    }
    if (isSweepValue(v)) return { kind: 'unknown' };
    if (v instanceof PyFloat) return { kind: 'float', value: v.v };
    if (Array.isArray(v)) return { kind: 'list' };
    if (v instanceof Map) return { kind: 'dict' };
    if (typeof v === 'number') return { kind: 'int', value: v };
    if (typeof v === 'boolean') return { kind: 'bool', value: v };
    if (typeof v === 'string') return { kind: 'string', value: v };
    return v === null ? { kind: 'null', value: null } : { kind: 'unknown' };
  }
  return { kind: el.type === 'int' ? 'int' : el.type === 'float' ? 'float' : el.type === 'bool' ? 'bool' : el.type === 'null' ? 'null' : 'string', value: el.value };
}

const INT_TEXT = /^\s*[+-]?\d(?:_?\d)*\s*$/;
const FLOAT_TEXT = /^\s*[+-]?(?:(?:\d(?:_?\d)*)?\.?\d(?:_?\d)*(?:[eE][+-]?\d(?:_?\d)*)?|\d(?:_?\d)*\.|inf(?:inity)?|nan)\s*$/i;
const BOOL_WORDS = new Set(['y', 'yes', 'on', 'true', 'n', 'no', 'off', 'false']);

/** Why OmegaConf refuses the value for the node (or the trainer's enum/minimum does), or undefined. */
function conversionError(node: SchemaNode, kind: Kind, value: string | number | boolean | null | undefined, raw: string): string | undefined {
  const t = node.types;
  if (t.length === 0 || kind === 'unknown') return undefined;
  if (kind === 'null') return t.includes('null') ? undefined : `${typeText(node)} cannot be null`;
  const scalarField = !t.includes('object') && !t.includes('array');
  if (kind === 'list') return t.includes('array') ? undefined : `expected ${typeText(node)}, got a list ${raw}`;
  if (kind === 'dict') return t.includes('object') ? undefined : `expected ${typeText(node)}, got a dict ${raw}`;
  if (!scalarField && !t.includes('string') && !t.includes('integer') && !t.includes('number') && !t.includes('boolean')) {
    return t.includes('object') ? `is a config node; set its keys (key.sub=...) or give a dict {k: v}` : `expected ${typeText(node)}, got ${raw}`;
  }
  let converted: string | number | boolean | undefined;
  if (t.includes('string')) converted = kind === 'bool' ? (value ? 'True' : 'False') : kind === 'float' && typeof value === 'number' ? pyFloat(value) : String(value);
  else if (t.includes('integer') && !t.includes('number')) {
    if (kind === 'int') converted = value as number;
    else if (kind === 'string' && INT_TEXT.test(String(value))) converted = Number(String(value).replace(/_/g, ''));
    else return kind === 'float' ? `expected an integer, got the float ${raw} (OmegaConf does not round)` : `expected an integer, got ${kind === 'bool' ? 'the boolean' : 'the string'} ${raw}`;
  } else if (t.includes('number')) {
    if (kind === 'int' || kind === 'float') converted = value as number;
    else if (kind === 'string' && FLOAT_TEXT.test(String(value))) converted = Number(String(value).replace(/_/g, '').trim().replace(/^([+-]?)inf(inity)?$/i, '$1Infinity'));
    else return `expected a number, got ${kind === 'bool' ? 'the boolean' : 'the string'} ${raw}`;
  } else if (t.includes('boolean')) {
    if (kind === 'bool') converted = value as boolean;
    else if (kind === 'int') converted = value !== 0;
    else if (kind === 'string' && (INT_TEXT.test(String(value)) || BOOL_WORDS.has(String(value).toLowerCase()))) converted = true;
    else return `expected a boolean (true/false, yes/no, on/off, 1/0), got ${raw}`;
  }
  if (node.enum && converted !== undefined && !node.enum.some((e) => e === converted)) {
    const ci = node.enum.find((e) => typeof e === 'string' && e.toLowerCase() === String(converted).toLowerCase());
    return ci !== undefined ? `"${String(converted)}" is not one of ${node.enum.map((e) => JSON.stringify(e)).join(', ')} (case matters: write ${String(ci)})` : `"${String(converted)}" is not one of ${node.enum.map((e) => JSON.stringify(e)).join(', ')}`;
  }
  if (typeof converted === 'number' && node.minimum !== undefined && converted < node.minimum) return `${raw} is below the minimum ${node.minimum}`;
  if (typeof converted === 'number' && node.maximum !== undefined && converted > node.maximum) return `${raw} is above the maximum ${node.maximum}`;
  return undefined;
}

/** Python's str() of a float, for the common cases (`1.0`, `0.001`). */
function pyFloat(n: number): string {
  if (Number.isInteger(n) && Math.abs(n) < 1e16) return `${n}.0`;
  return String(n);
}

function checkValue(model: HydraModel, key: string, node: SchemaNode, v: Element | Sweep): Problem[] {
  const out: Problem[] = [];
  const items = v.kind === 'sweep' ? v.items : v.kind === 'function' && SWEEPS.has(v.name) ? [] : [v];
  for (const el of items) checkElement(model, key, node, el, out);
  return out;
}

function checkElement(model: HydraModel, key: string, node: SchemaNode, el: Element, out: Problem[]): void {
  const raw = el.kind === 'primitive' ? String(el.value) : '';
  if (el.kind === 'primitive' && el.type === 'string') {
    const s = String(el.value);
    if (s === '???') return;
    const open = s.indexOf('${');
    if (open >= 0 && !interpolationsBalanced(s)) {
      out.push({ start: el.start, end: el.end, message: `${key}: "${s}" has an unclosed \${ (OmegaConf cannot parse it)`, code: 'bad-interpolation', severity: 'error' });
      return;
    }
    // OmegaConf's reading: `\${` (an odd run of backslashes) is a literal `${`, resolved to that text.
    const pieces = omegaPieces(s);
    const live = (pieces ?? []).flatMap((p) => ('interp' in p ? [p.interp] : []));
    if (pieces && !live.length) {
      const literal = pieces.map((p) => ('text' in p ? p.text : '')).join('');
      const why = conversionError(node, 'string', literal, JSON.stringify(literal));
      if (why) out.push({ start: el.start, end: el.end, message: `${key}: ${why} (an escaped \${ is resolved to that text)`, code: 'wrong-type', severity: 'error' });
      return;
    }
    if (live.length) {
      for (const body of live) {
        const bad = interpolationProblem(model, body, key);
        if (bad) {
          out.push({ start: el.start, end: el.end, message: `${key}: \${${body}}: ${bad.message}`, code: 'bad-interpolation', severity: 'error', suggestions: bad.suggestions });
          return;
        }
      }
      // A value that is one interpolation takes the target's value: check that against this field's type.
      const whole = pieces!.length === 1 && /^[^}:]+$/.test(live[0]) ? [s, live[0]] : null;
      const target = whole && !whole[1].startsWith('.') ? nodeAt(model, whole[1].split('.')) : undefined;
      const d = target?.default;
      if (target && target.properties === undefined && (d === null || ['string', 'number', 'boolean'].includes(typeof d))) {
        const k: Kind = d === null ? 'null' : typeof d === 'boolean' ? 'bool' : typeof d === 'number' ? (Number.isInteger(d) && target.types.includes('integer') ? 'int' : 'float') : 'string';
        // A default that is itself interpolated: its literal text decides whether it can convert.
        const literal = typeof d === 'string' ? d.replace(/\$\{[^}]*\}/g, '') : d;
        const why = literal === '' ? undefined : conversionError(node, k, literal as string | number | boolean | null, `\${${whole![1]}} (${JSON.stringify(d)})`);
        if (why) out.push({ start: el.start, end: el.end, message: `${key}: ${why}`, code: 'wrong-type', severity: 'error' });
      }
      return;
    }
  }
  if (el.kind === 'list' || (el.kind === 'dict' && !(node.properties && node.closed))) {
    // Inside a list or a free-form dict nothing is converted, but every `${...}` must still resolve.
    for (const item of primitivesIn(el)) {
      if (item.type !== 'string') continue;
      for (const body of (omegaPieces(String(item.value)) ?? []).flatMap((p) => ('interp' in p ? [p.interp] : []))) {
        const bad = interpolationProblem(model, body, key);
        if (bad) {
          out.push({ start: item.start, end: item.end, message: `${key}: \${${body}}: ${bad.message}`, code: 'bad-interpolation', severity: 'error', suggestions: bad.suggestions });
          return;
        }
      }
    }
  }
  const { kind, value } = kindOf(el);
  const why = conversionError(node, kind, value, el.kind === 'primitive' ? (el.quoted ? JSON.stringify(raw) : raw) : kind);
  if (why) {
    out.push({ start: el.start, end: el.end, message: `${key}: ${why}`, code: 'wrong-type', severity: 'error' });
    return;
  }
  if (el.kind === 'dict' && node.properties && node.closed) {
    for (const e of el.entries) {
      const child = node.properties.get(e.key);
      if (!child) {
        const near = didYouMean(e.key, node.properties.keys());
        out.push({ start: e.start, end: e.end, message: `${key} has no key "${e.key}"${near.length ? `. Did you mean "${near[0]}"?` : ` (keys: ${[...node.properties.keys()].join(', ')})`}`, code: 'unknown-key', severity: 'error', suggestions: near.map((n) => n) });
      } else checkElement(model, `${key}.${e.key}`, child, e.value, out);
    }
  }
}

function* primitivesIn(el: Element): Generator<Primitive> {
  if (el.kind === 'primitive') yield el;
  else if (el.kind === 'list') for (const it of el.items) yield* primitivesIn(it);
  else if (el.kind === 'dict') for (const e of el.entries) yield* primitivesIn(e.value);
}

function interpolationsBalanced(s: string): boolean {
  let depth = 0;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '$' && s[i + 1] === '{') {
      depth++;
      i++;
    } else if (s[i] === '}' && depth > 0) depth--;
  }
  return depth === 0;
}

/** Why `${body}` cannot resolve: a missing key, or a resolver OmegaConf does not have. */
function interpolationProblem(model: HydraModel, body: string, from: string): { message: string; suggestions?: string[] } | undefined {
  const colon = body.indexOf(':');
  if (colon >= 0) {
    const name = body.slice(0, colon).trim();
    if (BUILTIN_RESOLVERS.includes(name)) return undefined;
    const near = didYouMean(name, BUILTIN_RESOLVERS);
    return { message: `no resolver "${name}"${near.length ? `; did you mean "${near[0]}"?` : ` (known: ${BUILTIN_RESOLVERS.join(', ')})`}`, suggestions: near };
  }
  let target = body.trim();
  if (target.includes('${')) return undefined;
  const rel = /^\.+/.exec(target);
  if (rel) {
    // `${.x}` is a sibling of the key; each further dot goes one level up.
    const base = from.split('.').slice(0, -rel[0].length);
    target = [...base, target.slice(rel[0].length)].filter(Boolean).join('.');
  }
  const path = target.split('.');
  if (path[0] === 'hydra') return { message: `hydra's own settings are not in the job's config; write \${hydra:${path.slice(1).join('.')}}` };
  if (nodeAt(model, path)) return undefined;
  const parent = nodeAt(model, path.slice(0, -1));
  if (parent && !parent.closed && !parent.properties?.size) return undefined;
  const near = keySuggestions(model, target, path, parent);
  return { message: `the config has no key "${target}"${near.length ? `; did you mean "${near[0]}"?` : ''}`, suggestions: near };
}
