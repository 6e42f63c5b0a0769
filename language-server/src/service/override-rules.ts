/**
 * What the trainer checks of the whole config a command line composes, beyond each override alone: a value
 * left `???`, the enum and minimum of every field (the values that arrive through presets, interpolations or
 * shorthands included), and its cross-field rules (`x-rules` in the schema, written from tpu_trainer/rules.py),
 * for every job of a `-m` sweep. It speaks only where the verdict is certain: anything the editor cannot know
 * (an environment variable, an option without a preset in the schema, a glob sweep) makes it silent.
 */
import { composeJob, type Composed, type LineOverride } from '../hydra/compose';
import type { HydraModel, SchemaNode } from '../hydra/model';
import { evaluate, fillMessage, truth } from '../hydra/rules';
import { PyError, UNKNOWN, floatRepr, isUnknown, pyIn, pyLess, pyRepr, type Py } from '../hydra/py-values';
import type { ParsedOverride } from './hydra-override-grammar';
import { HydraEvalError, elementValue, isSweepValue, type HydraValue } from './hydra-values';

export interface RuleProblem {
  /** Index (into the overrides given) of the override that set what the rule reads; absent when none did. */
  word?: number;
  message: string;
  code: 'config-interpolation' | 'missing-value' | 'config-enum' | 'config-minimum' | 'config-rule';
}

/** More jobs than this in one sweep and the line is left to the trainer. */
const MAX_JOBS = 64;

/** Every job's first refusal (deduplicated), or nothing where the verdict is not certain. */
export function commandRuleProblems(model: HydraModel, overrides: { word: number; parsed: ParsedOverride }[], multirun: boolean): RuleProblem[] {
  if (!model.rules || !model.primary) return [];
  const choices: { o: LineOverride; values?: Py[] }[] = [];
  for (const { word, parsed } of overrides) {
    let v: HydraValue | undefined;
    try {
      v = parsed.value === undefined ? undefined : elementValue(parsed.value);
    } catch (e) {
      if (e instanceof HydraEvalError) return [];
      throw e;
    }
    const o: LineOverride = { word, prefix: parsed.prefix, key: parsed.key.path };
    if (v !== undefined && isSweepValue(v)) {
      if (!multirun || isUnknown(v.sweep) || v.sweep.some(isSweepValue)) return [];
      choices.push({ o, values: v.sweep as Py[] });
    } else choices.push({ o: { ...o, value: v } });
  }
  let jobs: LineOverride[][] = [[]];
  for (const c of choices) {
    jobs = c.values ? jobs.flatMap((j) => c.values!.map((value) => [...j, { ...c.o, value }])) : jobs.map((j) => [...j, c.o]);
    if (jobs.length > MAX_JOBS) return [];
  }
  const out: RuleProblem[] = [];
  for (const job of jobs) {
    const composed = composeJob(model, job);
    if (!composed) return [];
    const p = jobProblem(model, composed);
    if (p && !out.some((q) => q.message === p.message && q.word === p.word)) out.push(p);
  }
  return out;
}

/** The first thing the trainer would refuse in this job, in the order it checks: ???, enum/minimum, rules. */
function jobProblem(model: HydraModel, c: Composed): RuleProblem | undefined {
  const cycle = c.cycles()[0];
  if (cycle) return { word: c.setter([cycle]), code: 'config-interpolation', message: `${cycle}: its \${...} lead back to ${cycle} (OmegaConf: "Recursive interpolation detected")` };
  const missing = c.missing()[0];
  if (missing) {
    return { word: c.setter([missing]), code: 'missing-value', message: `${missing} is ??? (a value that must be given): the trainer stops with "missing mandatory value: ${missing}"` };
  }
  const field = fieldProblem(model, c);
  if (field) return field;
  const rules = model.rules!;
  for (const alias of rules.aliases) {
    const when = truth(alias.when, c.get);
    for (const s of alias.set) {
      if (when === false) break;
      let v: Py = UNKNOWN;
      if (when) {
        try {
          v = evaluate(s.value, c.get);
        } catch (e) {
          if (!(e instanceof PyError)) throw e;
        }
      }
      c.assign(s.key, v, alias.keys);
    }
  }
  for (const rule of rules.checks) {
    if (truth(rule.check, c.get) === false) return { word: c.setter(rule.keys), code: 'config-rule', message: fillMessage(rule.message, c.get) };
  }
  return undefined;
}

interface Field {
  key: string;
  node: SchemaNode;
  minimum: string;
}

const fieldLists = new WeakMap<HydraModel, Field[]>();

/** The fields with an enum or a minimum, in the dataclasses' order (validate()'s first pass walks them). */
function checkedFields(model: HydraModel): Field[] {
  let list = fieldLists.get(model);
  if (list) return list;
  list = [];
  const walk = (node: SchemaNode, prefix: string) => {
    for (const [k, child] of node.properties ?? []) {
      if (!prefix && k === 'hydra') continue;
      const key = prefix ? `${prefix}.${k}` : k;
      if (child.properties && child.types.includes('object') && child.default === undefined) walk(child, key);
      else if (child.enum || child.minimum !== undefined) {
        // The trainer prints the minimum as written in its metadata: a float field's as a float.
        const min = child.minimum === undefined ? '' : child.types.includes('integer') ? String(child.minimum) : floatRepr(child.minimum);
        list!.push({ key, node: child, minimum: min });
      }
    }
  };
  walk(model.root, '');
  fieldLists.set(model, list);
  return list;
}

// What a field's check says of a value the defaults list put there: the same for every line that leaves it.
const baseVerdicts = new WeakMap<object, Map<string, boolean>>();

/** validate()'s first pass: each field's enum and minimum. */
function fieldProblem(model: HydraModel, c: Composed): RuleProblem | undefined {
  let known = baseVerdicts.get(c.base);
  if (!known) baseVerdicts.set(c.base, (known = new Map()));
  for (const field of checkedFields(model)) {
    const untouched = c.fromBase(field.key);
    if (untouched && known.get(field.key) === true) continue;
    const p = fieldCheck(field, c);
    if (untouched) known.set(field.key, p === undefined);
    if (p) return p;
  }
  return undefined;
}

function fieldCheck({ key, node, minimum }: Field, c: Composed): RuleProblem | undefined {
  const v = c.get(key);
  if (isUnknown(v)) return undefined;
  try {
    if (node.enum && pyIn(v, node.enum) === false) {
      return { word: c.setter([key]), code: 'config-enum', message: `${key}=${pyRepr(v)} is not one of: ${node.enum.join(', ')}` };
    }
    if (node.minimum !== undefined && v !== null && pyLess(v, node.minimum, false) === true) {
      return { word: c.setter([key]), code: 'config-minimum', message: `${key}=${pyRepr(v)} is below the minimum ${minimum}` };
    }
  } catch (e) {
    if (!(e instanceof PyError)) throw e;
  }
  return undefined;
}
