/**
 * `tpw profile FILE|DIR [--json] [--top N]` in the node CLI: the analysis's own command (native/profile/src/cli.rs,
 * the same Rust as the native dist/tpw-profile) run as WebAssembly. Its output, help aside, is the analysis's.
 */
import { ProfileWasm } from '../core/profiles/wasm-host';
import type { CommandContext } from './context';

/** What the command reads of its context (profile-main.ts calls it without the rest of the CLI). */
export type ProfileContext = Pick<CommandContext, 'values' | 'positionals' | 'out' | 'err'>;

/** Lines of `text` (its last newline ends the last line, not an empty one). */
function lines(text: string): string[] {
  return text === '' ? [] : text.replace(/\n$/, '').split('\n');
}

/** `tpw profile ARGV`, its lines to `out` and `err`; undefined where the full CLI answers (--help, a bad flag). */
export function runProfile(argv: readonly string[], out: (line: string) => void, err: (line: string) => void): number | undefined {
  const r = new ProfileWasm().cli(argv);
  if (!r) return undefined;
  for (const l of lines(r.out)) out(l);
  for (const l of lines(r.err)) err(l);
  return r.code;
}

export async function profileCommand(ctx: ProfileContext): Promise<number> {
  // Flags first and --top joined to its value: the positionals and the value are taken as they were given.
  const argv: string[] = [];
  if (ctx.values.json) argv.push('--json');
  if (ctx.values.top !== undefined) argv.push(`--top=${String(ctx.values.top)}`);
  argv.push('--', ...ctx.positionals);
  return runProfile(argv, ctx.out, ctx.err) ?? 2;
}
