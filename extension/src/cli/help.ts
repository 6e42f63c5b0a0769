/**
 * `tpw --help` and `tpw COMMAND [SUBCOMMAND] --help`, printed from the command table (command-table.ts).
 */
import { PASSTHROUGH_NAMES } from '../core/run/engine';
import { COMMANDS, GLOBAL_OPTIONS, HELP_OPTION, VERSION_OPTION, type CommandSpec, type OptionSpec } from './command-table';

export const VERSION = '0.1.0';

const WIDTH = 100;
const LABEL_COLUMN = 30;

/** `tpw vm create`: the words that name a command. */
export function commandName(path: readonly CommandSpec[]): string {
  return ['tpw', ...path.map((c) => c.name)].join(' ');
}

function usageLine(path: readonly CommandSpec[]): string {
  const leaf = path[path.length - 1];
  if (leaf.subcommands) return `${commandName(path)} COMMAND [options]`;
  return leaf.usage ? `${commandName(path)} ${leaf.usage}` : commandName(path);
}

function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  if (line) lines.push(line);
  return lines;
}

/** Two columns; a label too wide for the first puts its text on the next line. */
function columns(rows: readonly (readonly [string, string])[]): string[] {
  const out: string[] = [];
  const textWidth = WIDTH - LABEL_COLUMN;
  for (const [label, text] of rows) {
    const wrapped = wrap(text, textWidth);
    const head = `  ${label}`;
    if (head.length < LABEL_COLUMN) out.push(head.padEnd(LABEL_COLUMN) + (wrapped[0] ?? ''));
    else out.push(head, ' '.repeat(LABEL_COLUMN) + (wrapped[0] ?? ''));
    for (const more of wrapped.slice(1)) out.push(' '.repeat(LABEL_COLUMN) + more);
  }
  return out;
}

function optionLabel(name: string, spec: OptionSpec): string {
  const long = spec.type === 'string' ? `--${name} ${spec.arg ?? 'VALUE'}` : `--${name}`;
  return spec.short ? `-${spec.short}, ${long}` : long;
}

/** The options a command accepts: its own, then the global ones it reads (its own description wins), then --help. */
export function optionsOf(cmd: CommandSpec): [string, OptionSpec][] {
  const own = Object.entries(cmd.options ?? {});
  const globals = (cmd.globals ?? []).filter((g) => !Object.prototype.hasOwnProperty.call(cmd.options ?? {}, g)).map((g): [string, OptionSpec] => [g, GLOBAL_OPTIONS[g]]);
  return [...own, ...globals, ['help', HELP_OPTION]];
}

function visible(cmds: readonly CommandSpec[]): CommandSpec[] {
  return cmds.filter((c) => !c.hidden);
}

/** Every command that runs something, with its path, in table order. */
function leaves(cmds: readonly CommandSpec[], parents: readonly CommandSpec[] = []): CommandSpec[][] {
  return visible(cmds).flatMap((c) => (c.subcommands ? leaves(c.subcommands, [...parents, c]) : [[...parents, c]]));
}

/** Help for one command or command group. */
export function commandHelp(path: readonly CommandSpec[]): string {
  const cmd = path[path.length - 1];
  const lines = [`Usage: ${usageLine(path)}`, '', cmd.summary + '.'];
  if (cmd.details) lines.push(...cmd.details.flatMap((d) => wrap(d, WIDTH)));
  if (cmd.subcommands) {
    lines.push('', 'Commands:', ...columns(visible(cmd.subcommands).map((s) => [usageLine([...path, s]).slice(commandName(path).length + 1), s.summary])));
    lines.push('', `Run '${commandName(path)} COMMAND --help' for a command's options.`);
    return lines.join('\n');
  }
  lines.push('', 'Options:', ...columns(optionsOf(cmd).map(([name, spec]) => [optionLabel(name, spec), spec.description])));
  if (cmd.passthrough) lines.push(...columns([['-- ...', `Everything after -- is taken as ${cmd.passthrough}`]]));
  return lines.join('\n');
}

/** `tpw --help`: every command with its usage, the global options, environment and exit status. */
export function globalHelp(): string {
  const globals: [string, OptionSpec][] = [...Object.entries(GLOBAL_OPTIONS), ['help', { ...HELP_OPTION, description: "Show this help; tpw COMMAND --help shows that command's" }], ['version', VERSION_OPTION]];
  return [
    `tpw ${VERSION} — TPU Workbench on the command line`,
    '',
    'Usage: tpw COMMAND [SUBCOMMAND] [options]',
    '',
    'Commands:',
    ...columns(leaves(COMMANDS).map((path) => [usageLine(path), path[path.length - 1].summary])),
    '',
    "Global options (each command takes those it uses; 'tpw COMMAND --help' lists them):",
    ...columns(globals.map(([name, spec]) => [optionLabel(name, spec), spec.description])),
    '',
    ...wrap(
      `Environment: TPW_HOME (state dir, default ~/.tpw), TPW_PROJECT, TPW_ZONES; TPW_SSH_PROXY_JUMP=user@host[:port] or TPW_SSH_PROXY_COMMAND='["prog", …, "%p"]' (bastion / IAP). ${PASSTHROUGH_NAMES.join(', ')} are passed from this shell to runs (through the workers' 0600 env file).`,
      WIDTH,
    ),
    'Exit status: 0 ok, 1 failed (a one-line reason on stderr), 2 bad usage, 130 cancelled.',
  ].join('\n');
}
