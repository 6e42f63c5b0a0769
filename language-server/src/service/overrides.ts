/**
 * Hydra overrides after the trainer command — in recipes, in task YAML `run:` blocks, anywhere the command is
 * written: `key=value`, `group=option`, `group/sub=option`, `+key=value`, `++key=value`, `~key`, dotted paths.
 * Completion, validation, hover and go-to-definition. The scanner keeps offsets (the extension's recipe parser
 * does not, and needs a whole valid file), so it works on half-typed lines.
 */
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
import { allPaths, checkScalar, nodeAt, typeText, type HydraModel, type Scalar } from '../hydra/model';
import { DIAGNOSTIC_SOURCE, didYouMeanData } from './flags';
import { didYouMean } from './fuzzy';
import { groupOptionItems, optionLocation, schemaMarkdown, valueItems } from './hydra-yaml';

/** The trainer entry points whose arguments are hydra overrides. */
// Only our trainer: other trainers' train.py (torchprime's, in the seed recipes) have other configs.
// `tpw run RECIPE ... -- OVERRIDES` passes its arguments after `--` to the same trainer.
const TRAINER = /(?:-m\s+tpu_trainer\.train|\btpu_trainer\/train\.py|\btpw\s+run\b[^\n]*?\s--)(?=\s|$)/g;

export interface Word {
  start: number;
  end: number;
  /** The word with shell quotes removed. */
  value: string;
  /** Offset in the document of value[0] when the word starts with a quote, else start. */
  valueStart: number;
}

export interface TrainerCommand {
  /** Offset just after the trainer's module/script word: overrides follow. */
  argsStart: number;
  /** End of the logical (backslash-continued) line. */
  end: number;
  words: Word[];
}

// As for flag regions: one scan per document version, shared by completion, hover and diagnostics.
const memo: { text: string; commands: TrainerCommand[] }[] = [];

export function findTrainerCommands(text: string): TrainerCommand[] {
  const hit = memo.find((m) => m.text === text);
  if (hit) return hit.commands;
  const commands = scanCommands(text);
  memo.unshift({ text, commands });
  if (memo.length > 4) memo.pop();
  return commands;
}

function scanCommands(text: string): TrainerCommand[] {
  const out: TrainerCommand[] = [];
  TRAINER.lastIndex = 0;
  for (let m = TRAINER.exec(text); m; m = TRAINER.exec(text)) {
    const argsStart = m.index + m[0].length;
    // The logical line runs on while a physical line ends in a backslash.
    let end = argsStart;
    for (;;) {
      const nl = text.indexOf('\n', end);
      if (nl < 0) {
        end = text.length;
        break;
      }
      const lineEnd = text[nl - 1] === '\r' ? nl - 1 : nl;
      if (text[lineEnd - 1] === '\\') end = nl + 1;
      else {
        end = lineEnd;
        break;
      }
    }
    out.push({ argsStart, end, words: splitWords(text, argsStart, end) });
    TRAINER.lastIndex = end;
  }
  return out;
}

function splitWords(text: string, start: number, end: number): Word[] {
  const words: Word[] = [];
  let i = start;
  while (i < end) {
    while (i < end && (/\s/.test(text[i]) || (text[i] === '\\' && /[\r\n]/.test(text[i + 1] ?? '')))) i++;
    if (i >= end || text[i] === '#' || text[i] === ';' || text[i] === '|' || text[i] === '&' || text[i] === '>') break;
    const s = i;
    let value = '';
    while (i < end && !/\s/.test(text[i])) {
      const c = text[i];
      if (c === "'" || c === '"') {
        const close = text.indexOf(c, i + 1);
        const stop = close < 0 || close > end ? end : close;
        value += text.slice(i + 1, stop);
        i = stop + 1;
      } else if (c === '\\' && i + 1 < end) {
        value += text[i + 1];
        i += 2;
      } else {
        value += c;
        i++;
      }
    }
    i = Math.min(i, end);
    words.push({ start: s, end: i, value, valueStart: text[s] === '"' || text[s] === "'" ? s + 1 : s });
  }
  return words;
}

interface Override {
  prefix: '' | '+' | '++' | '~';
  key: string;
  value?: string;
  keyStart: number;
  keyEnd: number;
  valueStart: number;
}

const OVERRIDE = /^(\+\+|\+|~)?([A-Za-z_][\w.@/-]*)(?:=([\s\S]*))?$/;

function parseOverride(w: Word): Override | undefined {
  const m = OVERRIDE.exec(w.value);
  if (!m) return undefined;
  const prefix = (m[1] ?? '') as Override['prefix'];
  const keyStart = w.valueStart + prefix.length;
  const keyEnd = keyStart + m[2].length;
  return { prefix, key: m[2], value: m[3], keyStart, keyEnd, valueStart: keyEnd + 1 };
}

/** The config path a key names: `model.hidden_size` → [model, hidden_size]; `@package` suffixes dropped. */
const parts = (key: string) => key.replace(/@.*$/, '').split('.');

/** Parses an override value like hydra's grammar does, for the simple cases; undefined for the rest. */
function parseValue(v: string): { value: Scalar; raw: string } | undefined {
  // Sweeps (a,b), functions, lists, dicts, interpolations and shell expansions: not checked.
  if (/[,$[\]{}()]/.test(v)) return undefined;
  if (/^(null|~)$/i.test(v)) return { value: null, raw: v };
  if (/^(true|false)$/i.test(v)) return { value: v.toLowerCase() === 'true', raw: v };
  if (/^[+-]?\d+$/.test(v)) return { value: Number(v), raw: v };
  if (/^[+-]?(\d+\.\d*|\.\d+|\d+)(e[+-]?\d+)?$/i.test(v) || /^[+-]?(inf|nan)$/i.test(v)) return { value: Number(v), raw: v };
  return { value: v, raw: v };
}

export function overrideDiagnostics(model: HydraModel, doc: TextDocument): Diagnostic[] {
  if (model.origin === 'none') return [];
  const out: Diagnostic[] = [];
  const rng = (a: number, b: number) => ({ start: doc.positionAt(a), end: doc.positionAt(b) });
  const push = (a: number, b: number, message: string, code: string, severity: DiagnosticSeverity = DiagnosticSeverity.Error, suggestions: string[] = []) =>
    out.push({ range: rng(a, b), message, code, severity, source: DIAGNOSTIC_SOURCE, ...didYouMeanData(suggestions) });
  for (const cmd of findTrainerCommands(doc.getText())) {
    for (const w of cmd.words) {
      if (w.value.startsWith('-') || w.value.includes('$')) continue; // options and "$@"
      const o = parseOverride(w);
      if (!o) continue;
      const group = model.groups.get(o.key);
      if (group) {
        if (o.value !== undefined && o.value !== 'null' && !group.options.has(o.value) && !/[,$(]/.test(o.value)) {
          const near = didYouMean(o.value, group.options.keys());
          push(o.valueStart, w.end, `Unknown option "${o.value}" for group ${o.key}${near.length ? `. Did you mean "${near[0]}"?` : ` (options: ${[...group.options.keys()].join(', ')})`}`, 'unknown-option', DiagnosticSeverity.Error, near);
        }
        continue;
      }
      if (o.key.includes('/')) {
        const near = didYouMean(o.key, model.groups.keys());
        push(o.keyStart, o.keyEnd, `Unknown config group "${o.key}"${near.length ? `. Did you mean "${near[0]}"?` : ''}`, 'unknown-group', DiagnosticSeverity.Error, near);
        continue;
      }
      const p = parts(o.key);
      const node = nodeAt(model, p);
      if (!node) {
        const parent = nodeAt(model, p.slice(0, -1));
        // `++key` forces a new key into an open config; in a closed (structured) one hydra rejects it too.
        if (parent && !parent.closed && o.prefix !== '') continue;
        const siblings = parent?.properties ? [...parent.properties.keys()].map((k) => [...p.slice(0, -1), k].join('.')) : [];
        const candidates = parent ? [...siblings, ...model.groups.keys()] : [...allPaths(model.root), ...model.groups.keys()];
        const near = didYouMean(o.key, candidates);
        if (parent || model.root.closed) push(o.keyStart, o.keyEnd, `Unknown config key "${o.key}"${near.length ? `. Did you mean "${near[0]}"?` : ''}`, 'unknown-key', DiagnosticSeverity.Error, near);
        continue;
      }
      if (o.prefix === '+') {
        push(o.keyStart - 1, o.keyEnd, `"${o.key}" already exists: "+" appends a new key (write ${o.key}=... to change it, or ++${o.key}=... to force)`, 'override-exists', DiagnosticSeverity.Warning);
      }
      if (o.value === undefined || o.prefix === '~') continue;
      const parsed = parseValue(o.value);
      if (!parsed) continue;
      const bad = node.properties && !node.types.includes('string') ? `${o.key} is a config node (${typeText(node)}); set its keys, e.g. ${o.key}.${[...node.properties.keys()][0]}=...` : checkScalar(node, parsed.value, parsed.raw);
      if (bad) push(o.valueStart, w.end, `${o.key}: ${bad}`, 'wrong-type');
    }
  }
  return out;
}

function commandAt(text: string, offset: number): TrainerCommand | undefined {
  return findTrainerCommands(text).find((c) => offset > c.argsStart && offset <= c.end);
}

export function overrideCompletion(model: HydraModel, doc: TextDocument, pos: Position): CompletionList | null {
  if (model.origin === 'none') return null;
  const text = doc.getText();
  const offset = doc.offsetAt(pos);
  const cmd = commandAt(text, offset);
  if (!cmd) return null;
  let s = offset;
  while (s > cmd.argsStart && !/\s/.test(text[s - 1])) s--;
  let e = offset;
  while (e < cmd.end && !/\s/.test(text[e])) e++;
  const word = text.slice(s, offset).replace(/^["']/, '');
  const quoteShift = text[s] === '"' || text[s] === "'" ? 1 : 0;
  const m = /^(\+\+|\+|~)?([\w.@/-]*)(=.*)?$/.exec(word);
  if (!m) return null;
  const keyStart = s + quoteShift + (m[1]?.length ?? 0);
  if (m[3] !== undefined) {
    const key = m[2];
    const range = { start: doc.positionAt(keyStart + key.length + 1), end: doc.positionAt(e) };
    const items = model.groups.has(key) ? groupOptionItems(model, key) : valueItems(nodeAt(model, parts(key)) ?? { types: [], closed: false });
    return { isIncomplete: false, items: items.map((it) => ({ ...it, textEdit: { range, newText: it.label } })) };
  }
  const key = m[2];
  const range = { start: doc.positionAt(keyStart), end: doc.positionAt(e) };
  const dot = key.lastIndexOf('.');
  const parentPath = dot < 0 ? [] : parts(key.slice(0, dot));
  const parent = nodeAt(model, parentPath);
  const items: CompletionItem[] = [];
  const prefix = dot < 0 ? '' : `${key.slice(0, dot)}.`;
  for (const [k, n] of parent?.properties ?? []) {
    const object = Boolean(n.properties) && !model.groups.has(prefix + k);
    const full = prefix + k;
    items.push({
      label: full,
      kind: object ? CompletionItemKind.Module : CompletionItemKind.Property,
      detail: typeText(n),
      documentation: n.description,
      filterText: full,
      textEdit: { range, newText: object ? `${full}.` : `${full}=` },
      command: { title: 'more', command: 'editor.action.triggerSuggest' },
    });
  }
  if (dot < 0 || key.includes('/')) {
    for (const g of model.groups.values()) {
      items.push({
        label: g.path,
        kind: CompletionItemKind.Folder,
        detail: `config group${g.default ? ` (default ${g.default})` : ''}`,
        documentation: `Options: ${[...g.options.keys()].join(', ')}`,
        filterText: g.path,
        sortText: `0${g.path}`,
        textEdit: { range, newText: `${g.path}=` },
        command: { title: 'options', command: 'editor.action.triggerSuggest' },
      });
    }
  }
  return { isIncomplete: false, items };
}

function overrideAt(text: string, offset: number): Override | undefined {
  const cmd = commandAt(text, offset + 1) ?? commandAt(text, offset);
  const w = cmd?.words.find((x) => offset >= x.start && offset <= x.end);
  return w ? parseOverride(w) : undefined;
}

export function overrideHover(model: HydraModel, doc: TextDocument, pos: Position): Hover | null {
  const o = overrideAt(doc.getText(), doc.offsetAt(pos));
  if (!o) return null;
  const range = { start: doc.positionAt(o.keyStart), end: doc.positionAt(o.keyEnd) };
  const g = model.groups.get(o.key);
  if (g) {
    const opts = [...g.options.keys()].map((k) => (k === g.default ? `\`${k}\` (default)` : `\`${k}\``)).join(', ');
    return { range, contents: { kind: MarkupKind.Markdown, value: `**${g.path}** · config group\n\nOptions: ${opts}` } };
  }
  const n = nodeAt(model, parts(o.key));
  return n ? { range, contents: { kind: MarkupKind.Markdown, value: schemaMarkdown(o.key, n) } } : null;
}

export function overrideDefinition(model: HydraModel, doc: TextDocument, pos: Position): Location | null {
  const o = overrideAt(doc.getText(), doc.offsetAt(pos));
  return o && o.value !== undefined && model.groups.has(o.key) ? optionLocation(model, o.key, o.value) : null;
}
