/**
 * The config one trainer command line would run with, composed as hydra composes it: the schema's defaults,
 * then the defaults list (the primary's, each chosen option's own, with `_self_` where it stands) with the
 * line's group choices, `+group` appended and `~group` dropped, each option's values merged at its package
 * (OmegaConf's merge: dicts key by key, lists replaced, `???` never over a value), then the line's key
 * overrides in order. Values are read as the trainer's dataclass gets them: `${...}` resolved once (an
 * escaped `\${` stays literal), converted to the field's type. What cannot be known here is UNKNOWN.
 */
import { nodeAt, type DefaultsEntry, type HydraModel, type SchemaNode } from './model';
import { PyFloat, UNKNOWN, floatRepr, isUnknown, pyStr, type Py, type PyDict } from './py-values';

export interface LineOverride {
  /** The word's place on the line, to say which override set a value. */
  word: number;
  prefix: '' | '+' | '++' | '~';
  key: string;
  /** A single value (sweeps are expanded into jobs before this); absent for `~key`. */
  value?: Py;
}

export interface Composed {
  /** The value the trainer's dataclass would hold at a dotted key. */
  get(key: string): Py;
  /** What a shorthand sets (rules' aliases), said to come from the override that set `from`. */
  assign(key: string, value: Py, from: string[]): void;
  /** The override (word) that last set any of these keys, if the line set one. */
  setter(keys: string[]): number | undefined;
  /** Leaves still `???` (OmegaConf's mandatory value) after the overrides. */
  missing(): string[];
  /** Leaves whose `${...}` lead back to themselves (OmegaConf: "Recursive interpolation detected"). */
  cycles(): string[];
  /** The defaults-list composition this job starts from: the same object for every line picking the same options. */
  base: object;
  /** Whether the value at a key is the defaults list's as it stands (no override or shorthand wrote it, no `${...}`). */
  fromBase(key: string): boolean;
}

class Abort extends Error {}

function toPy(v: unknown): Py {
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return v;
  if (typeof v === 'number') return Number.isInteger(v) ? v : new PyFloat(v);
  if (Array.isArray(v)) return v.map(toPy);
  if (typeof v === 'object') return new Map(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, toPy(x)]));
  return UNKNOWN;
}

function schemaDefaults(node: SchemaNode): PyDict {
  const out: PyDict = new Map();
  for (const [k, child] of node.properties ?? []) {
    if (k === 'hydra') continue;
    if (child.properties && child.types.includes('object') && child.default === undefined) out.set(k, schemaDefaults(child));
    else out.set(k, child.default === undefined ? UNKNOWN : toPy(child.default));
  }
  return out;
}

const isDict = (v: Py | undefined): v is PyDict => v instanceof Map;

/** One piece of a string as OmegaConf reads it: literal text, or a live `${...}` (its body). */
export type StringPiece = { text: string } | { interp: string };

/**
 * OmegaConf's reading of a string with `${`: a run of n backslashes before `${` is n/2 literal backslashes and an
 * interpolation when n is even, and (n-1)/2 backslashes and a literal `${` when n is odd. Undefined without `${`.
 */
export function omegaPieces(s: string): StringPiece[] | undefined {
  if (!s.includes('${')) return undefined;
  const out: StringPiece[] = [];
  let text = '';
  let i = 0;
  for (;;) {
    const at = s.indexOf('${', i);
    if (at < 0) break;
    let bs = 0;
    while (at - bs - 1 >= i && s[at - bs - 1] === '\\') bs++;
    text += s.slice(i, at - bs) + '\\'.repeat(Math.floor(bs / 2));
    if (bs % 2 === 1) {
      text += '${';
      i = at + 2;
      continue;
    }
    let depth = 0;
    let end = -1;
    for (let j = at; j < s.length; j++) {
      if (s[j] === '$' && s[j + 1] === '{') {
        depth++;
        j++;
      } else if (s[j] === '}' && --depth === 0) {
        end = j;
        break;
      }
    }
    if (end < 0) return undefined;
    if (text) out.push({ text });
    text = '';
    out.push({ interp: s.slice(at + 2, end) });
    i = end + 1;
  }
  text += s.slice(i);
  if (text) out.push({ text });
  return out;
}

const INT_TEXT = /^\s*[+-]?\d(?:_?\d)*\s*$/;
const TRUE_WORDS = new Set(['y', 'yes', 'on', 'true']);
const FALSE_WORDS = new Set(['n', 'no', 'off', 'false']);

/** OmegaConf's conversion of a value to a field's type; UNKNOWN where it would refuse (checked elsewhere). */
export function convertTo(node: SchemaNode | undefined, v: Py): Py {
  if (!node || isUnknown(v) || v === null || node.types.length === 0) return v;
  const t = node.types;
  if (t.includes('object') || t.includes('array')) return v;
  if (t.includes('string')) {
    if (typeof v === 'boolean') return v ? 'True' : 'False';
    if (v instanceof PyFloat) return floatRepr(v.v);
    return typeof v === 'number' || typeof v === 'string' ? String(v) : UNKNOWN;
  }
  if (t.includes('number')) {
    if (typeof v === 'number') return new PyFloat(v);
    if (v instanceof PyFloat) return v;
    if (typeof v === 'string' && v.trim() !== '' && !Number.isNaN(Number(v.replace(/_/g, '')))) return new PyFloat(Number(v.replace(/_/g, '')));
    return UNKNOWN;
  }
  if (t.includes('integer')) {
    if (typeof v === 'number') return v;
    if (typeof v === 'string' && INT_TEXT.test(v)) return Number(v.replace(/_/g, ''));
    return UNKNOWN;
  }
  if (t.includes('boolean')) {
    if (typeof v === 'boolean') return v;
    if (typeof v === 'number') return v !== 0;
    if (typeof v === 'string') {
      const w = v.toLowerCase();
      if (TRUE_WORDS.has(w)) return true;
      if (FALSE_WORDS.has(w)) return false;
      if (INT_TEXT.test(v)) return Number(v.replace(/_/g, '')) !== 0;
    }
    return UNKNOWN;
  }
  return v;
}

/** The defaults-list part of a composition: the same for every line that picks the same options. */
interface Base {
  root: PyDict;
  /** Which line-chosen group (its key) set each path, in merge order. */
  events: { path: string; owner: string }[];
  /** Leaves holding a live `${...}`, and leaves left `???`. */
  interpolated: string[];
  missing: string[];
}

type Choice = { option: string | null; word: number };

const baseCache = new WeakMap<HydraModel, Map<string, Base | null>>();
const splitCache = new Map<string, string[]>();

function partsOf(key: string): string[] {
  let parts = splitCache.get(key);
  if (!parts) {
    if (splitCache.size > 4096) splitCache.clear();
    splitCache.set(key, (parts = key.split('.')));
  }
  return parts;
}
const nodeCache = new WeakMap<HydraModel, Map<string, SchemaNode | undefined>>();

/** The schema node at a dotted key, memoised per model (every rule and field check asks, for every job). */
export function nodeOf(model: HydraModel, key: string): SchemaNode | undefined {
  let m = nodeCache.get(model);
  if (!m) nodeCache.set(model, (m = new Map()));
  if (!m.has(key)) m.set(key, nodeAt(model, key.split('.')));
  return m.get(key);
}

function leavesOf(d: PyDict, prefix: string, visit: (path: string, v: Py) => void): void {
  for (const [k, v] of d) {
    const path = prefix ? `${prefix}.${k}` : k;
    if (isDict(v)) leavesOf(v, path, visit);
    else visit(path, v);
  }
}

const hasLive = (v: Py) => typeof v === 'string' && (omegaPieces(v)?.some((p) => 'interp' in p) ?? false);
const isMissing = (v: Py) => v === '???' || (Array.isArray(v) && v.includes('???'));

function composeBase(model: HydraModel, choice: Map<string, Choice>, appended: { group: string; option: string }[]): Base | undefined {
  const root = schemaDefaults(model.root);
  const events: Base['events'] = [];
  const mergeInto = (dest: PyDict, src: PyDict, prefix: string, owner: string | undefined) => {
    for (const [k, v] of src) {
      const path = prefix ? `${prefix}.${k}` : k;
      const cur = dest.get(k);
      if (v === '???' && dest.has(k)) continue;
      if (isDict(v) && isDict(cur)) mergeInto(cur, v, path, owner);
      else {
        dest.set(k, v);
        if (owner !== undefined) events.push({ path, owner });
      }
    }
  };
  const place = (body: Record<string, unknown>, pkg: string, owner: string | undefined) => {
    const parts = pkg === '_global_' || pkg === '' ? [] : pkg.split('.');
    let at = root;
    for (const p of parts) {
      let next = at.get(p);
      if (!isDict(next)) at.set(p, (next = new Map()));
      at = next;
    }
    mergeInto(at, toPy(body) as PyDict, parts.join('.'), owner);
  };
  const expand = (group: string, option: string, owner: string | undefined, depth: number) => {
    const preset = model.groups.get(group)?.options.get(option)?.preset;
    if (!preset || depth > 8) throw new Abort();
    let self = false;
    for (const entry of preset.defaults) {
      if (entry === '_self_') {
        place(preset.body, preset.package, owner);
        self = true;
      } else walkEntry(entry, `${group}/`, owner, depth);
    }
    if (!self) place(preset.body, preset.package, owner);
  };
  const walkEntry = (entry: DefaultsEntry, prefix: string, owner: string | undefined, depth: number) => {
    if (typeof entry === 'string') {
      if (entry !== 'trainer_schema' && entry !== '_self_') throw new Abort();
      return;
    }
    for (const [k, v] of Object.entries(entry)) {
      if (k.startsWith('override ') || k.startsWith('hydra/')) continue;
      const group = prefix + k;
      const chosen = choice.get(group);
      if (chosen) {
        if (chosen.option !== null) expand(group, chosen.option, group, depth + 1);
      } else if (typeof v === 'string') expand(group, v, owner, depth + 1);
      else if (v !== null) throw new Abort();
    }
  };
  try {
    for (const entry of model.primary!.defaults) {
      if (entry === '_self_') mergeInto(root, toPy(model.primary!.self) as PyDict, '', undefined);
      else walkEntry(entry, '', undefined, 0);
    }
    for (const a of appended) expand(a.group, a.option, `+${a.group}`, 0);
  } catch (e) {
    if (e instanceof Abort) return undefined;
    throw e;
  }
  const interpolated: string[] = [];
  const missing: string[] = [];
  leavesOf(root, '', (path, v) => {
    if (hasLive(v)) interpolated.push(path);
    if (isMissing(v)) missing.push(path);
  });
  return { root, events, interpolated, missing };
}

/** A copy of `d` with the value at `parts` replaced (undefined: deleted); only the maps on the path are copied. */
function setIn(d: PyDict, parts: string[], f: (cur: Py | undefined) => Py | undefined): PyDict {
  const next = new Map(d);
  const [head, ...rest] = parts;
  if (!rest.length) {
    const v = f(d.get(head));
    if (v === undefined) next.delete(head);
    else next.set(head, v);
  } else {
    const child = d.get(head);
    next.set(head, setIn(isDict(child) ? child : new Map(), rest, f));
  }
  return next;
}

/** OmegaConf's merge of `src` into a copy of `dest` (dicts key by key, `???` never over a value). */
function merged(dest: PyDict, src: PyDict): PyDict {
  const out = new Map(dest);
  for (const [k, v] of src) {
    const cur = out.get(k);
    if (v === '???' && out.has(k)) continue;
    out.set(k, isDict(v) && isDict(cur) ? merged(cur, v) : v);
  }
  return out;
}

/** Composes one job of a command line; undefined when some part of it is beyond what the schema describes. */
export function composeJob(model: HydraModel, overrides: LineOverride[]): Composed | undefined {
  if (!model.primary) return undefined;
  const isGroup = (key: string) => model.groups.has(key) && !key.startsWith('hydra');
  const choice = new Map<string, Choice>();
  const appended: { group: string; option: string; word: number }[] = [];
  for (const o of overrides) {
    if (!isGroup(o.key)) continue;
    const option = typeof o.value === 'string' ? o.value.replace(/\.ya?ml$/, '') : o.value === undefined || o.value === null ? null : undefined;
    if (option === undefined) return undefined;
    if (o.prefix === '~') choice.set(o.key, { option: null, word: o.word });
    else if (o.prefix === '+') {
      if (option === null) return undefined;
      appended.push({ group: o.key, option, word: o.word });
    } else if (option !== null) choice.set(o.key, { option, word: o.word });
  }
  let cache = baseCache.get(model);
  if (!cache) baseCache.set(model, (cache = new Map()));
  const signature = JSON.stringify([[...choice].map(([g, c]) => [g, c.option]).sort(), appended.map((a) => [a.group, a.option])]);
  let base = cache.get(signature);
  if (base === undefined) {
    base = composeBase(model, choice, appended) ?? null;
    if (cache.size >= 64) cache.delete(cache.keys().next().value!);
    cache.set(signature, base);
  }
  if (!base) return undefined;

  const ownerWord = new Map<string, number>([...[...choice].map(([g, c]) => [g, c.word] as const), ...appended.map((a) => [`+${a.group}`, a.word] as const)]);
  const events: { path: string; word: number }[] = base.events.map((e) => ({ path: e.path, word: ownerWord.get(e.owner)! }));
  const record = (path: string, word: number | undefined) => {
    if (word !== undefined) events.push({ path, word });
  };
  let root = base.root;
  const touched: string[] = [];
  for (const o of overrides) {
    if (isGroup(o.key) || o.key === 'hydra' || o.key.startsWith('hydra.')) continue;
    const value = o.value;
    if (o.prefix === '~') root = setIn(root, o.key.split('.'), () => undefined);
    else if (value !== undefined) root = setIn(root, o.key.split('.'), (cur) => (isDict(value) && isDict(cur) ? merged(cur, value) : value));
    else continue;
    touched.push(o.key);
    record(o.key, o.word);
  }

  const assigned = new Map<string, Py>();
  const rawAt = (key: string): Py | undefined => {
    if (assigned.has(key)) return assigned.get(key);
    let at: Py | undefined = root;
    for (const p of partsOf(key)) at = isDict(at) ? at.get(p) : undefined;
    return at;
  };
  const resolving = new Set<string>();
  let cycle = false;
  // Every rule and field check reads through here, many of them the same keys: each is worked out once.
  const memo = new Map<string, Py>();
  const get = (key: string): Py => {
    let v = memo.get(key);
    if (v === undefined) {
      v = read(key);
      if (!resolving.size) memo.set(key, v);
    }
    return v;
  };
  const read = (key: string): Py => {
    let raw = rawAt(key);
    if (raw === undefined || raw === '???') return UNKNOWN;
    if (typeof raw === 'string') {
      const pieces = omegaPieces(raw);
      if (pieces) {
        if (resolving.has(key)) {
          cycle = true;
          return UNKNOWN;
        }
        resolving.add(key);
        try {
          raw = resolvePieces(key, pieces);
        } finally {
          resolving.delete(key);
        }
      }
    }
    return convertTo(nodeOf(model, key), raw);
  };
  const resolvePieces = (key: string, pieces: StringPiece[]): Py => {
    const values = pieces.map((p): Py => {
      if ('text' in p) return p.text;
      const target = interpolationTarget(p.interp, key);
      return target === undefined ? UNKNOWN : get(target);
    });
    if (pieces.length === 1 && 'interp' in pieces[0]) return values[0];
    return values.some(isUnknown) ? UNKNOWN : values.map(pyStr).join('');
  };
  /** The leaves the line's overrides wrote, and the ones the defaults list left holding `${...}` or `???`. */
  const suspects = (pick: (v: Py) => boolean, fromBase: string[]): string[] => {
    const out = new Set<string>();
    for (const path of fromBase) if (pick(rawAt(path) ?? null)) out.add(path);
    for (const key of touched) {
      const v = rawAt(key);
      if (v === undefined) continue;
      if (isDict(v)) leavesOf(v, key, (path, x) => pick(x) && out.add(path));
      else if (pick(v)) out.add(key);
    }
    return [...out];
  };

  return {
    get,
    base,
    fromBase(key) {
      if (assigned.has(key)) return false;
      const v = rawAt(key);
      let b: Py | undefined = base.root;
      for (const p of partsOf(key)) b = isDict(b) ? b.get(p) : undefined;
      return v === b && !(typeof v === 'string' && hasLive(v));
    },
    assign(key, value, from) {
      assigned.set(key, value);
      memo.clear();
      const word = this.setter(from);
      record(key, word);
    },
    setter(keys) {
      for (let i = events.length - 1; i >= 0; i--) {
        const p = events[i].path;
        if (keys.some((k) => k === p || k.startsWith(`${p}.`) || p.startsWith(`${k}.`))) return events[i].word;
      }
      return undefined;
    },
    cycles() {
      return suspects(hasLive, base.interpolated).filter((path) => {
        cycle = false;
        read(path);
        return cycle;
      });
    },
    missing() {
      return suspects(isMissing, base.missing).filter((path) => !assigned.has(path));
    },
  };
}

/** The absolute key a `${body}` names, or undefined for resolvers (`oc.env:`, `now:`, `hydra:`) and nesting. */
function interpolationTarget(body: string, from: string): string | undefined {
  const b = body.trim();
  if (b.includes(':') || b.includes('${') || b === '') return undefined;
  const rel = /^\.+/.exec(b);
  if (!rel) return b;
  const base = from.split('.').slice(0, -rel[0].length);
  return [...base, b.slice(rel[0].length)].filter(Boolean).join('.');
}
