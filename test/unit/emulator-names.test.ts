/**
 * Names as Google scopes them, through the real CLI against the emulator: an instance name is unique per zone
 * and project (the same name in two zones is two VMs, each with a sandbox of its own, and deleting one leaves
 * the other running and its files intact), a Cloud TPU node id likewise, and a Cloud TPU node `ce-x` is not
 * Compute Engine instance `x` (before, both had the sandbox and SSH server "ce-x", and one's end killed the
 * other's worker while the API still said RUNNING). And two local folders of the same name running at once on
 * one VM each get their own tree on the workers (before, both synced into ~/.tpw/workspaces/<name>).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { openBackend } from '../../extension/src/core/backend';
import { runRecipe } from '../../extension/src/core/run/engine';
import { ConnectionManager, hostKeyOptionsFor } from '../../extension/src/core/ssh/connection';
import { findNode } from '../../extension/src/core/slices/find';
import { emulatorPodFixture } from '../helpers/cli';
import { testAddressPrefix } from '../helpers/loopback';

const pod = emulatorPodFixture('names', testAddressPrefix(236), { before, after }, { pod: false });
const tpw = (...argv: string[]) => pod.tpw(...argv);

/** Runs `script` on the VM `vm` of `zone` with `tpw run`; its output lines without the `[w0] ` prefix. */
async function onVm(vm: string, zone: string, script: string): Promise<string[]> {
  const recipe = pod.writeRecipe(`r-${Math.random().toString(36).slice(2)}.sh`, `bash -c ${JSON.stringify(script)}\n`);
  const r = await tpw('run', recipe, '--vm', vm, '--zone', zone);
  assert.equal(r.code, 0, `${vm} in ${zone}: ${r.err.join('\n')}`);
  return r.out.filter((l) => l.startsWith('[w0] ')).map((l) => l.slice(5));
}

test('the same instance name in two zones is two VMs: own sandboxes, and deleting one leaves the other whole', { timeout: 300_000 }, async () => {
  for (const zone of ['us-east5-b', 'us-central2-b']) {
    const c = await tpw('vm', 'create', 'twin', '--type', 'tpu7x-8', '--zone', zone);
    assert.equal(c.code, 0, `${zone}: ${c.err.join('\n')}`);
  }
  assert.deepEqual(await onVm('twin', 'us-east5-b', 'echo east > ~/mine.txt; cat ~/mine.txt'), ['east']);
  assert.deepEqual(await onVm('twin', 'us-central2-b', 'cat ~/mine.txt 2>/dev/null || echo none'), ['none'], 'the second VM has a home of its own');
  const d = await tpw('vm', 'delete', 'twin', '--zone', 'us-central2-b');
  assert.equal(d.code, 0, d.err.join('\n'));
  const l = await tpw('vm', 'list');
  assert.match(l.out.join('\n'), /twin\s+us-east5-b\s+tpu7x-8\s+READY/);
  assert.doesNotMatch(l.out.join('\n'), /twin\s+us-central2-b/);
  assert.deepEqual(await onVm('twin', 'us-east5-b', 'cat ~/mine.txt'), ['east'], "the first VM's worker still answers, its files intact");
});

test('a symlink leading out of the workspace is named when the sync leaves it out, not dropped without a word', { timeout: 120_000 }, async () => {
  const ws = pod.ws;
  fs.symlinkSync('/etc/hostname', path.join(ws, 'outside-link'));
  try {
    const recipe = pod.writeRecipe('hi.sh', 'echo hi\n');
    const r = await tpw('run', recipe, '--vm', 'twin', '--zone', 'us-east5-b');
    assert.equal(r.code, 0, r.err.join('\n'));
    assert.ok(r.err.some((l) => l.includes(`Not synced from ${ws}: 1 path that leads outside it (symlinks) or is not a regular file: outside-link.`)), r.err.join('\n'));
  } finally {
    fs.rmSync(path.join(ws, 'outside-link'));
  }
});

test('a Cloud TPU node id is unique per zone too, and node "ce-x" is not instance "x"', { timeout: 300_000 }, async () => {
  for (const zone of ['us-central2-b', 'europe-west4-a']) {
    const c = await tpw('vm', 'create', 'pair', '--type', 'v5litepod-8', '--zone', zone);
    assert.equal(c.code, 0, `${zone}: ${c.err.join('\n')}`);
  }
  const x = await tpw('vm', 'create', 'x', '--type', 'tpu7x-8', '--zone', 'us-east5-b');
  assert.equal(x.code, 0, x.err.join('\n'));
  assert.deepEqual(await onVm('x', 'us-east5-b', 'echo compute > ~/who.txt; cat ~/who.txt'), ['compute']);
  const ce = await tpw('vm', 'create', 'ce-x', '--type', 'v5litepod-8', '--zone', 'us-east5-b');
  assert.equal(ce.code, 0, ce.err.join('\n'));
  assert.deepEqual(await onVm('ce-x', 'us-east5-b', 'cat ~/who.txt 2>/dev/null || echo none'), ['none']);
  assert.equal((await tpw('vm', 'delete', 'ce-x', '--zone', 'us-east5-b')).code, 0);
  assert.deepEqual(await onVm('x', 'us-east5-b', 'cat ~/who.txt'), ['compute'], 'instance x lives on after node ce-x is gone');
  assert.deepEqual(await onVm('pair', 'europe-west4-a', 'echo alive'), ['alive']);
});

test('two folders of the same name run at once on one VM without touching each other', { timeout: 300_000 }, async () => {
  const c = await tpw('vm', 'create', 'shared', '--type', 'v5litepod-8', '--zone', 'us-central2-b');
  assert.equal(c.code, 0, c.err.join('\n'));
  const backend = await openBackend({ useEmulator: true });
  const conns = new ConnectionManager(hostKeyOptionsFor(backend.kind, false));
  try {
    const { node } = await findNode(backend, 'shared');
    const run = (who: string) => {
      const root = path.join(fs.mkdtempSync(path.join(os.tmpdir(), `tpw-names-${who}-`)), 'proj');
      fs.mkdirSync(root);
      fs.writeFileSync(path.join(root, 'data.txt'), `${who}\n`);
      // Reads its file twice, a second apart: the other run's sync lands in between if they share a tree.
      fs.writeFileSync(path.join(root, 'show.sh'), 'cat data.txt; sleep 2; cat data.txt\n');
      fs.writeFileSync(path.join(root, 'go.sh'), 'bash show.sh\n');
      const lines: string[] = [];
      return runRecipe({ backend, node, recipePath: path.join(root, 'go.sh'), workspaceRoot: root, conns, listener: { onLine: (_w, _s, l) => lines.push(l) } }).then((r) => {
        fs.rmSync(path.dirname(root), { recursive: true, force: true });
        return { ok: r.ok, lines };
      });
    };
    const [a, b] = await Promise.all([run('alpha'), Promise.resolve().then(() => new Promise((r) => setTimeout(r, 500))).then(() => run('beta'))]);
    assert.deepEqual([a.ok, a.lines], [true, ['alpha', 'alpha']]);
    assert.deepEqual([b.ok, b.lines], [true, ['beta', 'beta']]);
  } finally {
    conns.dispose();
    await backend.close();
  }
});
