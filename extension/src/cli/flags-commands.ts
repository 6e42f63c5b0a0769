/**
 * `tpw flags lint FILE...` and `tpw flags explain NAME`: the language server's flag catalog and checks on the
 * command line (for CI and for people outside VS Code). Same code as the editor's diagnostics, so the two
 * never disagree.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { TextDocument } from 'vscode-languageserver-textdocument';
import { expectedValue, FLAG_BY_NAME, FLAGS, GONE_FLAGS, goneFlagMessage, type FlagInfo } from '../../../language-server/src/flags/catalog';
import { flagDiagnostics } from '../../../language-server/src/service/flags';
import { didYouMean } from '../../../language-server/src/service/fuzzy';
import { UsageError, type CommandContext } from './context';

const SEVERITY = ['', 'error', 'warning', 'info', 'hint'];

function lint(ctx: CommandContext, files: string[]): number {
  if (files.length === 0) throw new UsageError('flags lint needs at least one FILE');
  let errors = 0;
  const report: { file: string; line: number; column: number; severity: string; code: string; message: string }[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (e) {
      ctx.err(`tpw flags lint: cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
      errors++;
      continue;
    }
    const doc = TextDocument.create(pathToFileURL(path.resolve(file)).toString(), 'plaintext', 1, text);
    for (const d of flagDiagnostics(doc)) {
      const severity = SEVERITY[d.severity ?? 1];
      if (severity === 'error') errors++;
      report.push({ file, line: d.range.start.line + 1, column: d.range.start.character + 1, severity, code: String(d.code ?? ''), message: d.message });
    }
  }
  if (ctx.values.json) ctx.out(JSON.stringify(report, null, 2));
  else for (const r of report) ctx.out(`${r.file}:${r.line}:${r.column}: ${r.severity}: ${r.message} [${r.code}]`);
  if (!ctx.values.json) {
    const warnings = report.filter((r) => r.severity === 'warning').length;
    ctx.err(`${files.length} file(s): ${report.filter((r) => r.severity === 'error').length} error(s), ${warnings} warning(s)`);
  }
  // Warnings (unknown flags may be private libtpu flags) do not fail the lint; errors do.
  return errors > 0 ? 1 : 0;
}

export function explainText(f: FlagInfo): string[] {
  const lines = [`--${f.name}`, `  ${f.doc}`, `  type:     ${f.tristate ? 'tri-state' : f.type}${f.list ? ' (comma-separated list)' : ''}`, `  values:   ${expectedValue(f)}`];
  if (f.default !== undefined) lines.push(`  default:  ${String(f.default)}`);
  if (f.seen?.length) lines.push(`  seen:     ${f.seen.join(', ')}`);
  lines.push(`  read by:  ${f.scope === 'libtpu' ? 'libtpu (put it in LIBTPU_INIT_ARGS)' : 'XLA debug options (XLA_FLAGS; libtpu reads them too)'}`);
  if (f.platform !== 'any') lines.push(`  backend:  ${f.platform.toUpperCase()}`);
  lines.push(`  source:   ${f.source}`);
  return lines;
}

function explain(ctx: CommandContext, names: string[]): number {
  if (names.length === 0) throw new UsageError('flags explain needs a flag NAME');
  let status = 0;
  for (const raw of names) {
    const name = raw.replace(/^-+/, '').replace(/=.*$/, '');
    const f = FLAG_BY_NAME.get(name);
    if (f) {
      if (ctx.values.json) ctx.out(JSON.stringify(f, null, 2));
      else for (const l of explainText(f)) ctx.out(l);
      continue;
    }
    const gone = GONE_FLAGS.get(name);
    if (gone) {
      if (ctx.values.json) ctx.out(JSON.stringify(gone, null, 2));
      else ctx.out(goneFlagMessage(gone));
      status = 1;
      continue;
    }
    const near = didYouMean(name, FLAGS.map((x) => x.name));
    ctx.err(`tpw flags explain: --${name} is not in the catalog of ${FLAGS.length} flags${near.length ? `; did you mean ${near.map((n) => `--${n}`).join(', ')}?` : ''}`);
    status = 1;
  }
  return status;
}

/** `tpw flags lint FILE... [-- FILE...]` */
export function flagsLint(ctx: CommandContext): number {
  return lint(ctx, [...ctx.positionals, ...ctx.rest]);
}

/** `tpw flags explain NAME... [-- --NAME...]`: a name written with its dashes must come after `--` (the option parser would take it otherwise). */
export function flagsExplain(ctx: CommandContext): number {
  return explain(ctx, [...ctx.positionals, ...ctx.rest]);
}
