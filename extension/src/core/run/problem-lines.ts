/**
 * Trainer failures that name no source file — a hydra override the config does not have, a loss that is no
 * longer finite, XLA running out of memory — belong to the recipe that asked for them: its trainer command is
 * where the override, the learning rate or the batch size is set. The `tpu` task writes such lines as
 * `RECIPE:LINE: [wN] …` so that VS Code's problem matchers (package.json, `$tpu-hydra-override`,
 * `$tpu-diverged`, `$tpu-xla-oom`), which need a file, put the Problem on the recipe's command line.
 */

const UNLOCATED: readonly RegExp[] = [
  // tpu_trainer's own check of the overrides, before hydra starts (tpu_trainer/overrides.py).
  /^\[w\d+\] error: unknown config key /,
  // hydra's own refusal of an override (a key it cannot find, a value that does not parse).
  /^\[w\d+\] Could not override '/,
  // tpu_trainer's stop on a non-finite loss (train.py, exit_for).
  /^\[w\d+\] loss is not finite at step \d+/,
  // XLA out of memory: XLA:CPU's allocator, and the RESOURCE_EXHAUSTED status XLA:TPU reports.
  /^\[w\d+\] (?:RuntimeError: )?Out of memory allocating \d+ bytes/,
  /^\[w\d+\] .*\bRESOURCE_EXHAUSTED\b/,
];

/** Where a recipe's command and its overrides are (core/recipes/recipe.ts). */
export interface RecipeLocation {
  path: string;
  commandLine: number;
  overrides?: readonly string[];
  /** Parallel to `overrides`. */
  overrideLines?: readonly number[];
}

/**
 * The recipe line a trainer message is about: the override it quotes (tpu_trainer's `in override 'ARG'` /
 * `override 'ARG':`, hydra's `Could not override 'KEY'`) on its own line, as the editor's Problems show it,
 * else the command's first line.
 */
export function recipeLineOf(line: string, recipe: RecipeLocation): number {
  const { overrides = [], overrideLines = [] } = recipe;
  const arg = /\boverride '([^']*)'/.exec(line)?.[1];
  if (arg !== undefined) {
    const i = overrides.indexOf(arg);
    if (i >= 0 && overrideLines[i] !== undefined) return overrideLines[i];
    const key = /^Could not override '([^']*)'/.exec(line.replace(/^\[w\d+\] /, ''))?.[1];
    const j = key === undefined ? -1 : overrides.findIndex((o) => o.replace(/^(\+\+|\+|~)/, '').split('=')[0] === key);
    if (j >= 0 && overrideLines[j] !== undefined) return overrideLines[j];
  }
  return recipe.commandLine;
}

/** `line` as the task prints it: prefixed with the recipe's location when it names no file itself. */
export function locateTrainerLine(line: string, recipe: RecipeLocation): string {
  return UNLOCATED.some((re) => re.test(line)) ? `${recipe.path}:${recipeLineOf(line, recipe)}: ${line}` : line;
}
