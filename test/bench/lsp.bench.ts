/**
 * Language server benchmark: completion, hover and diagnostics latency, ours against yaml-language-server (the
 * npm package, given the equivalent JSON Schema) on the same YAML documents and cursor positions, in the same
 * run, interleaved request by request so machine load hits both alike.
 *
 *   1. Hydra config tree the size of torchprime's (test/bench/lsp-workload.ts): completion and hover at every
 *      key and value of the primary config.yaml and of a model option file, over JSON-RPC (stdio) for both.
 *      Diagnostics: the validation itself, in process (our configDiagnostics vs the peer's doValidation through
 *      its library API), because the peer's server waits a fixed 200 ms (validationDelayMs) before validating;
 *      the end-to-end didChange → publishDiagnostics time is reported for both as well.
 *   2. A 1,000-line recipe with 200 flags and 40 overrides (ours only: the peer does not read shell):
 *      completion inside flag strings and overrides, and full re-validation (in process and end to end).
 *
 *   3. The trainer's own schema and cross-field rules on recipes of many trainer commands (lsp-trainer-rules.ts).
 *
 *   node --import tsx test/bench/lsp.bench.ts     (or: bash scripts/bench.sh lsp)
 *   env: BENCH_LSP_REPS (5 passes over every position), BENCH_LSP_VALIDATIONS (500), BENCH_LSP_ONLY=trainer (part 3)
 * Goals (issue 5): p99 completion < 5 ms; full re-validation of the recipe < 20 ms; our p99 ≤ the peer's.
 * Writes every summary to test-artifacts/bench/lsp.json.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import type { Position } from 'vscode-languageserver-protocol';
import { TextDocument } from 'vscode-languageserver-textdocument';
import { getLanguageService } from 'yaml-language-server';
import { loadHydraModel } from '../../language-server/src/hydra/model';
import { flagDiagnostics } from '../../language-server/src/service/flags';
import { configDiagnostics } from '../../language-server/src/service/hydra-yaml';
import { overrideDiagnostics } from '../../language-server/src/service/overrides';
import { LspClient, repoRoot } from '../lsp/harness';
import { benchTrainerRules } from './lsp-trainer-rules';
import { makeBenchWorkspace } from './lsp-workload';

const REPS = Number(process.env.BENCH_LSP_REPS ?? 5);
const VALIDATIONS = Number(process.env.BENCH_LSP_VALIDATIONS ?? 500);
const peerBin = path.join(repoRoot, 'node_modules', 'yaml-language-server', 'bin', 'yaml-language-server');

interface Summary {
  n: number;
  p50: number;
  p99: number;
  max: number;
}
function summarize(xs: number[]): Summary {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))];
  return { n: s.length, p50: q(0.5), p99: q(0.99), max: s[s.length - 1] };
}
const ms = (x: number) => x.toFixed(2);

async function time<T>(f: () => Promise<T>): Promise<[number, T]> {
  const t0 = performance.now();
  const v = await f();
  return [performance.now() - t0, v];
}

/** Positions at every key (inside the word) and every value (end of line) of a YAML text. */
function yamlPositions(text: string): Position[] {
  const out: Position[] = [];
  text.split('\n').forEach((l, line) => {
    const m = /^(\s*)([\w.-]+):(.*)$/.exec(l);
    if (!m) return;
    out.push({ line, character: m[1].length + 2 });
    if (m[3].trim() !== '') out.push({ line, character: l.length });
  });
  return out;
}

async function main(): Promise<void> {
  if (process.env.BENCH_LSP_ONLY === 'trainer') {
    const rows: string[] = [];
    const goals = await benchTrainerRules(REPS, VALIDATIONS, summarize, rows, {});
    console.log('\n| measurement (ms) | ours p50 | ours p99 | | | |\n| --- | ---: | ---: | ---: | ---: | ---: |');
    for (const r of rows) console.log(r);
    for (const g of goals) console.log(`- ${g}`);
    return;
  }
  const ws = makeBenchWorkspace();
  const results: Record<string, Summary | number | string> = {};
  const rows: string[] = [];
  const ours = await LspClient.start(ws.root, { schemaFile: 'config.schema.json', configDirs: ['configs'] });
  const peer = await LspClient.start(ws.root, undefined, [peerBin, '--stdio'], {
    workspace: { configuration: true },
    textDocument: { completion: { completionItem: { snippetSupport: true, documentationFormat: ['markdown', 'plaintext'] } }, hover: { contentFormat: ['markdown', 'plaintext'] } },
  });
  try {
    // The peer gets the same schema: the whole tree for config.yaml, the model node for model/*.yaml.
    const peerSchema = JSON.parse(fs.readFileSync(ws.peerSchemaFile, 'utf8')) as { properties: { model: object } };
    const modelSchemaFile = path.join(ws.root, 'peer.model.schema.json');
    fs.writeFileSync(modelSchemaFile, JSON.stringify(peerSchema.properties.model));
    peer.settings = {
      yaml: {
        validate: true,
        hover: true,
        completion: true,
        schemas: { [pathToFileURL(ws.peerSchemaFile).toString()]: ['**/configs/config.yaml'], [pathToFileURL(modelSchemaFile).toString()]: ['**/configs/model/*.yaml'] },
      },
    };
    // It pulls its settings (workspace/configuration) when told they changed.
    await peer.conn.sendNotification('workspace/didChangeConfiguration', { settings: {} });
    const docs = [
      { name: 'config.yaml', uri: pathToFileURL(ws.configYaml).toString(), text: ws.configText },
      { name: 'model/option-0.yaml', uri: pathToFileURL(ws.modelYaml).toString(), text: ws.modelText },
    ];
    for (const d of docs) for (const c of [ours, peer]) await c.open(d.uri, d.text, 'yaml');

    // Sanity: both really complete from the schema (an enum value list), so we compare like with like.
    const enumLine = ws.configText.split('\n').findIndex((l) => /^train_mode_4: /.test(l));
    const enumPos = { line: enumLine, character: 'train_mode_4: '.length };
    for (const c of [ours, peer]) {
      const labels = (await c.complete(docs[0].uri, enumPos)).map((i) => i.label.replace(/^"|"$/g, ''));
      assert.ok(['auto', 'fast', 'exact', 'off'].every((v) => labels.includes(v)), `${c === ours ? 'ours' : 'peer'}: ${labels.join(',')}`);
    }

    for (const d of docs) {
      const positions = yamlPositions(d.text);
      const t = { ours: [] as number[], peer: [] as number[], oursHover: [] as number[], peerHover: [] as number[] };
      for (let rep = 0; rep < REPS + 1; rep++) {
        for (const p of positions) {
          const [a] = await time(() => ours.complete(d.uri, p));
          const [b] = await time(() => peer.complete(d.uri, p));
          const [h1] = await time(() => ours.hover(d.uri, p));
          const [h2] = await time(() => peer.hover(d.uri, p));
          // The first pass warms both (JIT, schema load); it is not counted.
          if (rep === 0) continue;
          t.ours.push(a);
          t.peer.push(b);
          t.oursHover.push(h1);
          t.peerHover.push(h2);
        }
      }
      for (const [k, v] of Object.entries(t)) results[`${d.name} ${k}`] = summarize(v);
      const co = summarize(t.ours);
      const cp = summarize(t.peer);
      const ho = summarize(t.oursHover);
      const hp = summarize(t.peerHover);
      rows.push(`| completion, ${d.name} (${positions.length} positions × ${REPS}) | ${ms(co.p50)} | ${ms(co.p99)} | ${ms(cp.p50)} | ${ms(cp.p99)} | ${(co.p99 / cp.p99).toFixed(2)} |`);
      rows.push(`| hover, ${d.name} | ${ms(ho.p50)} | ${ms(ho.p99)} | ${ms(hp.p50)} | ${ms(hp.p99)} | ${(ho.p99 / hp.p99).toFixed(2)} |`);
    }

    // Diagnostics, in process: the same documents, a fresh version each time (one value flips).
    const model = loadHydraModel({ root: ws.root, schemaFile: 'config.schema.json', configDirs: ['configs'] });
    const ls = getLanguageService({
      schemaRequestService: async (uri: string) => fs.readFileSync(new URL(uri), 'utf8'),
      workspaceContext: { resolveRelativePath: (rel: string, res: string) => new URL(rel, res).toString() },
    });
    ls.configure({ validate: true, completion: true, hover: true, schemas: [{ uri: pathToFileURL(ws.peerSchemaFile).toString(), fileMatch: ['**/configs/config.yaml'] }] });
    const vo: number[] = [];
    const vp: number[] = [];
    for (let i = 0; i < VALIDATIONS + 20; i++) {
      const text = docs[0].text.replace('train_enabled_3: false', `train_enabled_3: ${i % 2 === 0 ? 'true' : 'false'}`);
      const doc = TextDocument.create(docs[0].uri, 'yaml', i + 1, text);
      const t0 = performance.now();
      const d1 = configDiagnostics(model, doc);
      const t1 = performance.now();
      const d2 = await ls.doValidation(doc, false);
      const t2 = performance.now();
      if (i === 0) assert.deepEqual([d1.length, d2.length], [0, 0], `both find the config clean: ${JSON.stringify([d1, d2]).slice(0, 400)}`);
      if (i >= 20) {
        vo.push(t1 - t0);
        vp.push(t2 - t1);
      }
    }
    const so = summarize(vo);
    const sp = summarize(vp);
    results['config.yaml validation ours'] = so;
    results['config.yaml validation peer'] = sp;
    rows.push(`| validation (in process), config.yaml, ${VALIDATIONS}× | ${ms(so.p50)} | ${ms(so.p99)} | ${ms(sp.p50)} | ${ms(sp.p99)} | ${(so.p99 / sp.p99).toFixed(2)} |`);

    // End to end: didChange → publishDiagnostics (the peer's includes its fixed 200 ms validation delay).
    const e2e = async (c: LspClient, n: number) => {
      const xs: number[] = [];
      for (let i = 0; i < n; i++) {
        const text = docs[0].text.replace('train_enabled_3: false', `train_enabled_3: ${i % 2 === 0 ? 'true' : 'false'}`);
        const [t] = await time(async () => {
          await c.open(docs[0].uri, text, 'yaml');
          return c.diagnostics(docs[0].uri, 10_000);
        });
        xs.push(t);
      }
      return summarize(xs);
    };
    const eo = await e2e(ours, 50);
    const ep = await e2e(peer, 10);
    results['config.yaml publish ours'] = eo;
    results['config.yaml publish peer'] = ep;
    rows.push(`| didChange → diagnostics published, config.yaml | ${ms(eo.p50)} | ${ms(eo.p99)} | ${ms(ep.p50)} | ${ms(ep.p99)} | (peer waits 200 ms by design) |`);

    // The 1,000-line recipe with 200 flags: ours only.
    const rUri = pathToFileURL(ws.recipe).toString();
    await ours.open(rUri, ws.recipeText);
    const clean = await ours.diagnostics(rUri);
    assert.deepEqual(clean, [], `the benchmark recipe is clean: ${clean.slice(0, 3).map((d) => d.message).join('; ')}`);
    const lines = ws.recipeText.split('\n');
    const rPositions: Position[] = [];
    lines.forEach((l, line) => {
      for (const m of l.matchAll(/--xla_\w{6}/g)) rPositions.push({ line, character: m.index + m[0].length });
      const o = /^ {4}([\w.]+)=/.exec(l);
      if (o) rPositions.push({ line, character: 4 + Math.min(5, o[1].length) }, { line, character: 4 + o[1].length + 1 });
    });
    const rc: number[] = [];
    for (let rep = 0; rep < REPS + 1; rep++) {
      for (const p of rPositions) {
        const [t, items] = await time(() => ours.complete(rUri, p));
        if (rep === 0) assert.ok(items.length > 0, `completion at ${p.line}:${p.character}`);
        else rc.push(t);
      }
    }
    const rcs = summarize(rc);
    results['recipe completion ours'] = rcs;
    rows.push(`| completion, 1,000-line recipe (${rPositions.length} positions × ${REPS}) | ${ms(rcs.p50)} | ${ms(rcs.p99)} | — | — | |`);
    const rv: number[] = [];
    for (let i = 0; i < VALIDATIONS + 20; i++) {
      const doc = TextDocument.create(rUri, 'shellscript', i + 1, ws.recipeText.replace('=42', `=${i}`));
      const t0 = performance.now();
      flagDiagnostics(doc);
      overrideDiagnostics(model, doc);
      configDiagnostics(model, doc);
      if (i >= 20) rv.push(performance.now() - t0);
    }
    const rvs = summarize(rv);
    results['recipe validation ours'] = rvs;
    rows.push(`| full re-validation (in process), 1,000-line recipe, ${VALIDATIONS}× | ${ms(rvs.p50)} | ${ms(rvs.p99)} | — | — | |`);
    const re: number[] = [];
    for (let i = 0; i < 50; i++) {
      const [t] = await time(async () => {
        await ours.open(rUri, ws.recipeText.replace('=42', `=${i}`));
        return ours.diagnostics(rUri, 10_000);
      });
      re.push(t);
    }
    const res = summarize(re);
    results['recipe publish ours'] = res;
    rows.push(`| didChange → diagnostics published, 1,000-line recipe | ${ms(res.p50)} | ${ms(res.p99)} | — | — | |`);

    const trainerGoals = await benchTrainerRules(REPS, VALIDATIONS, summarize, rows, results);
    const completionP99 = Math.max(...['config.yaml ours', 'model/option-0.yaml ours', 'recipe completion ours'].map((k) => (results[k] as Summary).p99));
    // Ours against the peer on each YAML document (same text, same positions), and on validation.
    const vsPeer = ['config.yaml', 'model/option-0.yaml'].map((d) => [d, (results[`${d} ours`] as Summary).p99, (results[`${d} peer`] as Summary).p99] as const);
    const goals = [
      `p99 completion < 5 ms: ${completionP99 < 5 ? 'met' : 'MISSED'} (worst p99 ${ms(completionP99)} ms)`,
      `full re-validation of the 1,000-line recipe < 20 ms: ${rvs.p99 < 20 && res.p99 < 20 ? 'met' : 'MISSED'} (p99 ${ms(rvs.p99)} ms in process, ${ms(res.p99)} ms end to end)`,
      ...vsPeer.map(([d, o, p]) => `completion p99 on ${d} at or below the peer's: ${o <= p ? 'met' : 'MISSED'} (${ms(o)} vs ${ms(p)} ms)`),
      `validation p99 on config.yaml at or below the peer's (in process): ${so.p99 <= sp.p99 ? 'met' : 'MISSED'} (${ms(so.p99)} vs ${ms(sp.p99)} ms)`,
      ...trainerGoals,
    ];
    results.goals = goals.join('; ');
    console.log('\n| measurement (ms) | ours p50 | ours p99 | yaml-language-server p50 | yaml-language-server p99 | ours / peer (p99) |');
    console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
    for (const r of rows) console.log(r);
    console.log('');
    for (const g of goals) console.log(`- ${g}`);
    fs.mkdirSync(path.join(repoRoot, 'test-artifacts', 'bench'), { recursive: true });
    fs.writeFileSync(path.join(repoRoot, 'test-artifacts', 'bench', 'lsp.json'), JSON.stringify({ date: new Date().toISOString(), reps: REPS, results }, null, 1));
  } finally {
    await ours.stop();
    await peer.stop();
    fs.rmSync(ws.root, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
