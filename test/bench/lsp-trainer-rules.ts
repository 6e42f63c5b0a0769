/**
 * Part 3 of the language-server bench (test/bench/lsp.bench.ts): the trainer's own schema, with its cross-field
 * rules (`x-rules`) run over the config every trainer command composes (issue 33). Two recipes:
 *
 *   - a sweep script: 24 trainer commands in the style of torchprime's recipes (presets, meshes, -m sweeps);
 *   - the override corpus as one file: every line of test/fixtures/overrides/corpus.txt as its own trainer
 *     command (548 of them), the worst case we have.
 *
 * For each: completion at every override key and value (over JSON-RPC), diagnostics in process after one line is
 * edited (what an editor sees while typing) and after every line changed (nothing reusable), and
 * didChange → publishDiagnostics end to end. Goals as in part 1: completion p99 < 5 ms, diagnostics < 20 ms.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Position } from 'vscode-languageserver-protocol';
import { TextDocument } from 'vscode-languageserver-textdocument';
import { loadHydraModel } from '../../language-server/src/hydra/model';
import { overrideDiagnostics } from '../../language-server/src/service/overrides';
import { LspClient, repoRoot } from '../lsp/harness';

export interface Summary {
  n: number;
  p50: number;
  p99: number;
  max: number;
}

type Summarize = (xs: number[]) => Summary;

const SWEEP_LINES = [
  'model=llama-3-8b global_batch_size=1024 ici_mesh.fsdp=256 model/remat=llama-scan block_size=8192',
  'model=llama-3.1-70b ici_mesh.fsdp=-1 ici_mesh.tensor=4 dcn_mesh.data=2 block_size=8192 optimizer=muon',
  'model=mixtral-8x7b ici_mesh.fsdp=-1 ici_mesh.expert=8 block_size=4096 optimizer=lion loss=z_loss',
  '-m model=tiny-llama,tiny-mixtral optimizer=adamw,lion,muon block_size=128,256 max_steps=20',
  "-m 'optimizer.lr=choice(1e-4,3e-4,1e-3)' scheduler=wsd scheduler.decay_ratio=0.1,0.2",
  'dataset_config_name=wikitext-103-raw-v1 model=llama-3-8b block_size=2048',
  'dataset=file data.path=/data/corpus model.vocab_size=256 loss=cut_cross_entropy',
  'task=benchmark model=llama-3.1-8b ici_mesh.fsdp=-1 profile_step=5 profile_steps=2',
  "'+model.sharding.parameters.lm_head.weight=[tensor,fsdp]' 'model.sharding.inputs=[[data,fsdp],null]'",
  "model=tiny-llama-3.1 model.rope_scaling.rope_type=llama3 'output_dir=/tmp/${model.name}-${block_size}'",
];

function sweepRecipe(): string {
  const out = ['#!/bin/bash', 'set -euo pipefail', 'export LIBTPU_INIT_ARGS="--xla_tpu_enable_latency_hiding_scheduler=true"', ''];
  for (let i = 0; i < 24; i++) out.push(`python -m tpu_trainer.train ${SWEEP_LINES[i % SWEEP_LINES.length]} seed=${i}`);
  return `${out.join('\n')}\n`;
}

function corpusRecipe(): string {
  const corpus = fs.readFileSync(path.join(repoRoot, 'test', 'fixtures', 'overrides', 'corpus.txt'), 'utf8');
  const lines = corpus.split('\n').filter((l) => l.trim() && !l.startsWith('#'));
  return `${lines.map((l) => `python -m tpu_trainer.train ${l}`).join('\n')}\n`;
}

/** Positions inside each override's key and at the end of its value. */
function overridePositions(text: string): Position[] {
  const out: Position[] = [];
  text.split('\n').forEach((l, line) => {
    const at = l.indexOf('tpu_trainer.train ');
    if (at < 0) return;
    for (const m of l.slice(at + 18).matchAll(/(?<=^|\s)([\w.+~/]+)=(\S*)/g)) {
      const start = at + 18 + m.index;
      out.push({ line, character: start + Math.min(4, m[1].length) }, { line, character: start + m[0].length });
    }
  });
  return out;
}

export async function benchTrainerRules(reps: number, validations: number, summarize: Summarize, rows: string[], results: Record<string, Summary | number | string>): Promise<string[]> {
  const model = loadHydraModel({ root: repoRoot });
  const client = await LspClient.start(repoRoot);
  const goals: string[] = [];
  const ms = (x: number) => x.toFixed(2);
  try {
    for (const [name, text] of [['sweep recipe (24 trainer commands)', sweepRecipe()], ['override corpus as one file (548 trainer commands)', corpusRecipe()]] as const) {
      const uri = `file:///bench/${name.split(' ')[0]}.sh`;
      await client.open(uri, text);
      await client.diagnostics(uri, 60_000);
      const positions = overridePositions(text);
      const completion: number[] = [];
      for (let rep = 0; rep < reps + 1; rep++) {
        for (const p of positions.slice(0, 400)) {
          const t0 = performance.now();
          await client.complete(uri, p);
          if (rep > 0) completion.push(performance.now() - t0);
        }
      }
      const lines = text.split('\n');
      const mid = Math.floor(lines.length / 2);
      const edited = (i: number) => lines.map((l, n) => (n === mid ? `${l} seed=${i}` : l)).join('\n');
      const oneLine: number[] = [];
      for (let i = 0; i < validations + 20; i++) {
        const doc = TextDocument.create(uri, 'shellscript', i + 1, edited(1000 + i));
        const t0 = performance.now();
        overrideDiagnostics(model, doc);
        if (i >= 20) oneLine.push(performance.now() - t0);
      }
      const everyLine: number[] = [];
      for (let i = 0; i < Math.min(validations, 40); i++) {
        // Each command different from every earlier version: nothing the server kept can be reused.
        const doc = TextDocument.create(uri, 'shellscript', i + 1, lines.map((l) => (l.startsWith('python') ? `${l} profile_steps=${i + 1}` : l)).join('\n'));
        const t0 = performance.now();
        overrideDiagnostics(model, doc);
        everyLine.push(performance.now() - t0);
      }
      const published: number[] = [];
      for (let i = 0; i < 40; i++) {
        const t0 = performance.now();
        await client.open(uri, edited(5000 + i));
        await client.diagnostics(uri, 60_000);
        published.push(performance.now() - t0);
      }
      const [c, o, e, p] = [completion, oneLine, everyLine, published].map(summarize);
      Object.assign(results, { [`${name} completion`]: c, [`${name} one line edited`]: o, [`${name} every line changed`]: e, [`${name} publish`]: p });
      rows.push(`| completion, ${name} (${Math.min(positions.length, 400)} positions × ${reps}) | ${ms(c.p50)} | ${ms(c.p99)} | — | — | |`);
      rows.push(`| diagnostics (in process), ${name}, one line edited, ${validations}× | ${ms(o.p50)} | ${ms(o.p99)} | — | — | |`);
      rows.push(`| diagnostics (in process), ${name}, every line changed, ${e.n}× | ${ms(e.p50)} | ${ms(e.p99)} | — | — | |`);
      rows.push(`| didChange → diagnostics published, ${name}, one line edited | ${ms(p.p50)} | ${ms(p.p99)} | — | — | |`);
      goals.push(`${name}: completion p99 < 5 ms ${c.p99 < 5 ? 'met' : 'MISSED'} (${ms(c.p99)}); diagnostics after an edit < 20 ms ${o.p99 < 20 && p.p99 < 20 ? 'met' : 'MISSED'} (p99 ${ms(o.p99)} in process, ${ms(p.p99)} end to end)`);
    }
  } finally {
    await client.stop();
  }
  return goals;
}
