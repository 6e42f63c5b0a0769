/**
 * SkyPilot task YAML (what `tpw launch` runs): completion of its fields and of TPU accelerator names, hover
 * with what a field does (or why tpw refuses it), and diagnostics from the same check `tpw launch` makes
 * (protocol/task-yaml-check.ts), placed on the field at fault. Accelerator names come from the catalog the
 * emulator (and so the create wizard on it) offers: protocol/tpu-catalog.ts.
 */
import { enclosingKeys } from './yaml-blocks';
import { isMap, isScalar, parseDocument, type Document } from 'yaml';
import { CompletionItemKind, DiagnosticSeverity, MarkupKind, type CompletionItem, type CompletionList, type Diagnostic, type Hover, type Position } from 'vscode-languageserver/node';
import type { TextDocument } from 'vscode-languageserver-textdocument';
import { parseTaskYaml } from '../../../protocol/task-yaml-check';
import { tpuVmWarnings } from '../../../protocol/task-yaml-vm';
import { RESOURCE_FIELDS, TASK_FIELDS } from '../../../protocol/task-yaml-spec';
import { catalogAcceleratorTypes } from '../../../protocol/tpu-catalog';
import { DIAGNOSTIC_SOURCE } from './flags';

/** Top-level keys only a task YAML has at its top (a hydra config nests `run:` under `hydra:`, if at all). */
const TASK_MARKERS = ['resources', 'run', 'setup', 'num_nodes', 'file_mounts', 'workdir'];
const ARG_FIELDS: Record<string, string> = {
  runtime_version: 'The TPU VM software version (e.g. v2-alpha-tpuv6e); default: the one recommended for the type.',
  tpu_vm: 'Must be true (or left out): tpw runs on TPU VMs, not the legacy TPU Nodes.',
};

/** A YAML document whose top level looks like a SkyPilot task. */
export function isTaskYaml(doc: TextDocument): boolean {
  if (!/\.ya?ml$/i.test(doc.uri)) return false;
  const text = doc.getText();
  return TASK_MARKERS.some((k) => new RegExp(`^${k}\\s*:`, 'm').test(text));
}

export function taskDiagnostics(doc: TextDocument): Diagnostic[] {
  if (!isTaskYaml(doc)) return [];
  const text = doc.getText();
  const ydoc = parseDocument(text, { version: '1.1' });
  const out: Diagnostic[] = [];
  const parsed = parseTaskYaml(text);
  for (const p of parsed.problems) {
    const r = p.field === '' ? ydoc.errors[0]?.pos : locate(ydoc, p.field);
    // "Unsupported" about something the file does not say (no accelerators: a task that may be meant for
    // another SkyPilot cloud) is for `tpw launch` to say when asked; the editor marks only what is written.
    if (!r && p.kind === 'unsupported') continue;
    const [start, end] = r ?? [0, 0];
    out.push({
      range: { start: doc.positionAt(start), end: doc.positionAt(end) },
      // Invalid: SkyPilot refuses it too. Unsupported: valid SkyPilot that `tpw launch` will not run.
      severity: p.kind === 'invalid' ? DiagnosticSeverity.Error : DiagnosticSeverity.Warning,
      code: p.kind === 'invalid' ? 'task-yaml-invalid' : 'task-yaml-unsupported',
      source: DIAGNOSTIC_SOURCE,
      message: `${p.field === '' ? 'The file' : p.field} ${p.message}`,
    });
  }
  for (const w of parsed.task ? tpuVmWarnings(parsed.task) : []) {
    const [start, end] = locate(ydoc, w.field) ?? [0, 0];
    out.push({ range: { start: doc.positionAt(start), end: doc.positionAt(end) }, severity: DiagnosticSeverity.Warning, code: 'task-yaml-tpu-vm', source: DIAGNOSTIC_SOURCE, message: `${w.field} ${w.message}` });
  }
  return out;
}

/** The key of a dotted field path (`resources.accelerator_args.tpu_vm`, `file_mounts.~/a.b`): keys may hold dots. */
function locate(ydoc: Document, field: string): [number, number] | undefined {
  let node: unknown = ydoc.contents;
  let rest = field;
  let found: [number, number] | undefined;
  while (rest !== '' && isMap(node)) {
    let best: { key: string; range: [number, number]; value: unknown } | undefined;
    for (const pair of node.items) {
      const k = isScalar(pair.key) ? String(pair.key.value) : undefined;
      if (k === undefined || !(rest === k || rest.startsWith(`${k}.`)) || (best && best.key.length >= k.length)) continue;
      const range = isScalar(pair.key) && pair.key.range ? pair.key.range : undefined;
      if (range) best = { key: k, range: [range[0], range[1]], value: pair.value };
    }
    if (!best) break;
    found = best.range;
    rest = rest.slice(best.key.length + 1);
    node = best.value;
  }
  return found;
}

/** Keys of the lines above `line` that enclose an indentation of `indent` (outermost first). */
function parents(doc: TextDocument, line: number, indent: number): string[] {
  return enclosingKeys(doc, line, indent, (text) => /^\s*([\w.-]+)\s*:/.exec(text)?.[1]);
}

function fieldItems(fields: Readonly<Record<string, { doc: string; unsupported?: string }>>): CompletionItem[] {
  return Object.entries(fields)
    .filter(([k, f]) => !k.startsWith('_') && !f.unsupported)
    .map(([k, f], i) => ({ label: k, kind: CompletionItemKind.Property, documentation: f.doc, insertText: `${k}: `, sortText: String(i).padStart(3, '0') }));
}

export function taskCompletion(doc: TextDocument, pos: Position): CompletionList | null {
  if (!isTaskYaml(doc)) return null;
  const before = doc.getText({ start: { line: pos.line, character: 0 }, end: pos });
  const indent = /^\s*/.exec(before)![0].length;
  const up = parents(doc, pos.line, indent);
  const inResources = up.length === 1 && up[0] === 'resources';
  const acc = /^\s*accelerators\s*:\s*([\w-]*)$/.exec(before);
  if (acc && inResources) {
    const items = catalogAcceleratorTypes().map((t, i): CompletionItem => ({ label: `tpu-${t}`, kind: CompletionItemKind.EnumMember, sortText: String(i).padStart(3, '0') }));
    return { isIncomplete: false, items };
  }
  if (!/^\s*[\w]*$/.test(before)) return null;
  if (indent === 0) return { isIncomplete: false, items: fieldItems(TASK_FIELDS) };
  if (inResources) return { isIncomplete: false, items: fieldItems(RESOURCE_FIELDS) };
  if (up.length === 2 && up[0] === 'resources' && up[1] === 'accelerator_args') {
    return { isIncomplete: false, items: Object.entries(ARG_FIELDS).map(([k, d]) => ({ label: k, kind: CompletionItemKind.Property, documentation: d, insertText: `${k}: ` })) };
  }
  return null;
}

export function taskHover(doc: TextDocument, pos: Position): Hover | null {
  if (!isTaskYaml(doc)) return null;
  const text = doc.getText({ start: { line: pos.line, character: 0 }, end: { line: pos.line + 1, character: 0 } }).replace(/\r?\n$/, '');
  const m = /^(\s*)([\w.-]+)\s*:/.exec(text);
  if (!m || pos.character < m[1].length || pos.character > m[1].length + m[2].length) return null;
  const up = parents(doc, pos.line, m[1].length);
  const table = up.length === 0 ? TASK_FIELDS : up.length === 1 && up[0] === 'resources' ? RESOURCE_FIELDS : undefined;
  const f = table?.[m[2]];
  const doc2 = up.length === 2 && up[1] === 'accelerator_args' ? ARG_FIELDS[m[2]] : undefined;
  const value = f ? (f.unsupported ? `**Not supported by tpw launch**: ${f.unsupported}` : f.doc) : doc2;
  if (!value) return null;
  const start = { line: pos.line, character: m[1].length };
  return { contents: { kind: MarkupKind.Markdown, value: `\`${m[2]}\` (SkyPilot task YAML)\n\n${value}` }, range: { start, end: { line: pos.line, character: start.character + m[2].length } } };
}
