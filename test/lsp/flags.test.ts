/**
 * The language server spoken to as an editor does: the built bundle over stdio, JSON-RPC from
 * vscode-languageserver-protocol. First feature: LIBTPU_INIT_ARGS / XLA_FLAGS flag completion in recipes.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { createProtocolConnection, StreamMessageReader, StreamMessageWriter, type ProtocolConnection } from 'vscode-languageserver-protocol/node';
import type { CompletionItem, CompletionList, InitializeResult } from 'vscode-languageserver-protocol';

const bundle = path.join(__dirname, '..', '..', 'dist', 'language-server.js');
let server: ChildProcess;
let conn: ProtocolConnection;

before(async () => {
  server = spawn(process.execPath, [bundle, '--stdio'], { stdio: ['pipe', 'pipe', 'inherit'] });
  conn = createProtocolConnection(new StreamMessageReader(server.stdout!), new StreamMessageWriter(server.stdin!));
  conn.listen();
});

after(async () => {
  try {
    await conn.sendRequest('shutdown');
    await conn.sendNotification('exit');
  } catch {
    // already gone
  }
  conn.dispose();
  server.kill();
});

/** Opens `text` with `|` marking the cursor and asks for completions there. */
async function completeAt(uri: string, marked: string): Promise<CompletionItem[]> {
  const offset = marked.indexOf('|');
  const text = marked.replace('|', '');
  const before = text.slice(0, offset).split('\n');
  const position = { line: before.length - 1, character: before[before.length - 1].length };
  await conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'shellscript', version: 1, text } });
  const r = (await conn.sendRequest('textDocument/completion', { textDocument: { uri }, position })) as CompletionItem[] | CompletionList | null;
  return Array.isArray(r) ? r : (r?.items ?? []);
}

test('initialize advertises completion', async () => {
  const init = (await conn.sendRequest('initialize', { processId: process.pid, rootUri: null, capabilities: {} })) as InitializeResult;
  await conn.sendNotification('initialized', {});
  assert.ok(init.capabilities.completionProvider, 'completionProvider');
  assert.equal(init.serverInfo?.name, 'tpu-workbench-language-server');
});

test('flags complete inside LIBTPU_INIT_ARGS, filtered by prefix', async () => {
  const items = await completeAt('file:///w/recipes/a.sh', "export LIBTPU_INIT_ARGS='--xla_tpu_enable_async|'\npython3 -m tpu_trainer.train\n");
  const labels = items.map((i) => i.label);
  assert.ok(labels.includes('--xla_tpu_enable_async_collective_fusion'), labels.join(', '));
  assert.ok(labels.every((l) => l.startsWith('--xla_tpu_enable_async')), labels.join(', '));
  const fusion = items.find((i) => i.label === '--xla_tpu_enable_async_collective_fusion');
  assert.equal(fusion?.insertText, 'xla_tpu_enable_async_collective_fusion=true', 'booleans insert =true');
});

test('no flag completion outside a flags variable', async () => {
  const items = await completeAt('file:///w/recipes/b.sh', 'export OTHER=--xla|\n');
  assert.deepEqual(items, []);
});
