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
import { nodeAt, typeText, type HydraModel } from '../hydra/model';
import { DIAGNOSTIC_SOURCE, didYouMeanData } from './flags';
import type { ParsedOverride } from './hydra-override-grammar';
import { checkOverride, type LineContext, type Problem } from './override-check';
import { commandRuleProblems } from './override-rules';
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
  /** The document offset of each character of value. */
  map: number[];
  /** What bash itself does to the word (expansions, syntax) that the author probably did not mean. */
  issues: ShellIssue[];
  /** The word holds a shell expansion ($VAR, "$@", `...`) whose value is not known here. */
  dynamic: boolean;
}

export interface ShellIssue {
  start: number;
  end: number;
  message: string;
  severity: 'error' | 'warning';
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

/** Options of hydra's command line that take the next word as their argument. */
const OPTION_WITH_ARG = new Set(['--cfg', '-c', '--package', '-p', '--config-path', '-cp', '--config-name', '-cn', '--config-dir', '-cd', '--experimental-rerun']);

const BASH_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Where a `{` opened outside quotes closes, when bash would brace-expand it (a `,` or `..` at its top level). */
function braceExpansionEnd(text: string, i: number, end: number): number | undefined {
  let depth = 0;
  let expands = false;
  for (let j = i; j < end && !/\s/.test(text[j]); j++) {
    const c = text[j];
    if (c === "'" || c === '"' || c === '\\') return undefined;
    if (c === '{') depth++;
    else if (c === '}') {
      depth--;
      if (depth === 0) return expands ? j + 1 : undefined;
    } else if (depth === 1 && (c === ',' || (c === '.' && text[j + 1] === '.'))) expands = true;
  }
  return undefined;
}

/** `a,b{c,d}` → [a, b{c,d}]: bash's alternatives, split at commas outside nested braces. */
function splitTopLevel(s: string): string[] {
  if (!s.includes(',')) return [s]; // a {1..3} sequence: left as written
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const c of s) {
    if (c === ',' && depth === 0) {
      out.push(cur);
      cur = '';
      continue;
    }
    if (c === '{') depth++;
    if (c === '}') depth--;
    cur += c;
  }
  out.push(cur);
  return out;
}

function splitWords(text: string, start: number, end: number): Word[] {
  const words: Word[] = [];
  let i = start;
  while (i < end) {
    while (i < end && (/\s/.test(text[i]) || (text[i] === '\\' && /[\r\n]/.test(text[i + 1] ?? '')))) i++;
    if (i >= end || text[i] === '#' || text[i] === ';' || text[i] === '|' || text[i] === '&' || text[i] === '>' || text[i] === '<') break;
    const s = i;
    let value = '';
    const map: number[] = [];
    const issues: ShellIssue[] = [];
    let dynamic = false;
    let stop = false;
    let brace: { at: number; alts: string[]; docStart: number } | undefined;
    const add = (ch: string, at: number) => {
      value += ch;
      map.push(at);
    };
    /** `$...` at i (outside single quotes): returns the index after it. */
    const dollar = (j: number): number => {
      if (text[j + 1] === '{') {
        const close = text.indexOf('}', j + 2);
        const stopAt = close < 0 || close >= end ? end : close + 1;
        const body = text.slice(j + 2, stopAt - 1);
        if (BASH_NAME.test(body)) {
          issues.push({ start: j, end: stopAt, severity: 'warning', message: `bash replaces \${${body}} with the environment variable ${body} (empty when unset) before hydra sees it; put the override in single quotes to give hydra the interpolation` });
        } else {
          issues.push({ start: j, end: stopAt, severity: 'error', message: `bash stops at \${${body}} ("bad substitution"): put the override in single quotes ('...=\${${body}}') so hydra gets the interpolation` });
        }
        return stopAt;
      }
      if (text[j + 1] === '(') {
        // $(command): its output is not known here; skip to the matching parenthesis.
        dynamic = true;
        let depth = 0;
        for (let k = j + 1; k < end; k++) {
          if (text[k] === '(') depth++;
          else if (text[k] === ')' && --depth === 0) return k + 1;
        }
        return end;
      }
      if (/[A-Za-z_@*#?$!0-9]/.test(text[j + 1] ?? '')) dynamic = true;
      else add('$', j);
      return j + 1;
    };
    while (i < end && !/\s/.test(text[i])) {
      const c = text[i];
      if (c === "'") {
        const close = text.indexOf("'", i + 1);
        if (close < 0 || close >= end) {
          issues.push({ start: i, end, severity: 'error', message: "bash: this ' is never closed" });
          for (let k = i + 1; k < end; k++) add(text[k], k);
          i = end;
          break;
        }
        for (let k = i + 1; k < close; k++) add(text[k], k);
        i = close + 1;
      } else if (c === '"') {
        let j = i + 1;
        for (; j < end && text[j] !== '"'; ) {
          if (text[j] === '\\' && /[$`"\\\n]/.test(text[j + 1] ?? '')) {
            if (text[j + 1] !== '\n') add(text[j + 1], j + 1);
            j += 2;
          } else if (text[j] === '$') j = dollar(j);
          else {
            if (text[j] === '`') dynamic = true;
            add(text[j], j);
            j++;
          }
        }
        if (j >= end) issues.push({ start: i, end, severity: 'error', message: 'bash: this " is never closed' });
        i = Math.min(j + 1, end);
      } else if (c === '\\' && i + 1 < end) {
        if (!/[\r\n]/.test(text[i + 1])) add(text[i + 1], i + 1);
        i += 2;
      } else if (c === '$') i = dollar(i);
      else if (c === '`') {
        dynamic = true;
        add(c, i++);
      } else if (c === '(' || c === ')') {
        issues.push({ start: i, end: i + 1, severity: 'error', message: `bash reads "${c}" as syntax: put the override in single quotes` });
        add(c, i++);
      } else if (c === ';' || c === '|' || c === '&' || c === '<' || c === '>') {
        // `2>&1`: the digits name a file descriptor of the redirection, not an argument.
        if ((c === '<' || c === '>') && /^\d+$/.test(value)) value = '';
        stop = true;
        break;
      } else if (c === '{' && braceExpansionEnd(text, i, end) !== undefined) {
        const e = braceExpansionEnd(text, i, end)!;
        issues.push({ start: i, end: e, severity: 'warning', message: 'bash expands {a,b} into separate words (brace expansion) before hydra sees them: put the override in single quotes to pass a dict' });
        brace ??= { at: value.length, alts: splitTopLevel(text.slice(i + 1, e - 1)), docStart: i };
        i = e;
      } else add(c, i++);
    }
    i = Math.min(i, end);
    const valueStart = text[s] === '"' || text[s] === "'" ? s + 1 : s;
    if (brace) {
      // One word per alternative, as bash passes them; the issue is reported once.
      const b = brace;
      b.alts.forEach((alt, n) => {
        const v = value.slice(0, b.at) + alt + value.slice(b.at);
        const m = [...map.slice(0, b.at), ...[...alt].map(() => b.docStart), ...map.slice(b.at)];
        words.push({ start: s, end: i, value: v, valueStart, map: m, issues: n === 0 ? issues : [], dynamic });
      });
    } else if (i > s && !(stop && value === '' && map.length > 0)) words.push({ start: s, end: i, value, valueStart, map, issues, dynamic });
    if (stop) break;
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

export function overrideDiagnostics(model: HydraModel, doc: TextDocument): Diagnostic[] {
  if (model.origin === 'none') return [];
  const out: Diagnostic[] = [];
  const text = doc.getText();
  for (const cmd of findTrainerCommands(text)) {
    for (const p of commandProblems(model, cmd, text)) {
      const range = { start: doc.positionAt(cmd.argsStart + p.start), end: doc.positionAt(cmd.argsStart + p.end) };
      out.push({ range, message: p.message, code: p.code, severity: p.severity === 'error' ? DiagnosticSeverity.Error : DiagnosticSeverity.Warning, source: DIAGNOSTIC_SOURCE, ...didYouMeanData(p.suggestions ?? []) });
    }
  }
  return out;
}

/** A problem of one trainer command, at offsets from the start of its arguments. */
type CommandProblem = Problem;

// Diagnostics run over the whole document at every change; a command whose text did not change has the same
// problems (its words depend on its own text only), so each is worked out once.
const commandMemo = new WeakMap<HydraModel, Map<string, CommandProblem[]>>();

function commandProblems(model: HydraModel, cmd: TrainerCommand, text: string): CommandProblem[] {
  let memo = commandMemo.get(model);
  if (!memo) commandMemo.set(model, (memo = new Map()));
  const key = text.slice(cmd.argsStart, cmd.end);
  let hit = memo.get(key);
  if (!hit) {
    hit = checkCommand(model, cmd);
    if (memo.size >= 4096) memo.delete(memo.keys().next().value!);
    memo.set(key, hit);
  }
  return hit;
}

function checkCommand(model: HydraModel, cmd: TrainerCommand): CommandProblem[] {
  const out: CommandProblem[] = [];
  const push = (start: number, end: number, p: Omit<CommandProblem, 'start' | 'end'>) => out.push({ start: start - cmd.argsStart, end: end - cmd.argsStart, ...p });
  const multirun = cmd.words.some((w) => w.value === '-m' || w.value === '--multirun');
  const ctx = lineContext(model, cmd.words);
  // The whole line's checks run only where every word is known and fine, as the trainer would see it.
  let whole = true;
  const parsed: { word: number; parsed: ParsedOverride }[] = [];
  let skipNext = false;
  cmd.words.forEach((w, i) => {
    for (const s of w.issues) push(s.start, s.end, { message: s.message, code: 'shell', severity: s.severity });
    if (skipNext || w.dynamic || w.issues.some((s) => s.severity === 'error')) {
      skipNext = false;
      whole = false;
      return;
    }
    if (w.value.startsWith('-')) {
      skipNext = OPTION_WITH_ARG.has(w.value);
      // Other options (--cfg, --help, -cn, ...) stop hydra before the job, or change the config.
      if (w.value !== '-m' && w.value !== '--multirun') whole = false;
      return;
    }
    const at = (k: number) => (k < w.map.length ? w.map[k] : k > 0 && w.map.length ? w.map[w.map.length - 1] + 1 : w.end);
    const checked = checkOverride(model, w.value, multirun, ctx);
    if (checked.problems.some((p) => p.severity === 'error')) whole = false;
    if (checked.parsed) parsed.push({ word: i, parsed: checked.parsed });
    for (const p of checked.problems) {
      const a = at(Math.max(0, p.start));
      const b = Math.max(at(Math.max(p.start, p.end - 1)) + 1, a + 1);
      push(a, Math.min(b, w.end), { message: p.message, code: p.code, severity: p.severity, suggestions: p.suggestions });
    }
  });
  if (!whole || !parsed.length) return out;
  for (const p of commandRuleProblems(model, parsed, multirun)) {
    const w = p.word === undefined ? undefined : cmd.words[p.word];
    const [a, b] = w ? [w.start, w.end] : [cmd.words[0].start, cmd.words[cmd.words.length - 1].end];
    push(a, b, { message: p.message, code: p.code, severity: 'error' });
  }
  return out;
}

/** The option each group is left with by the line's `group=option` words (what `~group=option` is held to). */
function lineContext(model: HydraModel, words: Word[]): LineContext {
  const choices = new Map<string, string>();
  for (const w of words) {
    const m = /^([A-Za-z_][\w/-]*)=([^,=\s()[\]{}'"]+)$/.exec(w.value);
    if (m && model.groups.has(m[1])) choices.set(m[1], m[2]);
  }
  return { choices };
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
      // hydra's own groups once the word starts with `hydra`: they are rarely set, and lists stay short.
      if (g.path.startsWith('hydra/') && !key.startsWith('hydra')) continue;
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
