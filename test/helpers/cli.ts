import * as fs from 'node:fs';
import * as path from 'node:path';
import { main } from '../../extension/src/cli/main';

export interface CliResult {
  code: number;
  out: string[];
  err: string[];
}

/** Runs `tpw argv…` in this process with `cwd` as the working folder, capturing its stdout and stderr lines. */
export async function runTpw(cwd: string, argv: string[]): Promise<CliResult> {
  const out: string[] = [];
  const err: string[] = [];
  const saved = process.cwd();
  process.chdir(cwd);
  try {
    const code = await main(argv, (l) => out.push(l), (l) => err.push(l));
    return { code, out, err };
  } finally {
    process.chdir(saved);
  }
}

/** Writes `recipes/<name>` under `ws`; returns its path relative to `ws`, as a user would type it. */
export function writeRecipeIn(ws: string, name: string, text: string): string {
  const file = path.join(ws, 'recipes', name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  return path.relative(ws, file);
}
