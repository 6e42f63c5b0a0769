/**
 * The LSP tests cannot run a stale server: the harness rebuilds dist/language-server.js when any file it is made
 * of is newer, and refuses a bundle that stays older. Checked on a two-file project of its own (so this test
 * never rewrites the bundle other LSP test files are running), then on the real server through the harness.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { buildSync } from 'esbuild';
import { bundleInputs, ensureFreshBundle, newerInputs, type BundleSpec } from '../helpers/fresh-bundle';
import { LspClient, serverBundle } from './harness';

let dir: string;
let spec: BundleSpec;
let builds = 0;
const dep = () => path.join(dir, 'src', 'dep.ts');
/** What the built bundle says (it exports `answer`, imported from dep.ts). */
const answer = (): unknown => {
  const m: { exports: { answer?: unknown } } = { exports: {} };
  new Function('module', 'exports', fs.readFileSync(spec.outfile, 'utf8'))(m, m.exports);
  return m.exports.answer;
};
/** An edit made after the build: sources from 20 s ago, the bundle 10 s, the edit 5 s (file times are coarse). */
const edit = (file: string, text: string): void => {
  fs.writeFileSync(file, text);
  const now = Date.now() / 1000;
  for (const f of fs.readdirSync(path.join(dir, 'src'))) fs.utimesSync(path.join(dir, 'src', f), now - 20, now - 20);
  fs.utimesSync(spec.outfile, now - 10, now - 10);
  fs.utimesSync(file, now - 5, now - 5);
};

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-fresh-bundle-'));
  fs.mkdirSync(path.join(dir, 'src'));
  fs.writeFileSync(path.join(dir, 'src', 'entry.ts'), "export { answer } from './dep';\n");
  fs.writeFileSync(dep(), 'export const answer: number = 1;\n');
  spec = {
    entry: path.join(dir, 'src', 'entry.ts'),
    outfile: path.join(dir, 'dist', 'entry.js'),
    build: () => {
      builds++;
      buildSync({ entryPoints: [spec.entry], outfile: spec.outfile, bundle: true, platform: 'node', format: 'cjs', logLevel: 'silent' });
    },
  };
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

test('a missing bundle is built; a fresh one is used as it is', async () => {
  await ensureFreshBundle(spec);
  assert.equal(builds, 1);
  assert.equal(answer(), 1);
  await ensureFreshBundle(spec);
  assert.equal(builds, 1, 'no inputs newer than the bundle: no build');
});

test('an imported file edited after the build makes the bundle rebuilt before it is used', async () => {
  edit(dep(), 'export const answer: number = 2;\n');
  assert.deepEqual(newerInputs(spec), [dep()]);
  await ensureFreshBundle(spec);
  assert.equal(builds, 2);
  assert.equal(answer(), 2, 'the bundle has the edit');
  assert.deepEqual(newerInputs(spec), []);
});

test('a bundle that stays older than its sources is refused, naming the newer file', async () => {
  edit(dep(), 'export const answer: number = 3;\n');
  const build = spec.build;
  spec.build = () => builds++;
  try {
    await assert.rejects(ensureFreshBundle(spec), /older than .*dep\.ts even after building it/);
  } finally {
    spec.build = build;
  }
});

test('the harness starts the real server only from a bundle no older than any of its sources', async () => {
  const inputs = bundleInputs(serverBundle.entry).map((f) => path.relative(path.dirname(serverBundle.outfile), f));
  assert.ok(inputs.includes(path.join('..', 'language-server', 'src', 'service', 'overrides.ts')), `service/ is among the inputs: ${inputs.slice(0, 20).join(', ')}`);
  const c = await LspClient.start(null);
  try {
    assert.deepEqual(newerInputs(serverBundle), [], 'every input is older than the bundle the harness spawned');
    assert.ok(c.init.capabilities.completionProvider, 'and the server answered initialize over JSON-RPC');
  } finally {
    await c.stop();
  }
});
