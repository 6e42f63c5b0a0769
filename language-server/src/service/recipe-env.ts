/**
 * The environment variables a recipe may `export` for the trainer's native TPU path (TorchTPU) and its
 * launcher: completion of their names after `export `, hover, a warning on a TORCH_TPU_* name TorchTPU does not
 * read (with the nearest one), and the tcmalloc hint TorchTPU prints at start when a device=tpu recipe does not
 * preload it. Pure functions of (document, position).
 *
 * The names are those torch_tpu 0.2.0 reads (its env_*.so and torch_tpu/_internal/distributed/distributed.py,
 * `set_tpu_launch_env`), the ones the trainer's launcher computes (trainer/tpu_trainer/launch.py) and torch's
 * backend autoload switch. A recipe sets one only to pin what the launcher would otherwise compute.
 */
import {
  CompletionItemKind,
  DiagnosticSeverity,
  InsertTextFormat,
  MarkupKind,
  type CompletionItem,
  type CompletionList,
  type Diagnostic,
  type Hover,
  type Position,
} from 'vscode-languageserver';
import type { TextDocument } from 'vscode-languageserver-textdocument';
import { didYouMean } from './fuzzy';

export const TCMALLOC = '/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4';

export interface RecipeVariable {
  name: string;
  doc: string;
  /** Values worth offering after `=`. */
  values?: string[];
}

export const RECIPE_VARIABLES: RecipeVariable[] = [
  { name: 'TORCH_TPU_SLICEBUILDER_ADDRESSES', doc: 'One `host:port` per rank of the slice, the same list on every rank. The trainer\'s launcher computes it as TorchTPU\'s `set_tpu_launch_env` does: `<host>:<TORCH_TPU_BASE_PORT + i>` for every host of `TPU_WORKER_HOSTNAMES` and local device `i`, or `localhost:<unused port>` per rank on one host.' },
  { name: 'TORCH_TPU_TOPOLOGY', doc: 'This host\'s chip mesh, e.g. `2,2,1` (v6e-4), `2,4,1` (v6e-8), `2,2,1,2` (TPU7x: two devices per chip). Computed from the host\'s TPU devices when unset.', values: ['1,1,1', '2,2,1', '2,4,1', '2,2,2', '2,2,1,2'] },
  { name: 'TORCH_TPU_XPROF_SESSION_ID', doc: 'The profiling session every rank shares. The trainer uses the run\'s id (TPW_RUN_ID), so every host of a run has the same one.' },
  { name: 'TORCH_TPU_BASE_PORT', doc: 'First port of the slicebuilder addresses on several hosts (TorchTPU\'s default 8070; device i uses base + i).', values: ['8070'] },
  { name: 'TORCH_TPU_DEVICES_PER_HOST', doc: 'Ranks per host in the slicebuilder addresses on several hosts, and the processes the trainer starts per host with device=tpu (default: the TPU devices found).', values: ['4', '8'] },
  { name: 'TORCH_TPU_ALLOW_LEGACY_DEVICE_APIS', doc: 'Read by torch_tpu: allows device APIs it has deprecated.', values: ['0', '1'] },
  { name: 'TORCH_TPU_ENABLE_DEBUG_CHECKS', doc: 'Read by torch_tpu: extra runtime checks (slower).', values: ['0', '1'] },
  { name: 'TORCH_TPU_INTERNAL_HANDSHAKE_PORT', doc: 'Read by torch_tpu: the port of the ranks\' start-up handshake.' },
  { name: 'TORCH_TPU_INTERNAL_HANDSHAKE_TIMEOUT_S', doc: 'Read by torch_tpu: how long the ranks\' start-up handshake waits, in seconds.' },
  { name: 'TORCH_TPU_INTERNAL_MATERIALIZE_COLLECTIVE_TENSORS', doc: 'Read by torch_tpu (internal).', values: ['0', '1'] },
  { name: 'TORCH_TPU_INTERNAL_STORAGE_AWARE_PLACEHOLDERS', doc: 'Read by torch_tpu (internal).', values: ['0', '1'] },
  { name: 'TORCH_TPU_INTERNAL_ENABLE_REASSOCIATE_NORM_WEIGHTS', doc: 'Read by torch_tpu (internal).', values: ['0', '1'] },
  { name: 'TORCH_TPU_IS_OPTIMIZED_BUILD', doc: 'Read by torch_tpu (internal).', values: ['0', '1'] },
  { name: 'TORCH_DEVICE_BACKEND_AUTOLOAD', doc: 'torch\'s switch for loading installed device backends (torch_tpu) at `import torch`. The trainer turns it off on a machine without a TPU, where loading torch_tpu costs seconds for nothing.', values: ['0', '1'] },
  { name: 'LD_PRELOAD', doc: `TorchTPU warns at start when tcmalloc is not the allocator ("host performance may be degraded due to glibc ptmalloc contention"). Preload it: \`${TCMALLOC}\` (Debian/Ubuntu package libtcmalloc-minimal4).`, values: [TCMALLOC] },
];
const BY_NAME = new Map(RECIPE_VARIABLES.map((v) => [v.name, v]));
const TORCH_TPU_NAMES = RECIPE_VARIABLES.filter((v) => v.name.startsWith('TORCH_TPU_')).map((v) => v.name);

const EXPORT = /^(\s*export\s+)([A-Za-z_][A-Za-z0-9_]*)?(=\S*)?/;

function isRecipe(doc: TextDocument): boolean {
  return doc.languageId === 'shellscript' || doc.uri.endsWith('.sh');
}

/** `export NAME` (names) or `export NAME=` (that variable's values) at the cursor. */
export function recipeEnvCompletion(doc: TextDocument, pos: Position): CompletionList | null {
  if (!isRecipe(doc)) return null;
  const before = doc.getText({ start: { line: pos.line, character: 0 }, end: pos });
  const m = EXPORT.exec(before);
  if (!m || m[0].length !== before.length) return null;
  const [, lead, name = '', value] = m;
  if (value === undefined) {
    const range = { start: { line: pos.line, character: lead.length }, end: pos };
    const items: CompletionItem[] = RECIPE_VARIABLES.filter((v) => v.name.startsWith(name.toUpperCase())).map((v) => ({
      label: v.name,
      kind: CompletionItemKind.Variable,
      documentation: { kind: MarkupKind.Markdown, value: v.doc },
      textEdit: { range, newText: `${v.name}=` },
      insertTextFormat: InsertTextFormat.PlainText,
    }));
    return items.length ? { isIncomplete: false, items } : null;
  }
  const values = BY_NAME.get(name)?.values;
  if (!values) return null;
  const start = lead.length + name.length + 1;
  const range = { start: { line: pos.line, character: start }, end: pos };
  return { isIncomplete: false, items: values.map((v) => ({ label: v, kind: CompletionItemKind.Value, textEdit: { range, newText: v } })) };
}

export function recipeEnvHover(doc: TextDocument, pos: Position): Hover | null {
  if (!isRecipe(doc)) return null;
  const line = doc.getText({ start: { line: pos.line, character: 0 }, end: { line: pos.line + 1, character: 0 } });
  const m = EXPORT.exec(line);
  if (!m?.[2]) return null;
  const start = m[1].length;
  if (pos.character < start || pos.character > start + m[2].length) return null;
  const v = BY_NAME.get(m[2]);
  if (!v) return null;
  return {
    contents: { kind: MarkupKind.Markdown, value: `**${v.name}**\n\n${v.doc}` },
    range: { start: { line: pos.line, character: start }, end: { line: pos.line, character: start + v.name.length } },
  };
}

export function recipeEnvDiagnostics(doc: TextDocument): Diagnostic[] {
  if (!isRecipe(doc)) return [];
  const out: Diagnostic[] = [];
  const lines = doc.getText().split('\n');
  let tcmalloc = false;
  lines.forEach((line, i) => {
    const m = EXPORT.exec(line);
    if (!m?.[2]) return;
    const name = m[2];
    if (name === 'LD_PRELOAD' && /tcmalloc/.test(m[3] ?? '')) tcmalloc = true;
    if (name.startsWith('TORCH_TPU_') && !BY_NAME.has(name)) {
      const near = didYouMean(name, TORCH_TPU_NAMES, 1)[0];
      out.push({
        range: { start: { line: i, character: m[1].length }, end: { line: i, character: m[1].length + name.length } },
        severity: DiagnosticSeverity.Warning,
        source: 'tpu-workbench',
        message: `torch_tpu does not read ${name}${near ? `; did you mean ${near}?` : ''}`,
      });
    }
  });
  if (!tcmalloc) {
    lines.forEach((line, i) => {
      const at = line.search(/(^|\s)device=tpu(\s|$|\\)/);
      if (at < 0) return;
      const start = line.indexOf('device=tpu', at);
      out.push({
        range: { start: { line: i, character: start }, end: { line: i, character: start + 'device=tpu'.length } },
        severity: DiagnosticSeverity.Information,
        source: 'tpu-workbench',
        message: `TorchTPU warns at start when tcmalloc is not loaded: add \`export LD_PRELOAD=${TCMALLOC}\` to the recipe.`,
      });
    });
  }
  return out;
}
