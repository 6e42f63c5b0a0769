import { COMMANDS, type CommandSpec } from './command-table';
import { commandHelp, commandName, globalHelp } from './help';

/**
 * docs/cli.md: every command's `--help`, printed from the same command table as the help itself, so the page
 * cannot say what the CLI does not do. `npx tsx scripts/gen-cli-docs.ts` writes it; a unit test fails when it is
 * stale.
 */
export function cliReference(): string {
  const sections: string[] = [];
  const walk = (path: CommandSpec[]) => {
    const cmd = path[path.length - 1];
    if (cmd.hidden) return;
    sections.push(`## ${commandName(path)}\n\n\`\`\`text\n${commandHelp(path)}\n\`\`\`\n`);
    for (const sub of cmd.subcommands ?? []) walk([...path, sub]);
  };
  for (const c of COMMANDS) walk([c]);
  return [
    '# `tpw` command reference',
    '',
    '<!-- Generated from extension/src/cli/command-table.ts by `npx tsx scripts/gen-cli-docs.ts`; do not edit. -->',
    '',
    '`tpw` is TPU Workbench in a terminal: `bin/tpw` in a checkout (or `node dist/cli.js`). Each section is that',
    "command's own `--help`. Errors are one line on stderr naming what is at fault; usage errors exit 2.",
    '',
    '```text',
    globalHelp(),
    '```',
    '',
    ...sections,
  ].join('\n');
}
