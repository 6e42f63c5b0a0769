/**
 * The server as editors other than VS Code drive it (Neovim, Helix, Emacs): no workspace root, or only the
 * old `rootPath`; no client info; no support for running editor commands from completion items. Real JSON-RPC
 * over stdio to the built server.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, test } from 'node:test';
import { labels, LspClient, repoRoot } from './harness';
import { makeWorkspace } from './fixture';

const NO_CAPS = {};
const clients: LspClient[] = [];
const dirs: string[] = [];
after(async () => {
  for (const c of clients) await c.stop();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

async function start(root: string | null, extra: object = {}): Promise<LspClient> {
  const c = await LspClient.start(root, undefined, undefined, NO_CAPS, extra);
  clients.push(c);
  return c;
}

test('no root: the trainer config is found from the document folder upward (the repo: its real schema)', async () => {
  const c = await start(null);
  const uri = pathToFileURL(path.join(repoRoot, 'recipes', 'any-client.sh')).toString();
  const d = await c.openAndDiagnose(uri, 'python -m tpu_trainer.train model=tiny-lama batch_size=8 seed=3\n');
  assert.deepEqual(d.map((x) => x.code), ['unknown-option', 'unknown-key'], d.map((x) => x.message).join('\n'));
  assert.match(d[0].message, /Did you mean "tiny-llama"\?/);
  assert.match(d[1].message, /Did you mean "global_batch_size"\?/);
  const items = await c.completeAt(uri, 'python -m tpu_trainer.train max|\n');
  assert.ok(labels(items).includes('max_steps'), labels(items).join(', '));
  assert.ok(labels(await c.completeAt(uri, 'python -m tpu_trainer.train hydra/job_lo|\n')).includes('hydra/job_logging'));
  // Items carry no VS Code-only command: a client that runs item commands would get "method not found".
  const all = await c.completeAt(uri, 'python -m tpu_trainer.train |\n');
  assert.ok(all.length > 20);
  assert.deepEqual(all.filter((i) => i.command), []);
  assert.deepEqual(c.errors, []);
});

test('no root: a config tree of another project is used for documents under it', async () => {
  const c = await start(null);
  const ws = makeWorkspace(false);
  dirs.push(ws);
  const uri = pathToFileURL(path.join(ws, 'recipes', 'r.sh')).toString();
  const d = await c.openAndDiagnose(uri, 'python -m tpu_trainer.train model=big optimizer=sgdd\n');
  assert.deepEqual(d.map((x) => x.message), ['Unknown option "sgdd" for group optimizer. Did you mean "sgd"?']);
});

test('no root and no config above the document: the schema shipped with the server', async () => {
  const c = await start(null);
  const lone = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-lone-'));
  dirs.push(lone);
  const uri = pathToFileURL(path.join(lone, 'run.sh')).toString();
  const d = await c.openAndDiagnose(uri, 'python -m tpu_trainer.train max_steps=2.5\n');
  assert.equal(d.length, 1);
  assert.match(d[0].message, /max_steps: expected an integer, got the float 2.5/);
});

test('only the old rootPath: used as the root', async () => {
  const ws = makeWorkspace(true);
  dirs.push(ws);
  const c = await start(null, { rootPath: ws, initializationOptions: { schemaFile: 'config.schema.json', configDirs: ['configs'] } });
  const uri = pathToFileURL(path.join(ws, 'recipes', 'r.sh')).toString();
  const d = await c.openAndDiagnose(uri, 'python -m tpu_trainer.train model=bigg\n');
  assert.deepEqual(d.map((x) => x.code), ['unknown-option']);
});

test('VS Code (by client info) and clients that opt in still get the re-suggest command', async () => {
  const vs = await start(repoRoot, { clientInfo: { name: 'Visual Studio Code', version: '1.99.0' } });
  const uri = pathToFileURL(path.join(repoRoot, 'recipes', 'any-client.sh')).toString();
  const a = await vs.completeAt(uri, 'python -m tpu_trainer.train |\n');
  assert.ok(a.some((i) => i.command?.command === 'editor.action.triggerSuggest'));
  const optIn = await start(repoRoot, { initializationOptions: { triggerSuggestCommand: true } });
  assert.ok((await optIn.completeAt(uri, 'python -m tpu_trainer.train |\n')).some((i) => i.command));
});
