/**
 * SkyPilot task YAML over JSON-RPC: field and accelerator completion, hover, and diagnostics placed on the field
 * at fault. The diagnostics are `tpw launch`'s own check (protocol/task-yaml-check.ts), held to SkyPilot's
 * verdicts in test/unit/task-yaml-verdicts.test.ts; the accelerator names are the emulator catalog's.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';
import type { MarkupContent } from 'vscode-languageserver-protocol';
import { acceleratorTypeNames } from '../../emulator/src/catalog';
import { labels, LspClient } from './harness';
import { INIT, makeWorkspace } from './fixture';

let root: string;
let c: LspClient;
const task = () => pathToFileURL(path.join(root, 'sky-task.yaml')).toString();

before(async () => {
  root = makeWorkspace();
  c = await LspClient.start(root, INIT);
});
after(async () => {
  await c.stop();
  fs.rmSync(root, { recursive: true, force: true });
});

test('top-level and resources fields complete; unsupported ones are not offered', async () => {
  const top = labels(await c.completeAt(task(), 'run: echo\n|', 'yaml'));
  for (const k of ['name', 'resources', 'num_nodes', 'workdir', 'file_mounts', 'setup', 'envs', 'secrets']) assert.ok(top.includes(k), top.join(', '));
  assert.ok(!top.includes('service') && !top.includes('event_callback'));
  const res = labels(await c.completeAt(task(), 'resources:\n  |\nrun: echo\n', 'yaml'));
  for (const k of ['accelerators', 'accelerator_args', 'use_spot', 'zone', 'region', 'labels']) assert.ok(res.includes(k), res.join(', '));
  assert.ok(!res.includes('disk_size') && !res.includes('cpus'));
  const args = labels(await c.completeAt(task(), 'resources:\n  accelerator_args:\n    |\nrun: echo\n', 'yaml'));
  assert.deepEqual(args, ['runtime_version', 'tpu_vm']);
});

test('accelerators complete with the catalog the emulator (and its create wizard) offers', async () => {
  const items = labels(await c.completeAt(task(), 'resources:\n  accelerators: tpu-v|\nrun: echo\n', 'yaml'));
  assert.deepEqual(items, acceleratorTypeNames().map((t) => `tpu-${t}`));
});

test('hover says what a field does, or why tpw refuses it', async () => {
  await c.open(task(), 'resources:\n  accelerators: tpu-v6e-8\n  disk_size: 100\nsetup: pip list\nrun: echo\n', 'yaml');
  const setup = await c.hover(task(), { line: 3, character: 2 });
  assert.match((setup?.contents as MarkupContent).value, /once per VM, on every host/);
  const disk = await c.hover(task(), { line: 2, character: 4 });
  assert.match((disk?.contents as MarkupContent).value, /Not supported by tpw launch.*boot disk has a fixed size/);
  await c.open(task(), 'resources:\n  accelerators: tpu-v6e-8\nnum_nodes: 2\nrun: echo\n', 'yaml');
  const nodes = await c.hover(task(), { line: 2, character: 3 });
  assert.match((nodes?.contents as MarkupContent).value, /multislice group of N slices/);
});

test('diagnostics: invalid fields are errors, unsupported ones warnings, each on its key', async () => {
  const text = 'resources:\n  accelerators: tpu-v6e-8\n  chips: 8\n  disk_size: 100\nenvs:\n  1BAD: x\nrun: echo\n';
  await c.open(task(), text, 'yaml');
  const diags = await c.diagnostics(task());
  const byCode = diags.map((d) => [d.code, d.range.start.line, d.range.start.character, d.severity]);
  assert.deepEqual(byCode.sort(), [
    ['task-yaml-invalid', 2, 2, 1],
    ['task-yaml-invalid', 5, 2, 1],
    ['task-yaml-unsupported', 3, 2, 2],
  ]);
  assert.match(diags.find((d) => d.range.start.line === 2)?.message ?? '', /resources\.chips is not a field of SkyPilot's resources/);
  await c.open(task(), 'resources:\n  accelerators: tpu-v6e-8\nrun: echo\n', 'yaml');
  assert.deepEqual(await c.diagnostics(task()), []);
  // num_nodes > 1 is a multislice group (SkyPilot accepts it too); 0 is invalid for both.
  await c.open(task(), 'resources:\n  accelerators: tpu-v6e-8\nnum_nodes: 2\nrun: echo\n', 'yaml');
  assert.deepEqual(await c.diagnostics(task()), []);
  await c.open(task(), 'resources:\n  accelerators: tpu-v6e-8\nnum_nodes: 0\nrun: echo\n', 'yaml');
  assert.deepEqual((await c.diagnostics(task())).map((d) => [d.code, d.range.start.line, d.message]), [['task-yaml-invalid', 2, 'num_nodes must be a positive integer (got 0).']]);
  // What the file does not say (no accelerators at all) is for `tpw launch` to refuse, not a warning here.
  await c.open(task(), 'envs:\n  A: b\nrun: echo\n', 'yaml');
  assert.deepEqual(await c.diagnostics(task()), []);
});

test("what a TPU VM will not have (SkyPilot's conda, its gcpuser home) is a warning on the field that expects it", async () => {
  const text = 'resources:\n  accelerators: tpu-v6e-8\nenvs:\n  CKPT: /home/gcpuser/ckpt\nsetup: |\n  conda activate flax\nrun: echo\n';
  await c.open(task(), text, 'yaml');
  const diags = await c.diagnostics(task());
  assert.deepEqual(diags.map((d) => [d.code, d.range.start.line, d.severity]).sort(), [
    ['task-yaml-tpu-vm', 3, 2],
    ['task-yaml-tpu-vm', 4, 2],
  ]);
  assert.match(diags.find((d) => d.range.start.line === 4)?.message ?? '', /^setup runs `conda activate flax`, but a TPU VM has no conda/);
});

test('a YAML that is not a task gets nothing from these features', async () => {
  const other = pathToFileURL(path.join(root, 'workflow.yaml')).toString();
  await c.open(other, 'jobs:\n  build:\n    steps:\n      - run: echo\n', 'yaml');
  assert.deepEqual(await c.diagnostics(other), []);
});
