/**
 * Workloads for the language server benchmark: a hydra config tree the size of torchprime's (a root config of
 * ~40 keys, model/optimizer/dataset/mesh nodes, ~160 keys in all, 32 option files in 5 groups) with its JSON
 * Schema, and a 1,000-line recipe holding 200 flags in LIBTPU_INIT_ARGS / XLA_FLAGS strings plus a trainer
 * command with 40 overrides. Deterministic: every run benchmarks the same text.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FLAGS } from '../../language-server/src/flags/catalog';

type Prop = { type: string | string[]; default?: unknown; enum?: string[]; description: string; minimum?: number; properties?: Record<string, Prop>; additionalProperties?: boolean };

function scalars(prefix: string, n: number): Record<string, Prop> {
  const out: Record<string, Prop> = {};
  for (let i = 0; i < n; i++) {
    const k = `${prefix}_${['size', 'steps', 'ratio', 'enabled', 'mode', 'path'][i % 6]}_${i}`;
    switch (i % 6) {
      case 0:
      case 1:
        out[k] = { type: 'integer', default: i * 8, minimum: 0, description: `The ${k} of the run, an integer.` };
        break;
      case 2:
        out[k] = { type: 'number', default: 0.5, minimum: 0, description: `The ${k}, a ratio.` };
        break;
      case 3:
        out[k] = { type: 'boolean', default: false, description: `Whether ${k} is on.` };
        break;
      case 4:
        out[k] = { type: 'string', enum: ['auto', 'fast', 'exact', 'off'], default: 'auto', description: `How ${k} behaves.` };
        break;
      default:
        out[k] = { type: ['string', 'null'], default: null, description: `Where ${k} points.` };
    }
  }
  return out;
}

const obj = (description: string, properties: Record<string, Prop>): Prop => ({ type: 'object', additionalProperties: false, description, properties });

export const GROUPS: Record<string, number> = { model: 15, 'model/sharding': 5, 'model/remat': 5, dataset: 4, optimizer: 3 };

export function torchprimeSizedSchema(): { type: string; additionalProperties: boolean; properties: Record<string, Prop> } {
  return {
    type: 'object',
    additionalProperties: false,
    properties: {
      ...scalars('train', 40),
      model: obj('The model.', { ...scalars('model', 30), sharding: obj('Sharding.', scalars('shard', 10)), remat: obj('Remat.', scalars('remat', 8)), scaling: obj('Scaling.', scalars('scale', 5)) }),
      optimizer: obj('Optimizer.', scalars('opt', 10)),
      scheduler: obj('Scheduler.', scalars('sched', 6)),
      dataset: obj('Dataset.', scalars('data', 10)),
      ici_mesh: obj('ICI mesh.', scalars('ici', 4)),
      dcn_mesh: obj('DCN mesh.', scalars('dcn', 4)),
      profile: obj('Profiling.', scalars('prof', 5)),
    },
  };
}

/** A YAML rendering of a schema node's defaults, every key on its own line. */
function yamlOf(props: Record<string, Prop>, indent: string): string[] {
  const lines: string[] = [];
  for (const [k, p] of Object.entries(props)) {
    if (p.properties) lines.push(`${indent}${k}:`, ...yamlOf(p.properties, indent + '  '));
    else lines.push(`${indent}${k}: ${p.default === null ? 'null' : String(p.default)}`);
  }
  return lines;
}

export interface Workspace {
  root: string;
  schemaFile: string;
  /** The same schema as yaml-language-server needs it: plus the primary config's `defaults` and `hydra`. */
  peerSchemaFile: string;
  configYaml: string;
  configText: string;
  modelYaml: string;
  modelText: string;
  recipe: string;
  recipeText: string;
}

export function makeBenchWorkspace(): Workspace {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-lsp-bench-'));
  const schema = torchprimeSizedSchema();
  const schemaFile = path.join(root, 'config.schema.json');
  fs.writeFileSync(schemaFile, JSON.stringify(schema));
  const peer = { ...schema, properties: { ...schema.properties, defaults: { type: 'array', description: 'Defaults list.' }, hydra: { type: 'object', description: 'Hydra.' } } };
  const peerSchemaFile = path.join(root, 'peer.schema.json');
  fs.writeFileSync(peerSchemaFile, JSON.stringify(peer));
  const configs = path.join(root, 'configs');
  for (const [g, n] of Object.entries(GROUPS)) {
    fs.mkdirSync(path.join(configs, g), { recursive: true });
    const node = g.split('/').reduce<Prop | undefined>((p, k) => p?.properties?.[k], { type: 'object', properties: schema.properties, description: '' });
    for (let i = 0; i < n; i++) fs.writeFileSync(path.join(configs, g, `option-${i}.yaml`), yamlOf(node?.properties ?? {}, '').filter((l) => !l.endsWith(':')).slice(0, 12).join('\n') + '\n');
  }
  const defaults = ['defaults:', ...Object.keys(GROUPS).map((g) => `  - ${g}: option-0`), '  - _self_', ''];
  const configText = [...defaults, ...yamlOf(schema.properties, '')].join('\n') + '\n';
  const configYaml = path.join(configs, 'config.yaml');
  fs.writeFileSync(configYaml, configText);
  const modelYaml = path.join(configs, 'model', 'option-0.yaml');
  const modelText = yamlOf(schema.properties.model.properties!, '').join('\n') + '\n';
  fs.mkdirSync(path.join(root, 'recipes'));
  const recipe = path.join(root, 'recipes', 'big.sh');
  const recipeText = bigRecipe(schema.properties);
  fs.writeFileSync(recipe, recipeText);
  return { root, schemaFile, peerSchemaFile, configYaml, configText, modelYaml, modelText, recipe, recipeText };
}

/** 1,000 lines: comments, exports, 10 flag strings of 20 flags each, and a trainer command with 40 overrides. */
function bigRecipe(props: Record<string, Prop>): string {
  const libtpu = FLAGS.filter((f) => f.scope === 'libtpu' && f.type !== 'string');
  const xla = FLAGS.filter((f) => f.scope === 'xla' && f.platform === 'any' && (f.type === 'bool' || f.type === 'int'));
  const value = (f: (typeof FLAGS)[number]) =>
    f.tristate ? 'ENABLED' : f.type === 'bool' ? 'true' : f.type === 'int' ? '42' : f.type === 'float' ? '0.5' : (f.values?.[0] ?? 'x');
  const lines: string[] = ['#!/usr/bin/env bash', '# A long recipe for the benchmark.'];
  let used = 0;
  for (let block = 0; block < 10; block++) {
    for (let c = 0; c < 40; c++) lines.push(`# block ${block} note ${c}: tuning notes for this group of flags, kept as comments as real recipes do.`);
    const pool = block % 2 === 0 ? libtpu : xla;
    const flags: string[] = [];
    for (let i = 0; i < 20; i++) {
      const f = pool[(block * 20 + i) % pool.length];
      flags.push(`--${f.name}=${value(f)}`);
      used++;
    }
    const v = block % 2 === 0 ? 'LIBTPU_INIT_ARGS' : 'XLA_FLAGS';
    lines.push(`export ${v}="\${${v}:-} ${flags.slice(0, 10).join(' ')}`, `  ${flags.slice(10).join(' ')}"`);
    for (let e = 0; e < 8; e++) lines.push(`export VAR_${block}_${e}=value-${e}`);
  }
  if (used !== 200) throw new Error('the recipe must hold 200 flags');
  const keys = Object.entries(props).filter(([, p]) => !p.properties).slice(0, 30).map(([k, p]) => `${k}=${p.default === null ? 'null' : String(p.default)}`);
  const nested = Object.entries(props.model.properties!).slice(0, 10).map(([k, p]) => `model.${k}=${p.default === null ? 'null' : String(p.default)}`);
  lines.push('python3 -m tpu_trainer.train \\', '    model=option-1 \\', ...[...keys, ...nested].map((o) => `    ${o} \\`), '    "$@"');
  while (lines.length < 1000) lines.splice(lines.length - 43, 0, `# padding ${lines.length}`);
  return lines.join('\n') + '\n';
}
