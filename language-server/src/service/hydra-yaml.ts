/**
 * Hydra config YAML files (the primary config and group option files): completion of keys, values and
 * `defaults:` entries, hover, diagnostics and go-to-definition. Completion reads the lines above the cursor
 * (indentation gives the key path) so that it works in the half-typed documents where a YAML parser gives up;
 * diagnostics use the real YAML parser because they must be exact.
 */
import { enclosingKeys } from './yaml-blocks';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  CompletionItemKind,
  DiagnosticSeverity,
  MarkupKind,
  type CompletionItem,
  type CompletionList,
  type Diagnostic,
  type Hover,
  type Location,
  type Position,
} from 'vscode-languageserver';
import type { TextDocument } from 'vscode-languageserver-textdocument';
import { isMap, isScalar, isSeq, parseDocument, type Node as YamlNode, type Pair } from 'yaml';
import { allPaths, checkScalar, nodeAt, packageOf, typeText, type HydraModel, type Scalar, type SchemaNode } from '../hydra/model';
import { DIAGNOSTIC_SOURCE, didYouMeanData } from './flags';
import { didYouMean } from './fuzzy';

export interface ConfigContext {
  /** Where this file's keys land in the config tree. */
  pkg: string[];
  /** The primary config (config.yaml at a config dir's root): it has `hydra:`. */
  primary: boolean;
  /** The group folder the file is in (`model`, `model/remat`; '' at the root): its `defaults:` are relative to it. */
  group: string;
}

/** Whether (and how) `doc` is one of the model's config files. */
export function configContext(model: HydraModel, doc: TextDocument): ConfigContext | undefined {
  if (!doc.uri.startsWith('file:')) return undefined;
  const file = fileURLToPath(doc.uri);
  if (!/\.ya?ml$/.test(file)) return undefined;
  const pkg = packageOf(model, file, doc.getText().slice(0, 2000));
  if (!pkg) return undefined;
  const dir = model.configDirs.find((d) => !path.relative(d, file).startsWith('..'));
  const group = dir ? path.relative(dir, path.dirname(file)).split(path.sep).join('/') : '';
  return { pkg, primary: model.configDirs.some((d) => path.dirname(file) === d), group };
}

const KEY_LINE = /^(\s*)([\w.-]+)\s*:\s*(#.*)?$/;

/** The key path of the block that line `line` (with indentation `indent`) sits in. */
function parentKeys(doc: TextDocument, line: number, indent: number): string[] {
  // A list item or a `key: value` line above us means we are not in a plain mapping we can type.
  return enclosingKeys(doc, line, indent, (text) => KEY_LINE.exec(text)?.[2]);
}

function keyItem(name: string, n: SchemaNode, i: number): CompletionItem {
  const object = n.types.includes('object') && n.properties;
  return {
    label: name,
    kind: object ? CompletionItemKind.Module : CompletionItemKind.Property,
    detail: typeText(n),
    documentation: docText(n),
    insertText: object ? `${name}:\n  ` : `${name}: `,
    sortText: String(i).padStart(3, '0'),
  };
}

function docText(n: SchemaNode): string | undefined {
  const parts = [n.description, n.default !== undefined ? `Default: ${JSON.stringify(n.default)}` : undefined].filter(Boolean);
  return parts.length ? parts.join('\n\n') : undefined;
}

/** Values to offer for a node: its enum, booleans, null when allowed, and its default. */
export function valueItems(n: SchemaNode): CompletionItem[] {
  const vals: Scalar[] = n.enum ? [...n.enum] : [];
  if (!n.enum && n.types.includes('boolean')) vals.push(true, false);
  if (!n.enum && n.types.includes('null')) vals.push(null);
  if (n.default !== undefined && typeof n.default !== 'object' && !vals.includes(n.default as Scalar)) vals.push(n.default as Scalar);
  return vals.map((v, i) => ({
    label: v === null ? 'null' : String(v),
    kind: CompletionItemKind.Value,
    detail: v === n.default ? 'default' : undefined,
    sortText: String(i).padStart(3, '0'),
  }));
}

export function groupOptionItems(model: HydraModel, group: string): CompletionItem[] {
  const g = model.groups.get(group);
  if (!g) return [];
  return [...g.options.values()].map((o, i) => ({
    label: o.name,
    kind: CompletionItemKind.EnumMember,
    detail: o.name === g.default ? `${group} (default)` : group,
    documentation: o.file ? path.basename(o.file) : 'registered by the trainer',
    sortText: String(i).padStart(3, '0'),
  }));
}

export function configCompletion(model: HydraModel, doc: TextDocument, pos: Position): CompletionList | null {
  const ctx = configContext(model, doc);
  if (!ctx) return null;
  const before = doc.getText({ start: { line: pos.line, character: 0 }, end: pos });
  const indent = /^\s*/.exec(before)![0].length;
  const parents = parentKeys(doc, pos.line, indent);
  if (parents[0] === '\u0000') return null;

  if (parents.length === 1 && parents[0] === 'defaults') {
    const opt = /^\s*-\s*(?:override\s+)?([\w/]+)\s*:\s*([\w.-]*)$/.exec(before);
    if (opt) return { isIncomplete: false, items: groupOptionItems(model, resolveGroup(model, opt[1], ctx.group)) };
    if (/^\s*-\s*[\w/]*$/.test(before)) {
      // In a group's file, its subgroups are named relative to it (`remat` in model/ means model/remat).
      const sub = ctx.group ? [...model.groups.keys()].filter((g) => g.startsWith(`${ctx.group}/`)).map((g) => g.slice(ctx.group.length + 1)) : [];
      const names = ctx.group ? [...sub, ...[...model.groups.keys()].map((g) => `/${g}`)] : [...model.groups.keys()];
      const items: CompletionItem[] = names.map((g, i) => ({ label: g, kind: CompletionItemKind.Folder, insertText: `${g}: `, sortText: String(i).padStart(3, '0'), command: { title: 'options', command: 'editor.action.triggerSuggest' } }));
      items.push({ label: '_self_', kind: CompletionItemKind.Keyword, sortText: '999' });
      return { isIncomplete: false, items };
    }
    return null;
  }
  const keyPath = [...ctx.pkg, ...parents];
  const value = /^\s*(?:-\s+)?([\w.-]+)\s*:\s+([^#]*)$/.exec(before);
  if (value) {
    const n = nodeAt(model, [...keyPath, value[1]]);
    return n ? { isIncomplete: false, items: valueItems(n) } : null;
  }
  if (!/^\s*[\w.-]*$/.test(before)) return null;
  const parent = nodeAt(model, keyPath);
  if (!parent?.properties) {
    return ctx.primary && parents.length === 0 ? { isIncomplete: false, items: primaryExtras(0) } : null;
  }
  const items = [...parent.properties].map(([k, n], i) => keyItem(k, n, i));
  if (ctx.primary && parents.length === 0) items.push(...primaryExtras(items.length));
  return { isIncomplete: false, items };
}

function primaryExtras(i: number): CompletionItem[] {
  return [
    { label: 'defaults', kind: CompletionItemKind.Keyword, insertText: 'defaults:\n  - ', sortText: String(i).padStart(3, '0') },
    { label: 'hydra', kind: CompletionItemKind.Keyword, insertText: 'hydra:\n  ', sortText: String(i + 1).padStart(3, '0') },
  ];
}

/** Hover on a key: read from the line and the lines above it (no parse, as for completion). */
export function configHover(model: HydraModel, doc: TextDocument, pos: Position): Hover | null {
  const ctx = configContext(model, doc);
  if (!ctx) return null;
  const line = doc.getText({ start: { line: pos.line, character: 0 }, end: { line: pos.line + 1, character: 0 } });
  const m = /^(\s*)([\w.-]+)\s*:/.exec(line);
  if (!m || pos.character < m[1].length || pos.character > m[1].length + m[2].length) return null;
  const parents = parentKeys(doc, pos.line, m[1].length);
  if (parents[0] === '\u0000' || (ctx.primary && parents[0] === 'hydra') || parents[0] === 'defaults') return null;
  const keys = [...ctx.pkg, ...parents, m[2]];
  const n = nodeAt(model, keys);
  if (!n) return null;
  const range = { start: { line: pos.line, character: m[1].length }, end: { line: pos.line, character: m[1].length + m[2].length } };
  return { range, contents: { kind: MarkupKind.Markdown, value: schemaMarkdown(keys.join('.'), n) } };
}

export function schemaMarkdown(dotted: string, n: SchemaNode): string {
  const lines = [`**${dotted}** · \`${typeText(n)}\``];
  if (n.description) lines.push('', n.description);
  if (n.default !== undefined && typeof n.default !== 'object') lines.push('', `Default: \`${JSON.stringify(n.default)}\``);
  if (n.default === null) lines.push('', 'Default: `null`');
  return lines.join('\n');
}

export function configDiagnostics(model: HydraModel, doc: TextDocument): Diagnostic[] {
  const ctx = configContext(model, doc);
  if (!ctx || model.origin === 'none') return [];
  const out: Diagnostic[] = [];
  const text = doc.getText();
  const ydoc = parseDocument(text);
  const rng = (r: readonly number[] | null | undefined) => ({ start: doc.positionAt(r?.[0] ?? 0), end: doc.positionAt(r?.[1] ?? 0) });
  const push = (r: readonly number[] | null | undefined, message: string, code: string, suggestions: string[] = []) =>
    out.push({ range: rng(r), message, code, severity: DiagnosticSeverity.Error, source: DIAGNOSTIC_SOURCE, ...didYouMeanData(suggestions) });
  for (const e of ydoc.errors) out.push({ range: rng(e.pos), message: e.message, severity: DiagnosticSeverity.Error, source: 'yaml' });
  let paths: string[] | undefined;

  const checkInterpolations = (raw: string, r: readonly number[] | null | undefined) => {
    for (const m of raw.matchAll(/\$\{([^}:]+)\}/g)) {
      const target = m[1].trim();
      if (target.startsWith('.')) continue; // relative: resolved against the node, rarely wrong and costly to check
      if (nodeAt(model, target.split('.'))) continue;
      paths ??= allPaths(model.root);
      const near = didYouMean(target, paths);
      push(r, `Interpolation target "${target}" does not exist${near.length ? `. Did you mean \${${near[0]}}?` : ''}`, 'bad-interpolation');
    }
  };

  const walk = (node: YamlNode | null | undefined, keys: string[], schema: SchemaNode | undefined) => {
    if (isSeq(node)) {
      for (const it of node.items) if (isScalar(it) && typeof it.value === 'string') checkInterpolations(it.value, it.range);
      return;
    }
    if (!isMap(node)) return;
    for (const p of node.items as Pair<YamlNode, YamlNode | null>[]) {
      if (!isScalar(p.key)) continue;
      const k = String(p.key.value);
      if (keys.length === ctx.pkg.length && (k === 'defaults' || (ctx.primary && k === 'hydra'))) {
        if (k === 'defaults') checkDefaults(model, p.value, push, ctx.group);
        continue;
      }
      const child = schema?.properties?.get(k);
      if (!child) {
        if (schema?.closed) {
          const near = didYouMean(k, schema.properties?.keys() ?? []);
          push(p.key.range, `Unknown key "${k}" in ${keys.length ? keys.join('.') : 'the root config'}${near.length ? `. Did you mean "${near[0]}"?` : ''}`, 'unknown-key', near);
        }
        continue;
      }
      const v = p.value;
      if (isScalar(v)) {
        const raw = v.source ?? String(v.value);
        const value = v.value as Scalar;
        const bad = checkScalar(child, value, typeof value === 'string' ? value : raw);
        if (bad) push(v.range, `${[...keys, k].join('.')}: ${bad}`, 'wrong-type');
        if (typeof value === 'string') checkInterpolations(value, v.range);
      } else if (isMap(v)) {
        if (!child.types.includes('object') && child.types.length) push(p.key.range, `${[...keys, k].join('.')}: expected ${typeText(child)}, got a mapping`, 'wrong-type');
        else walk(v, [...keys, k], child);
      } else if (isSeq(v)) {
        if (!child.types.includes('array') && child.types.length) push(p.key.range, `${[...keys, k].join('.')}: expected ${typeText(child)}, got a list`, 'wrong-type');
        else walk(v, [...keys, k], child);
      }
    }
  };
  walk(ydoc.contents as YamlNode | null, ctx.pkg, nodeAt(model, ctx.pkg));
  return out;
}

/** A `defaults:` entry's group: `/x` is absolute; `x` in a group's file is its subgroup when that exists. */
export function resolveGroup(model: HydraModel, name: string, from: string): string {
  if (name.startsWith('/')) return name.slice(1);
  const rel = from ? `${from}/${name}` : name;
  return model.groups.has(rel) ? rel : name;
}

function checkDefaults(model: HydraModel, list: YamlNode | null, push: (r: readonly number[] | null | undefined, m: string, code: string, suggestions?: string[]) => void, from: string): void {
  if (!isSeq(list)) return;
  for (const item of list.items) {
    if (!isMap(item)) continue;
    for (const p of item.items as Pair<YamlNode, YamlNode | null>[]) {
      if (!isScalar(p.key) || !isScalar(p.value)) continue;
      const written = String(p.key.value).replace(/^override\s+/, '');
      // hydra's own groups (hydra/job_logging, ...) ship with hydra, not with the trainer.
      if (written.startsWith('hydra/') || written.startsWith('/hydra/')) continue;
      const group = resolveGroup(model, written, from);
      const g = model.groups.get(group);
      const option = String(p.value.value);
      if (!g) {
        const near = didYouMean(group, model.groups.keys());
        push(p.key.range, `Unknown config group "${group}"${near.length ? `. Did you mean "${near[0]}"?` : ''}`, 'unknown-group', near);
      } else if (option !== 'null' && !g.options.has(option)) {
        const near = didYouMean(option, g.options.keys());
        push(p.value.range, `Unknown option "${option}" for group ${group}${near.length ? `. Did you mean "${near[0]}"?` : ` (options: ${[...g.options.keys()].join(', ')})`}`, 'unknown-option', near);
      }
    }
  }
}

/** The file of a group option, if it has one (options registered in code have none). */
export function optionLocation(model: HydraModel, group: string, option: string): Location | null {
  const file = model.groups.get(group)?.options.get(option)?.file;
  return file ? { uri: pathToFileURL(file).toString(), range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } } } : null;
}

export function configDefinition(model: HydraModel, doc: TextDocument, pos: Position): Location | null {
  const ctx = configContext(model, doc);
  if (!ctx) return null;
  const line = doc.getText({ start: { line: pos.line, character: 0 }, end: { line: pos.line + 1, character: 0 } });
  const m = /^\s*-\s*(?:override\s+)?([\w/]+)\s*:\s*([\w.-]+)/.exec(line);
  return m ? optionLocation(model, resolveGroup(model, m[1], ctx.group), m[2]) : null;
}
