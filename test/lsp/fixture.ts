/**
 * A small hydra workspace on disk for the language server tests: a JSON Schema in the trainer's format
 * (with `x-hydra` groups), a primary config, and group folders (model, model/remat, optimizer).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const str = (def: string, description: string) => ({ type: 'string', default: def, description });
const int = (def: number, description: string, minimum = 0) => ({ type: 'integer', default: def, description, minimum });

export const SCHEMA = {
  title: 'fixture',
  type: 'object',
  additionalProperties: false,
  properties: {
    model: {
      type: 'object',
      additionalProperties: false,
      properties: {
        name: str('tiny', 'Model name.'),
        hidden_size: int(64, 'Width of the residual stream.', 1),
        num_hidden_layers: int(2, 'Number of blocks.', 1),
        tie_word_embeddings: { type: 'boolean', default: false, description: 'Share embeddings.' },
        attention_kernel: { type: 'string', enum: ['default', 'splash_attention', 'flash_attention'], default: 'default', description: 'Attention implementation.' },
        remat: { type: 'object', additionalProperties: false, properties: { policy: str('none', 'What to recompute.') } },
      },
    },
    optimizer: {
      type: 'object',
      additionalProperties: false,
      properties: {
        name: { type: 'string', enum: ['adamw', 'sgd'], default: 'adamw', description: 'Optimizer.' },
        lr: { type: 'number', default: 0.0003, description: 'Peak learning rate.', minimum: 0 },
      },
    },
    ici_mesh: { type: 'object', additionalProperties: false, properties: { fsdp: int(1, 'FSDP axis size.', 1), tensor: int(1, 'Tensor axis size.', 1) } },
    max_steps: int(100, 'Optimizer steps to run.', 1),
    seed: { type: 'integer', default: 42, description: 'Random seed.' },
    output_dir: str('outputs', 'Where the run writes.'),
    profile_dir: { type: ['string', 'null'], default: null, description: 'Profiles go here.' },
  },
  'x-hydra': { groups: { model: { default: 'tiny', options: { tiny: {}, big: {} } }, optimizer: { default: 'adamw', options: { adamw: {}, sgd: {} } } } },
};

export const FILES: Record<string, string> = {
  'configs/config.yaml': 'defaults:\n  - trainer_schema\n  - model: tiny\n  - optimizer: adamw\n  - override hydra/job_logging: stdout\n  - _self_\n\noutput_dir: outputs/${now:%Y-%m-%d}\nmax_steps: 10\n',
  'configs/model/tiny.yaml': 'name: tiny\nhidden_size: 64\nnum_hidden_layers: 2\n',
  'configs/model/big.yaml': 'name: big\nhidden_size: 4096\nnum_hidden_layers: 32\nattention_kernel: splash_attention\n',
  'configs/model/remat/llama-scan.yaml': 'policy: scan\n',
  'configs/model/remat/none.yaml': 'policy: none\n',
  'configs/optimizer/adamw.yaml': 'name: adamw\nlr: 0.0003\n',
  'configs/optimizer/sgd.yaml': 'name: sgd\nlr: 0.1\n',
};

/** Writes the workspace under a fresh temp dir; `withSchema: false` leaves the schema out (inferred mode). */
export function makeWorkspace(withSchema = true): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-lsp-'));
  for (const [rel, text] of Object.entries(FILES)) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text);
  }
  if (withSchema) fs.writeFileSync(path.join(root, 'config.schema.json'), JSON.stringify(SCHEMA, null, 1));
  fs.mkdirSync(path.join(root, 'recipes'));
  return root;
}

export const INIT = { schemaFile: 'config.schema.json', configDirs: ['configs'] };
