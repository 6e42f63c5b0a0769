/**
 * The language server's parser of hydra's override grammar against hydra's own parser: every case of
 * test/fixtures/overrides/grammar-cases.txt (hydra's parser tests and docs, and lexer edge cases), with hydra's
 * verdict and value stored in grammar.json by test/trainer/override_verdicts.py. Accepted or refused alike, the
 * same key, and the same value for primitives, lists and dicts.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { parseHydraOverride, type Element, type Sweep } from '../../language-server/src/service/hydra-override-grammar';

const FUNCTIONS = new Set(['choice', 'range', 'interval', 'glob', 'sort', 'shuffle', 'tag', 'int', 'float', 'str', 'bool']);

interface Case {
  override: string;
  ok: boolean;
  key?: string;
  value?: unknown;
}

/** The value as grammar.json writes hydra's: sweeps and function results tagged, non-finite floats as text. */
function plain(v: Element | Sweep): unknown {
  if (v.kind === 'primitive') {
    if (typeof v.value === 'number' && !Number.isFinite(v.value)) return { float: Number.isNaN(v.value) ? 'nan' : v.value > 0 ? 'inf' : '-inf' };
    return v.value;
  }
  if (v.kind === 'list') return v.items.map(plain);
  if (v.kind === 'dict') return { dict: Object.fromEntries(v.entries.map((e) => [e.key, plain(e.value)])) };
  return undefined; // sweeps and functions: hydra evaluates them; only acceptance is compared
}

function functionNames(v: Element | Sweep | undefined, out: string[] = []): string[] {
  if (!v) return out;
  if (v.kind === 'function') {
    out.push(v.name);
    v.args.forEach((a) => functionNames(a.value, out));
  } else if (v.kind === 'sweep' || v.kind === 'list') v.items.forEach((i) => functionNames(i, out));
  else if (v.kind === 'dict') v.entries.forEach((e) => functionNames(e.value, out));
  return out;
}

test('every grammar case: accepted or refused as hydra does, with the same key and value', () => {
  const file = path.join(__dirname, '..', 'fixtures', 'overrides', 'grammar.json');
  const { cases } = JSON.parse(fs.readFileSync(file, 'utf8')) as { cases: Case[] };
  assert.ok(cases.length > 150);
  const wrong: string[] = [];
  for (const c of cases) {
    let got: ReturnType<typeof parseHydraOverride> | undefined;
    try {
      got = parseHydraOverride(c.override);
    } catch {
      got = undefined;
    }
    const unknownFn = got ? functionNames(got.value).some((f) => !FUNCTIONS.has(f)) : false;
    const ok = got !== undefined && !unknownFn;
    // Function arguments hydra refuses when it evaluates them (tag(x,y,z)) are beyond a parser: those may differ.
    if (ok !== c.ok && !(c.ok === false && got && functionNames(got.value).length)) {
      wrong.push(`${JSON.stringify(c.override)}: hydra ${c.ok ? 'accepts' : 'refuses'}, we ${ok ? 'accept' : 'refuse'}`);
      continue;
    }
    if (!ok || !got || !c.ok) continue;
    if (got.key.path !== c.key) wrong.push(`${JSON.stringify(c.override)}: key ${got.key.path} vs ${c.key}`);
    const mine = got.value ? plain(got.value) : undefined;
    if (mine !== undefined && 'value' in c && JSON.stringify(mine) !== JSON.stringify(c.value)) {
      wrong.push(`${JSON.stringify(c.override)}: value ${JSON.stringify(mine)} vs hydra's ${JSON.stringify(c.value)}`);
    }
  }
  assert.deepEqual(wrong, []);
});
