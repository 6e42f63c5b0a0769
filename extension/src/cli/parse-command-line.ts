/**
 * `tpw` argv → the command it names and that command's own options. Command words may come after options
 * (`tpw --project p vm list`); each command accepts only the options the table declares for it, so a flag that
 * means nothing there is refused by name instead of silently ignored.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { editDistance } from '../../../language-server/src/service/fuzzy';
import { COMMANDS, GLOBAL_OPTIONS, HELP_OPTION, VERSION_OPTION, type CommandSpec, type OptionSpec } from './command-table';
import type { Values } from './context';
import { commandName, optionsOf } from './help';

export type CommandLine =
  | { kind: 'help'; path: CommandSpec[] }
  | { kind: 'version' }
  /** `tpw` with no command: the global help, exit 2. */
  | { kind: 'no-command' }
  | { kind: 'command'; path: CommandSpec[]; values: Values; positionals: string[]; rest: string[] };

/** Bad usage: one line, naming the thing at fault and where to look. */
export class CommandLineError extends Error {}

type ParseOptions = NonNullable<ParseArgsConfig['options']>;
type Token = NonNullable<ReturnType<typeof parseArgs>['tokens']>[number];

function parseConfig(options: Iterable<[string, OptionSpec]>): ParseOptions {
  const config: ParseOptions = {};
  for (const [name, o] of options) config[name] = { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) };
  return config;
}

/** Tokens as the parser sees them with `options`; unknown options count as flags without a value. */
function tokensOf(args: string[], options: ParseOptions): Token[] {
  return parseArgs({ args, options, strict: false, allowPositionals: true, tokens: true }).tokens;
}

/** Index of the first `--` in `tokens` (args.length when there is none). */
function terminatorOf(tokens: readonly Token[], length: number): number {
  return tokens.find((t) => t.kind === 'option-terminator')?.index ?? length;
}

/** Every string option declared anywhere under `cmds`, so that its value is not taken for a command word. */
function valueOptionsUnder(cmds: readonly CommandSpec[]): [string, OptionSpec][] {
  return cmds.flatMap((c) => [...Object.entries(c.options ?? {}).filter(([, o]) => o.type === 'string'), ...valueOptionsUnder(c.subcommands ?? [])]);
}

/**
 * Near names for a mistyped one: those it starts (`tpw em` → emulator) and those within about one edit per
 * three letters (`vn` → vm, `lst` → list).
 */
export function suggestions(word: string, names: readonly string[]): string[] {
  const w = word.toLowerCase();
  const max = Math.max(1, Math.ceil(w.length / 3));
  const prefixed = names.filter((n) => n.startsWith(w));
  const near = names.map((n) => ({ n, d: editDistance(w, n, max) })).filter((x) => x.d <= max && !prefixed.includes(x.n));
  near.sort((a, b) => a.d - b.d);
  return [...prefixed, ...near.map((x) => x.n)].slice(0, 3);
}

function didYouMean(word: string, names: readonly string[]): string {
  const near = suggestions(word, names);
  return near.length ? `; did you mean ${near.join(' or ')}?` : '';
}

export function parseCommandLine(argv: readonly string[]): CommandLine {
  const args = [...argv];
  const topLevel: [string, OptionSpec][] = [...Object.entries(GLOBAL_OPTIONS), ['help', HELP_OPTION], ['version', VERSION_OPTION]];
  const path: CommandSpec[] = [];
  const wordAt = new Set<number>();
  let choices: readonly CommandSpec[] = COMMANDS;
  // Walk down the command words: at each level, the first positional not yet taken (before any `--`).
  for (;;) {
    const tokens = tokensOf(args, parseConfig([...valueOptionsUnder(choices).filter(([n]) => !(n in GLOBAL_OPTIONS) && n !== 'version'), ...topLevel]));
    const end = terminatorOf(tokens, args.length);
    const word = tokens.find((t) => t.kind === 'positional' && t.index < end && !wordAt.has(t.index));
    if (!word || word.kind !== 'positional') break;
    const next = choices.find((c) => c.name === word.value);
    if (!next) {
      const names = choices.filter((c) => !c.hidden).map((c) => c.name);
      const where = path.length ? `${commandName(path)}: unknown command "${word.value}"` : `tpw: unknown command "${word.value}"`;
      throw new CommandLineError(`${where}${didYouMean(word.value, names)} (see ${commandName(path)} --help)`);
    }
    path.push(next);
    wordAt.add(word.index);
    if (!next.subcommands) break;
    choices = next.subcommands;
  }
  const own = args.filter((_, i) => !wordAt.has(i));
  const leaf = path[path.length - 1] as CommandSpec | undefined;
  const accepted = leaf ? (leaf.subcommands ? [['help', HELP_OPTION] as [string, OptionSpec]] : optionsOf(leaf)) : topLevel;
  const config = parseConfig(accepted);
  const tokens = tokensOf(own, config);
  const end = terminatorOf(tokens, own.length);
  const help = tokens.some((t) => t.kind === 'option' && t.index < end && t.name === 'help');
  if (help) return { kind: 'help', path };
  const where = commandName(path);
  if (leaf?.subcommands) {
    const names = leaf.subcommands.filter((c) => !c.hidden).map((c) => c.name);
    throw new CommandLineError(`${where}: missing command, one of: ${names.join(', ')} (see ${where} --help)`);
  }
  for (const t of tokens) {
    if (t.kind !== 'option' || t.index >= end || t.name in config) continue;
    if (leaf && t.name in GLOBAL_OPTIONS) throw new CommandLineError(`${where}: ${t.rawName} does not apply to this command; see ${where} --help`);
    const near = suggestions(t.name, Object.keys(config)).map((n) => `--${n}`);
    throw new CommandLineError(`${where}: unknown option ${t.rawName}${near.length ? ` (did you mean ${near.join(' or ')}?)` : ''}; see ${where} --help`);
  }
  let parsed;
  try {
    parsed = parseArgs({ args: own, options: config, strict: true, allowPositionals: true, tokens: true });
  } catch (e) {
    // Node's own message names the option (a missing value, a value given to a flag); its first line is enough.
    throw new CommandLineError(`${where}: ${String((e as Error).message).split('\n')[0]}; see ${where} --help`);
  }
  const positionals = parsed.tokens.filter((t) => t.kind === 'positional' && t.index < end).map((t) => (t.kind === 'positional' ? t.value : ''));
  const rest = own.slice(end + 1);
  const values = parsed.values as Values;
  if (!leaf) {
    if (values.version) return { kind: 'version' };
    return { kind: 'no-command' };
  }
  if (rest.length > 0 && !leaf.passthrough) throw new CommandLineError(`${where}: unexpected argument "${rest[0]}" after --; see ${where} --help`);
  return { kind: 'command', path, values, positionals, rest };
}
