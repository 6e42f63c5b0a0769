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

const TOP_LEVEL: [string, OptionSpec][] = [...Object.entries(GLOBAL_OPTIONS), ['help', HELP_OPTION], ['version', VERSION_OPTION]];

const has = (o: object, name: string): boolean => Object.prototype.hasOwnProperty.call(o, name);

/**
 * The command words in `args` and where they are: at each level the first positional not yet taken, before any
 * `--`, reading the options around them as the commands below that level would (so `--type v4-8` before
 * `create` is an option with its value, not a word). The global meaning of a name wins at every level.
 */
function commandWords(args: readonly string[]): { path: CommandSpec[]; at: Set<number> } {
  const path: CommandSpec[] = [];
  const at = new Set<number>();
  let choices: readonly CommandSpec[] = COMMANDS;
  for (;;) {
    const tokens = tokensOf([...args], parseConfig([...valueOptionsUnder(choices), ...TOP_LEVEL]));
    const end = terminatorOf(tokens, args.length);
    const word = tokens.find((t): t is Extract<Token, { kind: 'positional' }> => t.kind === 'positional' && t.index < end && !at.has(t.index));
    if (!word) return { path, at };
    const next = choices.find((c) => c.name === word.value);
    if (!next) {
      const names = choices.filter((c) => !c.hidden).map((c) => c.name);
      throw new CommandLineError(`${commandName(path)}: unknown command "${word.value}"${didYouMean(word.value, names)} (see ${commandName(path)} --help)`);
    }
    path.push(next);
    at.add(word.index);
    if (!next.subcommands) return { path, at };
    choices = next.subcommands;
  }
}

export function parseCommandLine(argv: readonly string[]): CommandLine {
  const { path, at } = commandWords(argv);
  const own = argv.filter((_, i) => !at.has(i));
  const leaf = path.at(-1);
  const where = commandName(path);
  const config = parseConfig(leaf ? (leaf.subcommands ? [['help', HELP_OPTION]] : optionsOf(leaf)) : TOP_LEVEL);
  const tokens = tokensOf(own, config);
  const end = terminatorOf(tokens, own.length);
  const options = tokens.filter((t): t is Extract<Token, { kind: 'option' }> => t.kind === 'option' && t.index < end);
  // A help request wins over anything wrong beside it.
  if (options.some((t) => t.name === 'help')) return { kind: 'help', path };
  if (leaf?.subcommands) {
    const names = leaf.subcommands.filter((c) => !c.hidden).map((c) => c.name);
    throw new CommandLineError(`${where}: missing command, one of: ${names.join(', ')} (see ${where} --help)`);
  }
  const unknown = options.find((t) => !has(config, t.name));
  if (unknown) {
    if (leaf && has(GLOBAL_OPTIONS, unknown.name)) throw new CommandLineError(`${where}: ${unknown.rawName} does not apply to this command; see ${where} --help`);
    const near = suggestions(unknown.name, Object.keys(config)).map((n) => `--${n}`);
    throw new CommandLineError(`${where}: unknown option ${unknown.rawName}${near.length ? ` (did you mean ${near.join(' or ')}?)` : ''}; see ${where} --help`);
  }
  let parsed;
  try {
    parsed = parseArgs({ args: own, options: config, strict: true, allowPositionals: true, tokens: true });
  } catch (e) {
    // Node's own message names the option (a missing value, a value given to a flag); its first line is enough.
    throw new CommandLineError(`${where}: ${String((e as Error).message).split('\n')[0]}; see ${where} --help`);
  }
  const values = parsed.values as Values;
  if (!leaf) return values.version ? { kind: 'version' } : { kind: 'no-command' };
  const positionals = parsed.tokens.flatMap((t) => (t.kind === 'positional' && t.index < end ? [t.value] : []));
  const rest = own.slice(end + 1);
  if (rest.length > 0 && !leaf.passthrough) throw new CommandLineError(`${where}: unexpected argument "${rest[0]}" after --; see ${where} --help`);
  return { kind: 'command', path, values, positionals, rest };
}
