import * as fs from 'node:fs';
import * as path from 'node:path';
import { TpwError } from '../errors';
import { ShellSyntaxError, splitShellWords, type ShellWord } from './shell-words';

/**
 * A recipe is a shell file in the style of torchprime's: `export NAME=value` lines, then one trainer command
 * with hydra overrides (`key=value`, `+key=value`, `~key`, `group/option=value`). Parsing it, rather than
 * running it, lets the run layer deliver the environment through a 0600 file, append `output_dir=`, and show
 * the overrides in the UI.
 */
export interface RecipeEnvVar {
  name: string;
  /** Literal value (quotes removed). */
  value: string;
  /** The value as written; used instead of `value` when it must expand on the worker (`$HOME/...`). */
  raw: string;
  expands: boolean;
  line: number;
}

export interface Recipe {
  path: string;
  env: RecipeEnvVar[];
  /** The program and its non-override arguments, e.g. ["python3", "-m", "tpu_trainer.train"]. */
  program: string[];
  /** Hydra overrides in order. */
  overrides: string[];
  /** Directory to run in, relative to the synced workspace (from a `cd DIR` line); "." by default. */
  cwd: string;
  /** 1-based line of the command. */
  commandLine: number;
  /**
   * 1-based line of each override (parallel to `overrides`): a command continued over several lines with `\` has
   * them on their own lines, and every message about one names that line, as the editor's Problems do.
   */
  overrideLines: number[];
}

const OVERRIDE = /^(\+\+|\+|~)?[A-Za-z_][\w.@/-]*(=.*)?$/;
/** Statements that configure the shell and mean nothing for what runs. */
const IGNORED = new Set(['set', 'shopt']);

export function readRecipe(file: string): Recipe {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new TpwError(
      code === 'ENOENT' ? 'NOT_FOUND' : 'RECIPE',
      code === 'ENOENT' ? `Recipe not found: ${file}` : `Cannot read recipe ${file}: ${(e as Error).message}`,
    );
  }
  return parseRecipe(text, file);
}

interface LogicalLine {
  text: string;
  /** 1-based number of its first physical line. */
  line: number;
  /** Offsets in `text` where each following physical line begins. */
  breaks: number[];
}

/** Joins backslash-continued lines, keeping where each physical line begins. */
function logicalLines(text: string): LogicalLine[] {
  const out: LogicalLine[] = [];
  const physical = text.replace(/\r\n/g, '\n').split('\n');
  let buf = '';
  let first = 0;
  let breaks: number[] = [];
  physical.forEach((l, idx) => {
    if (buf === '') first = idx + 1;
    else breaks.push(buf.length);
    if (/(^|[^\\])(\\\\)*\\$/.test(l)) {
      buf += l.slice(0, -1) + ' ';
    } else {
      buf += l;
      out.push({ text: buf, line: first, breaks });
      buf = '';
      breaks = [];
    }
  });
  if (buf !== '') out.push({ text: buf, line: first, breaks });
  return out;
}

/** The 1-based physical line of a word of a logical line. */
function lineOfWord(l: Pick<LogicalLine, 'line' | 'breaks'>, w: ShellWord): number {
  return l.line + l.breaks.filter((b) => b <= (w.start ?? 0)).length;
}

export function parseRecipe(text: string, file = 'recipe.sh'): Recipe {
  const name = path.basename(file);
  const fail = (line: number, msg: string): never => {
    throw new TpwError('RECIPE', `${name}:${line}: ${msg}`);
  };
  const env: RecipeEnvVar[] = [];
  let command: { words: ShellWord[]; line: number; breaks: number[] } | undefined;
  let cwd = '.';

  for (const { text: lineText, line, breaks } of logicalLines(text)) {
    let words: ShellWord[];
    try {
      words = splitShellWords(lineText);
    } catch (e) {
      if (e instanceof ShellSyntaxError) return fail(line, e.message);
      throw e;
    }
    if (words.length === 0) continue;
    const head = words[0].value;
    if (command) return fail(line, `only one command is allowed after the exports, but "${head}" follows the command on line ${command.line}`);
    // Leading NAME=value words (with or without `export`) are the environment.
    const isExport = head === 'export';
    let k = isExport ? 1 : 0;
    while (k < words.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[k].raw)) {
      const w = words[k];
      const eq = w.value.indexOf('=');
      const rawEq = w.raw.indexOf('=');
      env.push({ name: w.value.slice(0, eq), value: w.value.slice(eq + 1), raw: w.raw.slice(rawEq + 1), expands: w.expands, line });
      k++;
    }
    if (isExport) {
      if (words.length === 1) fail(line, '`export` needs NAME=value');
      if (k < words.length) fail(line, `"${words[k].value}" is not NAME=value (export sets variables; write NAME=value)`);
      continue;
    }
    if (k === words.length) continue;
    words = words.slice(k);
    if (IGNORED.has(words[0].value)) continue;
    if (words[0].value === 'cd') {
      if (words.length !== 2) fail(line, '`cd` takes exactly one directory');
      const dir = words[1].value;
      if (path.isAbsolute(dir) || path.normalize(dir).startsWith('..')) fail(line, `cd "${dir}" leaves the workspace; use a path inside it`);
      cwd = path.posix.normalize(dir);
      continue;
    }
    command = { words, line, breaks };
  }
  if (!command) throw new TpwError('RECIPE', `${name}: no command found (a recipe is \`export\` lines followed by one trainer command)`);

  // `"$@"` lets a recipe also run by hand with extra overrides; TPU Workbench appends its own in that place.
  let words = command.words.filter((w) => w.raw !== '"$@"' && w.raw !== '$@');
  for (const w of words) {
    if (w.expands) fail(lineOfWord(command, w), `"${w.raw}" expands a variable in the command; put it in an export line instead`);
  }
  // torchprime recipes launch with `tp run path/train.py ...`: on a worker that is the script itself.
  if (words[0].value === 'tp' && words[1]?.value === 'run') words = [{ value: 'python3', raw: 'python3', expands: false }, ...words.slice(2)];
  const argv = words.map((w) => w.value);
  const firstOverride = entryArgCount(words);
  const program = argv.slice(0, firstOverride);
  const overrides = argv.slice(firstOverride);
  const cmd = command;
  const overrideLines = words.slice(firstOverride).map((w) => lineOfWord(cmd, w));
  const bad = overrides.findIndex((o) => !OVERRIDE.test(o));
  if (bad >= 0) fail(overrideLines[bad], `"${overrides[bad]}" is not a hydra override (expected key=value after the program)`);
  return { path: file, env, program, overrides, cwd, commandLine: command.line, overrideLines };
}

/** An override as written: the key is never quoted (`lr='1e-3'` is one, `'a=b'` is a plain argument). */
const OVERRIDE_START = /^((\+\+|\+)?[A-Za-z_][\w.@/-]*=|~[A-Za-z_])/;

/** Number of leading words that make up the program (interpreter, flags, module or script). */
function entryArgCount(words: ShellWord[]): number {
  const argv = words.map((w) => w.value);
  let i = 0;
  if (/(^|\/)python[0-9.]*$/.test(argv[0] ?? '')) {
    i = 1;
    while (i < argv.length && argv[i].startsWith('-')) {
      if (argv[i] === '-m') return Math.min(argv.length, i + 2);
      i++;
    }
    return Math.min(argv.length, i + 1); // the script
  }
  // Any other program: everything up to the first key=value is the program.
  while (i < words.length && !OVERRIDE_START.test(words[i].raw)) i++;
  return i;
}

/**
 * A Python script run as it is, as torchprime's `tp run path/train.py overrides…` runs one: `python3 <script>` from
 * the workspace root, no exports; the overrides come from the command line.
 */
export function scriptRecipe(file: string, workspaceRoot: string): Recipe {
  const rel = path.relative(path.resolve(workspaceRoot), path.resolve(file));
  if (rel.startsWith('..') || path.isAbsolute(rel)) throw new TpwError('RECIPE', `${file} is outside the workspace ${workspaceRoot}: only the workspace reaches the workers.`);
  if (!fs.existsSync(file)) throw new TpwError('NOT_FOUND', `Script not found: ${file}`);
  return { path: path.resolve(file), env: [], program: ['python3', rel.split(path.sep).join('/')], overrides: [], cwd: '.', commandLine: 1, overrideLines: [] };
}

/** The full argv of a recipe, with extra overrides appended (later overrides win in hydra). */
export function recipeArgv(recipe: Recipe, extra: string[] = []): string[] {
  return [...recipe.program, ...recipe.overrides, ...extra];
}

/** True if the recipe runs this project's trainer, which understands output_dir= and profile_dir=. */
export function runsTpuTrainer(recipe: Recipe): boolean {
  return recipe.program.some((a) => a === 'tpu_trainer.train' || a.endsWith('tpu_trainer/train.py'));
}
