/**
 * Fuzz: thousands of random edits and garbage documents, with completion / hover / definition / code action
 * requests at random (and out-of-range) positions. The server must never crash, never log a caught error,
 * answer every request within its time bound, and publish diagnostics for the final version of every document.
 * Seeded, so a failure reproduces: TPW_FUZZ_SEED=n.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';
import type { Position } from 'vscode-languageserver-protocol';
import { LspClient } from './harness';
import { INIT, makeWorkspace } from './fixture';

const SEED = Number(process.env.TPW_FUZZ_SEED ?? 20261122);
const EDITS = Number(process.env.TPW_FUZZ_EDITS ?? 3000);
/** Every request's answer must arrive within this (generous for a loaded CI machine; typical is < 2 ms). */
const BOUND_MS = 1000;

/** mulberry32: small, seedable. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PIECES = [
  'export LIBTPU_INIT_ARGS=', "export LIBTPU_INIT_ARGS='", 'XLA_FLAGS="', '--xla_tpu_enable_', '--xla_', '--', '-', '=', '=true', '=kAuto', "'", '"',
  '\\\n', '\n', '\n    ', ' ', '  ', 'python3 -m tpu_trainer.train ', 'model=', 'model/remat=', '+', '++', '~', 'optimizer.', '.', 'max_steps=',
  'defaults:\n  - ', 'model: ', ': ', '- ', '|', '>-\n', '${', '}', '${model.', '#', ' # c', '{', '[', ']', '\t', '\r\n', '\u00e9', '\u{1F600}', '\\',
  '$', '$@', '"$@"', 'envs:\n  XLA_FLAGS: ', 'run: |\n  ', '@package _global_', '???', 'null', '1e-4', '-1', 'hidden_size: ', '\u0000',
];

function randomText(r: () => number, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += r() < 0.7 ? PIECES[Math.floor(r() * PIECES.length)] : String.fromCharCode(32 + Math.floor(r() * 95));
  return s;
}

let root: string;
let c: LspClient;
before(async () => {
  root = makeWorkspace();
  c = await LspClient.start(root, INIT);
});
after(async () => {
  await c.stop();
  fs.rmSync(root, { recursive: true, force: true });
});

test(`fuzz: ${EDITS} random edits and garbage documents; no crash, no caught errors, every answer within ${BOUND_MS} ms`, async () => {
  const r = rng(SEED);
  const start = fs.readFileSync(path.join(__dirname, 'fixtures', 'torchprime-recipes.sh'), 'utf8');
  const docs = [
    { uri: pathToFileURL(path.join(root, 'recipes/fuzz.sh')).toString(), lang: 'shellscript', text: start },
    { uri: pathToFileURL(path.join(root, 'configs/config.yaml')).toString(), lang: 'yaml', text: fs.readFileSync(path.join(root, 'configs/config.yaml'), 'utf8') },
    { uri: pathToFileURL(path.join(root, 'configs/model/fuzz.yaml')).toString(), lang: 'yaml', text: 'name: x\nhidden_size: 3\n' },
    { uri: 'untitled:Untitled-1', lang: 'dotenv', text: 'XLA_FLAGS=--xla_dump_to=/tmp\n' },
  ];
  for (const d of docs) await c.open(d.uri, d.text, d.lang);
  let worst = 0;
  let requests = 0;
  const timed = async <T>(p: Promise<T>): Promise<T> => {
    const t0 = performance.now();
    const v = await p;
    worst = Math.max(worst, performance.now() - t0);
    requests++;
    return v;
  };
  const randomPos = (text: string): Position => {
    if (r() < 0.05) return { line: Math.floor(r() * 1e6), character: Math.floor(r() * 1e6) };
    const lines = text.split('\n');
    const line = Math.floor(r() * lines.length);
    return { line, character: Math.floor(r() * (lines[line].length + 1)) };
  };
  const offsetOf = (text: string, p: Position) => {
    const lines = text.split('\n');
    const l = Math.min(p.line, lines.length - 1);
    return lines.slice(0, l).reduce((n, x) => n + x.length + 1, 0) + Math.min(p.character, lines[l].length);
  };
  for (let i = 0; i < EDITS; i++) {
    const d = docs[Math.floor(r() * docs.length)];
    if (r() < 0.02) {
      // A whole garbage document.
      d.text = randomText(r, Math.floor(r() * 400));
      await c.open(d.uri, d.text, d.lang);
    } else {
      const a = randomPos(d.text);
      const b = r() < 0.5 ? a : randomPos(d.text);
      const [s, e] = offsetOf(d.text, a) <= offsetOf(d.text, b) ? [a, b] : [b, a];
      const ins = r() < 0.3 ? '' : randomText(r, 1 + Math.floor(r() * 4));
      const so = offsetOf(d.text, s);
      const eo = offsetOf(d.text, e);
      // Out-of-range positions are clamped by the server as by us; keep the model in step with the clamp.
      const clamp = (p: Position, o: number) => (p.line > 1e5 ? positionOf(d.text, o) : p);
      await c.edit(d.uri, { start: clamp(s, so), end: clamp(e, eo) }, ins);
      d.text = d.text.slice(0, so) + ins + d.text.slice(eo);
      if (d.text.length > 30_000) {
        d.text = d.text.slice(0, 10_000);
        await c.open(d.uri, d.text, d.lang);
      }
    }
    const pos = randomPos(d.text);
    const kind = Math.floor(r() * 4);
    if (kind === 0) await timed(c.complete(d.uri, pos));
    else if (kind === 1) await timed(c.hover(d.uri, pos));
    else if (kind === 2) await timed(c.definition(d.uri, pos));
    else await timed(c.codeActions(d.uri, [{ range: { start: pos, end: pos }, message: 'x', code: 'unknown-flag', data: r() < 0.5 ? { kind: 'unknown-flag', suggestions: ['a'] } : 'junk' }]));
  }
  for (const d of docs) await c.diagnostics(d.uri, BOUND_MS * 5);
  assert.equal(c.proc.exitCode, null, 'the server is still running');
  assert.deepEqual(c.errors, [], 'no feature threw');
  assert.ok(worst < BOUND_MS, `slowest answer ${worst.toFixed(1)} ms`);
  assert.ok(requests >= EDITS);
  // The server's view of each document equals ours: ask for diagnostics of a known state.
  const final = docs[0];
  await c.open(final.uri, "export LIBTPU_INIT_ARGS='--xla_tpu_enable_flash_attention=maybe'\n", final.lang);
  const diags = await c.diagnostics(final.uri);
  assert.equal(diags.length, 1);
  console.log(`# fuzz seed ${SEED}: ${requests} requests, slowest ${worst.toFixed(1)} ms`);
});

function positionOf(text: string, offset: number): Position {
  const before = text.slice(0, offset).split('\n');
  return { line: before.length - 1, character: before[before.length - 1].length };
}
