/**
 * LIBTPU_INIT_ARGS / XLA_FLAGS strings: completion, hover, diagnostics and quick fixes. Pure functions of
 * (document, position); the server only wires them to the connection.
 */
import {
  CodeActionKind,
  CompletionItemKind,
  DiagnosticSeverity,
  MarkupKind,
  type CodeAction,
  type CompletionItem,
  type CompletionList,
  type Diagnostic,
  type Hover,
  type Position,
} from 'vscode-languageserver';
import type { TextDocument } from 'vscode-languageserver-textdocument';
import { checkValue, expectedValue, FLAG_BY_NAME, FLAGS, GONE_FLAGS, goneFlagMessage, misplaced, normalizeValue, valueChoices, type FlagInfo } from '../flags/catalog';
import { findFlagRegions, type FlagRegion, type FlagToken } from '../flags/regions';
import { didYouMean, fuzzyScore } from './fuzzy';

export const DIAGNOSTIC_SOURCE = 'tpu-workbench';
/** Completion lists are cut here: past a few dozen, nobody scrolls, and the transfer costs latency. */
const MAX_ITEMS = 100;
const NAMES = FLAGS.map((f) => f.name);

export interface UnknownFlagData {
  kind: 'unknown-flag';
  suggestions: string[];
}

function regionAt(text: string, offset: number): FlagRegion | undefined {
  return findFlagRegions(text).find((r) => offset >= r.start && offset <= r.end);
}

/** Completion inside a flag string: flag names (fuzzy) after `-`/`--` or on a blank, values after `=`. */
export function flagCompletion(doc: TextDocument, pos: Position): CompletionList | null {
  const text = doc.getText();
  const offset = doc.offsetAt(pos);
  const region = regionAt(text, offset);
  if (!region) return null;
  // The word being typed: back from the cursor to a blank or the string's start.
  let s = offset;
  while (s > region.start && !/\s/.test(text[s - 1])) s--;
  let e = offset;
  while (e < region.end && !/\s/.test(text[e])) e++;
  const word = text.slice(s, offset);
  if (word !== '' && !word.startsWith('-')) return null;
  const dashes = word.startsWith('--') ? 2 : word.startsWith('-') ? 1 : 0;
  const eq = word.indexOf('=');
  if (eq >= 0) {
    const flag = FLAG_BY_NAME.get(word.slice(dashes, eq));
    if (!flag) return null;
    const range = { start: doc.positionAt(s + eq + 1), end: doc.positionAt(e) };
    const items: CompletionItem[] = valueChoices(flag).map((v, i) => ({
      label: v,
      kind: CompletionItemKind.Value,
      detail: v === String(flag.default) ? 'default' : undefined,
      sortText: String(i).padStart(3, '0'),
      textEdit: { range, newText: v },
    }));
    return { isIncomplete: false, items };
  }
  const query = word.slice(dashes);
  const range = { start: doc.positionAt(s), end: doc.positionAt(e) };
  const scored: { f: FlagInfo; score: number }[] = [];
  for (const f of FLAGS) {
    const score = fuzzyScore(query, f.name);
    if (score !== undefined) scored.push({ f, score: score + (placedWell(f, region) ? 1 : 0) });
  }
  scored.sort((a, b) => b.score - a.score || a.f.name.localeCompare(b.f.name));
  const items = scored.slice(0, MAX_ITEMS).map(({ f }, i): CompletionItem => {
    const bool = f.type === 'bool';
    return {
      label: `--${f.name}`,
      kind: CompletionItemKind.Property,
      detail: `${f.tristate ? 'tri-state' : f.type}${f.default !== undefined ? ` = ${String(f.default)}` : ''} · ${f.scope === 'libtpu' ? 'libtpu' : 'XLA'}`,
      documentation: f.doc,
      // The client filters on this against the typed word, which includes the dashes.
      filterText: `--${f.name}`,
      sortText: String(i).padStart(3, '0'),
      textEdit: { range, newText: bool ? `--${f.name}=true` : `--${f.name}=` },
      // After `--name=`, open the value list at once.
      command: bool ? undefined : { title: 'values', command: 'editor.action.triggerSuggest' },
    };
  });
  return { isIncomplete: scored.length > MAX_ITEMS, items };
}

function placedWell(f: FlagInfo, region: FlagRegion): boolean {
  return misplaced(f, region.variable) === undefined;
}

function tokenAt(text: string, offset: number): { region: FlagRegion; token: FlagToken } | undefined {
  const region = regionAt(text, offset);
  const token = region?.tokens.find((t) => offset >= t.start && offset <= t.end);
  return region && token ? { region, token } : undefined;
}

/** Markdown for one flag: what it does, its type, default, values and where it was seen. */
export function describeFlagMarkdown(f: FlagInfo): string {
  const lines = [`**--${f.name}** · ${f.tristate ? 'tri-state' : f.type}${f.list ? ' list' : ''}`, '', f.doc, ''];
  lines.push(`- values: ${expectedValue(f)}`);
  if (f.default !== undefined) lines.push(`- default: \`${String(f.default)}\``);
  if (f.seen?.length) lines.push(`- seen in recipes: ${f.seen.map((v) => `\`${v}\``).join(', ')}`);
  lines.push(`- read by: ${f.scope === 'libtpu' ? 'libtpu (LIBTPU_INIT_ARGS)' : 'XLA debug options (XLA_FLAGS; libtpu reads them too)'}`);
  if (f.platform !== 'any') lines.push(`- backend: ${f.platform.toUpperCase()}`);
  lines.push(`- source: ${f.source}`);
  return lines.join('\n');
}

export function flagHover(doc: TextDocument, pos: Position): Hover | null {
  const hit = tokenAt(doc.getText(), doc.offsetAt(pos));
  if (!hit) return null;
  const f = FLAG_BY_NAME.get(hit.token.name);
  const range = { start: doc.positionAt(hit.token.start), end: doc.positionAt(hit.token.end) };
  if (!f) {
    const gone = GONE_FLAGS.get(hit.token.name);
    if (gone) return { range, contents: { kind: MarkupKind.Markdown, value: `**--${gone.name}** · not in XLA\n\n${goneFlagMessage(gone)}` } };
    const near = didYouMean(hit.token.name, NAMES);
    const hint = near.length ? ` Did you mean ${near.map((n) => `\`--${n}\``).join(', ')}?` : '';
    return { range, contents: { kind: MarkupKind.Markdown, value: `**--${hit.token.name}** is not in the flag catalog (it may be a private libtpu flag).${hint}` } };
  }
  return { range, contents: { kind: MarkupKind.Markdown, value: describeFlagMarkdown(f) } };
}

/** Every problem in every flag string of the document. */
export function flagDiagnostics(doc: TextDocument): Diagnostic[] {
  const out: Diagnostic[] = [];
  const range = (a: number, b: number) => ({ start: doc.positionAt(a), end: doc.positionAt(b) });
  for (const region of findFlagRegions(doc.getText())) {
    const firstSeen = new Map<string, FlagToken>();
    for (const t of region.tokens) {
      const f = FLAG_BY_NAME.get(t.name);
      const gone = f ? undefined : GONE_FLAGS.get(t.name);
      if (gone) {
        // XLA's XLA_FLAGS parser stops the process on a name it does not take (torch_xla: "Unknown flag in XLA_FLAGS").
        const fatal = region.variable === 'XLA_FLAGS';
        // A name-only fix where the value carries over as it is; a changed value is for the author to write.
        const data: UnknownFlagData = { kind: 'unknown-flag', suggestions: gone.replacement && !gone.value ? [gone.replacement] : [] };
        out.push({
          range: range(t.nameStart, t.nameEnd),
          severity: fatal ? DiagnosticSeverity.Error : DiagnosticSeverity.Warning,
          source: DIAGNOSTIC_SOURCE,
          code: gone.kind === 'removed' ? 'removed-flag' : 'not-a-flag',
          message: `${goneFlagMessage(gone)}${fatal ? ' XLA_FLAGS stops the program at start-up on it.' : ''}`,
          data,
        });
        continue;
      }
      if (!f) {
        const suggestions = didYouMean(t.name, NAMES);
        const data: UnknownFlagData = { kind: 'unknown-flag', suggestions };
        out.push({
          range: range(t.nameStart, t.nameEnd),
          // A warning, not an error: libtpu has private flags no public catalog lists.
          severity: DiagnosticSeverity.Warning,
          source: DIAGNOSTIC_SOURCE,
          code: 'unknown-flag',
          message: `Unknown flag --${t.name}${suggestions.length ? `. Did you mean --${suggestions[0]}?` : ' (not in the catalog; libtpu ignores or rejects flags it does not know).'}`,
          data,
        });
        continue;
      }
      const bad = checkValue(f, t.value);
      if (bad) {
        out.push({ range: t.value === undefined ? range(t.start, t.end) : range(t.valueStart, t.valueEnd), severity: DiagnosticSeverity.Error, source: DIAGNOSTIC_SOURCE, code: 'bad-value', message: bad });
      }
      const wrongPlace = misplaced(f, region.variable);
      if (wrongPlace) {
        out.push({
          range: range(t.nameStart, t.nameEnd),
          severity: wrongPlace.severity === 'error' ? DiagnosticSeverity.Error : DiagnosticSeverity.Warning,
          source: DIAGNOSTIC_SOURCE,
          code: 'misplaced-flag',
          message: wrongPlace.message,
        });
      }
      const first = firstSeen.get(t.name);
      if (!first) firstSeen.set(t.name, t);
      else if (!bad && normalizeValue(f, first.value) !== normalizeValue(f, t.value)) {
        out.push({
          range: range(t.start, t.end),
          severity: DiagnosticSeverity.Warning,
          source: DIAGNOSTIC_SOURCE,
          code: 'duplicate-flag',
          message: `--${t.name} is given twice with different values (${first.value ?? 'true'} on line ${doc.positionAt(first.start).line + 1}, then ${t.value ?? 'true'}); the last one wins.`,
          relatedInformation: [{ location: { uri: doc.uri, range: range(first.start, first.end) }, message: 'first given here' }],
        });
      }
    }
  }
  return out;
}

/** Did-you-mean suggestions carried by a config / override diagnostic, for its quick fix. */
export interface DidYouMeanData {
  kind: 'did-you-mean';
  suggestions: string[];
}

export function didYouMeanData(suggestions: string[]): { data?: DidYouMeanData } {
  return suggestions.length ? { data: { kind: 'did-you-mean', suggestions } } : {};
}

function suggestionsOf(d: Diagnostic): { suggestions: string[]; flag: boolean } | undefined {
  const data = d.data as { kind?: unknown; suggestions?: unknown } | undefined;
  if (!data || !Array.isArray(data.suggestions) || !data.suggestions.every((x) => typeof x === 'string')) return undefined;
  if (data.kind === 'unknown-flag' && (d.code === 'unknown-flag' || d.code === 'removed-flag' || d.code === 'not-a-flag')) return { suggestions: data.suggestions as string[], flag: true };
  if (data.kind === 'did-you-mean') return { suggestions: data.suggestions as string[], flag: false };
  return undefined;
}

/**
 * Quick fixes for the diagnostics the client sends back: replace the misspelt name (a flag, a config key, a
 * group or an option) with one of the diagnostic's suggestions, the closest one preferred.
 */
export function quickFixes(doc: TextDocument, diagnostics: Diagnostic[]): CodeAction[] {
  const actions: CodeAction[] = [];
  for (const d of diagnostics) {
    const s = suggestionsOf(d);
    if (!s) continue;
    s.suggestions.forEach((name, i) => {
      actions.push({
        title: s.flag ? `Change to --${name}` : `Change to "${name}"`,
        kind: CodeActionKind.QuickFix,
        diagnostics: [d],
        isPreferred: i === 0,
        edit: { changes: { [doc.uri]: [{ range: d.range, newText: name }] } },
      });
    });
  }
  return actions;
}
