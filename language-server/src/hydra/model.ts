/**
 * The trainer's hydra config as the language server sees it: a tree of typed keys (from the JSON Schema the
 * trainer exports with `python -m tpu_trainer.schema`, or inferred from the YAML tree when there is none) and the
 * config groups (folders) with their options (files). Loaded from disk once and again when the files change.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse as parseYaml } from 'yaml';
import builtins from './hydra-builtins.json';
import { loadRules, type TrainerRules } from './rules';

export type JsonType = 'object' | 'string' | 'integer' | 'number' | 'boolean' | 'null' | 'array';
export type Scalar = string | number | boolean | null;

export interface SchemaNode {
  types: JsonType[];
  enum?: Scalar[];
  default?: unknown;
  description?: string;
  minimum?: number;
  maximum?: number;
  properties?: Map<string, SchemaNode>;
  /** additionalProperties: false — unknown keys are errors. */
  closed: boolean;
}

export interface GroupOption {
  name: string;
  /** Absent for options that exist only in the trainer's ConfigStore (seen through the schema). */
  file?: string;
  /** What the schema's `x-hydra` says the option sets, where (its package) and its own defaults list. */
  preset?: Preset;
}

/** An entry of a defaults list as written: `{group: option}`, or a name such as `_self_`. */
export type DefaultsEntry = string | Record<string, unknown>;

export interface Preset {
  body: Record<string, unknown>;
  /** `_global_`, or a dotted path (`data`, `model.remat`). */
  package: string;
  defaults: DefaultsEntry[];
}

export interface ConfigGroup {
  /** `model` or `model/remat`. */
  path: string;
  options: Map<string, GroupOption>;
  default?: string;
}

export interface HydraModel {
  root: SchemaNode;
  groups: Map<string, ConfigGroup>;
  configDirs: string[];
  schemaFile?: string;
  /** How the tree was typed, for hover and logs. */
  origin: 'schema' | 'inferred' | 'none';
  /** The primary config's defaults list and its own values (`_self_`), from the schema's `x-hydra`. */
  primary?: { defaults: DefaultsEntry[]; self: Record<string, unknown> };
  /** The trainer's cross-field rules (`x-rules`). */
  rules?: TrainerRules;
}

export interface HydraLocations {
  /** Workspace root; the defaults below are relative to it. */
  root: string;
  schemaFile?: string;
  configDirs?: string[];
}

const DEFAULT_SCHEMA = ['trainer/config.schema.json'];
const DEFAULT_CONFIG_DIRS = ['trainer/tpu_trainer/configs', 'trainer/configs', 'configs'];

export function emptyModel(): HydraModel {
  return { root: { types: ['object'], properties: new Map(), closed: false }, groups: new Map(), configDirs: [], origin: 'none' };
}

interface JsonSchema {
  type?: string | string[];
  enum?: Scalar[];
  default?: unknown;
  description?: string;
  minimum?: number;
  maximum?: number;
  properties?: Record<string, JsonSchema>;
  additionalProperties?: boolean | JsonSchema;
  'x-hydra'?: {
    defaults?: DefaultsEntry[];
    self?: Record<string, unknown>;
    groups?: Record<string, { default?: string; options?: Record<string, unknown>; packages?: Record<string, string>; defaults_lists?: Record<string, DefaultsEntry[]> }>;
  };
  'x-rules'?: unknown;
}

function fromJsonSchema(s: JsonSchema): SchemaNode {
  const types = (Array.isArray(s.type) ? s.type : s.type ? [s.type] : s.properties ? ['object'] : []) as JsonType[];
  const node: SchemaNode = { types, closed: s.additionalProperties === false };
  if (s.enum) node.enum = s.enum;
  if ('default' in s) node.default = s.default;
  if (s.description) node.description = s.description;
  if (s.minimum !== undefined) node.minimum = s.minimum;
  if (s.maximum !== undefined) node.maximum = s.maximum;
  if (s.properties) node.properties = new Map(Object.entries(s.properties).map(([k, v]) => [k, fromJsonSchema(v)]));
  return node;
}

function inferNode(value: unknown): SchemaNode {
  if (value === null) return { types: ['null', 'string', 'number', 'boolean', 'object', 'array'], closed: false };
  if (Array.isArray(value)) return { types: ['array'], closed: false, default: value };
  if (typeof value === 'object') {
    const properties = new Map(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, inferNode(v)]));
    return { types: ['object'], properties, closed: false };
  }
  if (typeof value === 'boolean') return { types: ['boolean'], closed: false, default: value };
  if (typeof value === 'number') return { types: Number.isInteger(value) ? ['integer', 'number'] : ['number'], closed: false, default: value };
  return { types: ['string'], closed: false, default: value };
}

/** Adds `b`'s keys to `a` (inferred trees: the union of what every option file sets). */
function mergeInto(a: SchemaNode, b: SchemaNode): void {
  if (!b.properties) return;
  a.properties ??= new Map();
  if (!a.types.includes('object')) a.types.push('object');
  for (const [k, v] of b.properties) {
    const cur = a.properties.get(k);
    if (cur) mergeInto(cur, v);
    else a.properties.set(k, v);
  }
}

/** Names hydra apps give their primary config, most specific first (the trainer's is default.yaml). */
const PRIMARY_NAMES = ['default.yaml', 'config.yaml'];

/** The primary config of a config dir: the first of PRIMARY_NAMES that exists. */
export function primaryConfigFile(dir: string): string {
  for (const name of PRIMARY_NAMES) {
    const file = path.join(dir, name);
    if (fs.existsSync(file)) return file;
  }
  return path.join(dir, PRIMARY_NAMES[0]);
}

function readYaml(file: string): unknown {
  try {
    return parseYaml(fs.readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

/** Groups are folders under a config dir; options are the YAML files in them. */
function scanGroups(dir: string, rel: string, groups: Map<string, ConfigGroup>): void {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  // Sorted: readdir order differs between filesystems, and completion lists should not.
  entries.sort((a, b) => a.name.localeCompare(b.name));
  for (const e of entries) {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) scanGroups(full, rel ? `${rel}/${e.name}` : e.name, groups);
    else if (rel && /\.ya?ml$/.test(e.name)) {
      const g: ConfigGroup = groups.get(rel) ?? { path: rel, options: new Map() };
      const name = e.name.replace(/\.ya?ml$/, '');
      g.options.set(name, { name, file: full });
      groups.set(rel, g);
    }
  }
}

/**
 * For editors that open files without a workspace root: the nearest folder, from `startDir` upward, that holds
 * the trainer's schema or config tree in one of the default places; undefined when none does.
 */
export function findConfigRoot(startDir: string): string | undefined {
  for (let dir = path.resolve(startDir); ; dir = path.dirname(dir)) {
    if (firstExisting(dir, [...DEFAULT_SCHEMA, ...DEFAULT_CONFIG_DIRS.filter((d) => d !== 'configs')])) return dir;
    if (fs.existsSync(path.join(dir, 'configs')) && fs.existsSync(primaryConfigFile(path.join(dir, 'configs')))) return dir;
    if (path.dirname(dir) === dir) return undefined;
  }
}

function firstExisting(root: string, candidates: string[]): string | undefined {
  return candidates.map((c) => path.resolve(root, c)).find((p) => fs.existsSync(p));
}

export function loadHydraModel(loc: HydraLocations): HydraModel {
  const model = emptyModel();
  const schemaFile = loc.schemaFile ? path.resolve(loc.root, loc.schemaFile) : firstExisting(loc.root, DEFAULT_SCHEMA);
  const configDirs = loc.configDirs?.length
    ? loc.configDirs.map((d) => path.resolve(loc.root, d)).filter((d) => fs.existsSync(d))
    : [firstExisting(loc.root, DEFAULT_CONFIG_DIRS)].filter((d): d is string => d !== undefined);
  model.configDirs = configDirs;
  for (const dir of configDirs) scanGroups(dir, '', model.groups);

  let schema: JsonSchema | undefined;
  if (schemaFile) {
    try {
      schema = JSON.parse(fs.readFileSync(schemaFile, 'utf8')) as JsonSchema;
    } catch {
      schema = undefined;
    }
  }
  if (schema) {
    model.root = fromJsonSchema(schema);
    model.schemaFile = schemaFile;
    model.origin = 'schema';
    const xh = schema['x-hydra'];
    for (const [name, g] of Object.entries(xh?.groups ?? {})) {
      const group: ConfigGroup = model.groups.get(name) ?? { path: name, options: new Map() };
      for (const [opt, body] of Object.entries(g.options ?? {})) {
        const option = group.options.get(opt) ?? { name: opt };
        if (g.packages?.[opt] !== undefined && body && typeof body === 'object') {
          option.preset = { body: body as Record<string, unknown>, package: g.packages[opt], defaults: g.defaults_lists?.[opt] ?? [] };
        }
        group.options.set(opt, option);
      }
      if (g.default) group.default = g.default;
      model.groups.set(name, group);
    }
    if (xh?.defaults) model.primary = { defaults: xh.defaults, self: xh.self ?? {} };
    model.rules = loadRules(schema['x-rules']);
  } else if (configDirs.length) {
    // No schema yet: the YAML tree is the best evidence of what keys exist and what they hold.
    model.origin = 'inferred';
    for (const dir of configDirs) {
      const primary = readYaml(primaryConfigFile(dir));
      if (primary && typeof primary === 'object') {
        const { defaults: _d, hydra: _h, ...rest } = primary as Record<string, unknown>;
        mergeInto(model.root, inferNode(rest));
      }
    }
    for (const g of model.groups.values()) {
      const at = ensurePath(model.root, g.path.split('/'));
      for (const o of g.options.values()) if (o.file) mergeInto(at, inferNode(readYaml(o.file) ?? {}));
    }
  }
  // Defaults named in the primary config's `defaults:` list.
  for (const dir of configDirs) {
    const primary = readYaml(primaryConfigFile(dir)) as { defaults?: unknown } | undefined;
    for (const d of Array.isArray(primary?.defaults) ? primary.defaults : []) {
      if (d && typeof d === 'object') {
        for (const [k, v] of Object.entries(d as Record<string, unknown>)) {
          const g = model.groups.get(k);
          if (g && typeof v === 'string') g.default = v;
        }
      }
    }
  }
  addHydraBuiltins(model);
  return model;
}

/**
 * Hydra's own config (`hydra.run.dir`, `hydra.job.chdir`, ...) and groups (`hydra/job_logging=disabled`) exist in
 * every hydra app; they come from the installed hydra-core (gen-hydra-builtins.py), not from the trainer.
 */
export function addHydraBuiltins(model: HydraModel): void {
  if (model.origin === 'none') return;
  model.root.properties ??= new Map();
  if (!model.root.properties.has('hydra')) {
    const node = fromJsonSchema(builtins.hydra as JsonSchema);
    node.description = `hydra's own settings (hydra ${builtins.hydraVersion})`;
    model.root.properties.set('hydra', node);
  }
  for (const [name, options] of Object.entries(builtins.groups)) {
    if (model.groups.has(name)) continue;
    model.groups.set(name, { path: name, options: new Map(options.map((o) => [o, { name: o }])), default: options.includes('default') ? 'default' : options[0] });
  }
}

/** Resolvers every hydra app has (`${oc.env:HOME}`, `${now:%H}`). */
export const BUILTIN_RESOLVERS: readonly string[] = builtins.resolvers;

function ensurePath(root: SchemaNode, parts: string[]): SchemaNode {
  let node = root;
  for (const p of parts) {
    node.properties ??= new Map();
    let next = node.properties.get(p);
    if (!next) {
      next = { types: ['object'], properties: new Map(), closed: false };
      node.properties.set(p, next);
    }
    node = next;
  }
  return node;
}

/** The schema node at a dotted path (`['model', 'hidden_size']`), or undefined. */
export function nodeAt(model: HydraModel, parts: readonly string[]): SchemaNode | undefined {
  let node: SchemaNode | undefined = model.root;
  for (const p of parts) node = node?.properties?.get(p);
  return node;
}

/** Where a config file's keys land: `[]` for a primary config, the group's path for an option file. */
export function packageOf(model: HydraModel, file: string, text: string): string[] | undefined {
  const header = /^#\s*@package\s+(\S+)/m.exec(text);
  for (const dir of model.configDirs) {
    const rel = path.relative(dir, file);
    if (rel.startsWith('..') || path.isAbsolute(rel)) continue;
    const group = path.dirname(rel).split(path.sep).join('/');
    if (header) {
      const pkg = header[1];
      if (pkg === '_global_') return [];
      if (pkg === '_group_') return group === '.' ? [] : group.split('/');
      return pkg.split('.');
    }
    return group === '.' ? [] : group.split('/');
  }
  return undefined;
}

/** Short type text for hovers and completion details: `integer ≥ 1`, `"adamw" | "sgd"`. */
export function typeText(n: SchemaNode): string {
  if (n.enum) return n.enum.map((v) => JSON.stringify(v)).join(' | ');
  let t = n.types.length ? n.types.join(' | ') : 'any';
  if (n.minimum !== undefined) t += ` ≥ ${n.minimum}`;
  if (n.maximum !== undefined) t += ` ≤ ${n.maximum}`;
  return t;
}

/** Why a scalar does not fit the node, or undefined. `???` (hydra's "must be given") and interpolations fit anything. */
export function checkScalar(n: SchemaNode, value: Scalar, raw: string): string | undefined {
  if (raw === '???' || /\$\{/.test(raw)) return undefined;
  if (n.types.length === 0) return undefined;
  if (n.enum && !n.enum.some((e) => e === value || (typeof e === 'string' && typeof value === 'string' && e.toLowerCase() === value.toLowerCase()))) {
    return `"${raw}" is not one of ${n.enum.map((e) => JSON.stringify(e)).join(', ')}`;
  }
  const ok =
    (value === null && n.types.includes('null')) ||
    (typeof value === 'boolean' && n.types.includes('boolean')) ||
    (typeof value === 'number' && (n.types.includes('number') || (Number.isInteger(value) && n.types.includes('integer')))) ||
    // Hydra/OmegaConf turns numbers and booleans into strings for string fields.
    (value !== null && n.types.includes('string'));
  if (!ok) return `expected ${typeText(n)}, got ${value === null ? 'null' : typeof value === 'number' && !Number.isInteger(value) ? 'number' : typeof value === 'number' ? 'integer' : typeof value} "${raw}"`;
  if (typeof value === 'number' && n.minimum !== undefined && value < n.minimum) return `${raw} is below the minimum ${n.minimum}`;
  if (typeof value === 'number' && n.maximum !== undefined && value > n.maximum) return `${raw} is above the maximum ${n.maximum}`;
  return undefined;
}

/** Every dotted key of the tree (`model`, `model.hidden_size`, ...), for did-you-mean. */
export function allPaths(n: SchemaNode, prefix = '', out: string[] = []): string[] {
  for (const [k, c] of n.properties ?? []) {
    const p = prefix ? `${prefix}.${k}` : k;
    out.push(p);
    allPaths(c, p, out);
  }
  return out;
}
