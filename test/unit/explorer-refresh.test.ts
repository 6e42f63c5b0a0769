/**
 * What keeps the TPU VMs view and the Runs view true without polling settled VMs: the change note another
 * process leaves when it creates, deletes, starts or stops something (core/change-journal.ts), and the redraw
 * schedule of relative times (core/explorer/tick.ts).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { journaled, readChange, recordChange, watchChanges, type ChangeNote } from '../../extension/src/core/change-journal';
import { formatAge } from '../../extension/src/core/explorer/node-status';
import { nextTickMs } from '../../extension/src/core/explorer/tick';
import { formatDuration } from '../../extension/src/core/run/registry';

describe('change note', () => {
  it('notes a changing call when it is made and when it settles, failed or not; reads pass through', async () => {
    const notes: string[] = [];
    const api = {
      listNodes: async () => ['a'],
      deleteNode: async (name: string) => name,
      stopNode: async () => Promise.reject(new Error('refused')),
      describe: () => 'x',
    };
    const j = journaled(api, (what) => notes.push(what));
    assert.deepEqual(await j.listNodes(), ['a']);
    assert.equal(j.describe(), 'x');
    assert.deepEqual(notes, [], 'reads note nothing');
    assert.equal(await j.deleteNode('vm'), 'vm');
    await assert.rejects(j.stopNode(), /refused/);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(notes, ['deleteNode', 'deleteNode', 'stopNode', 'stopNode']);
  });

  it("another process's note reaches a watcher at once; this process's own notes do not", async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-journal-'));
    try {
      const seen: ChangeNote[] = [];
      const watch = watchChanges(home, (n) => seen.push(n), 50);
      try {
        recordChange(home, 'createNode');
        await new Promise((r) => setTimeout(r, 300));
        assert.equal(seen.length, 0, 'its own change is refreshed by whoever made it');
        const src = path.resolve(__dirname, '../../extension/src/core/change-journal.ts');
        // Not a test process itself: without the runner's marker, which would make it report to this runner.
        const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'NODE_TEST_CONTEXT'));
        execFileSync(process.execPath, ['--import', 'tsx', '-e', `require(${JSON.stringify(src)}).recordChange(${JSON.stringify(home)}, 'deleteNode')`], { env, timeout: 60_000 });
        for (const deadline = Date.now() + 5000; seen.length === 0 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 50));
        assert.equal(seen.length, 1);
        assert.equal(seen[0].what, 'deleteNode');
        assert.notEqual(seen[0].pid, process.pid);
        assert.equal(fs.statSync(path.join(home, 'explorer')).mode & 0o777, 0o700, 'the folder is private');
      } finally {
        watch.close();
      }
      assert.equal(readChange(home)?.what, 'deleteNode');
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  });

  it('a TPW_HOME that cannot be written does not fail the operation', () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tpw-journal-')), 'a-file');
    fs.writeFileSync(file, '');
    assert.doesNotThrow(() => recordChange(file, 'createNode'), 'TPW_HOME is a file: no folder can be made in it');
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  });
});

describe('relative times redraw exactly when their text changes', () => {
  const at = (ageMs: number) => new Date(Date.parse('2026-11-28T12:00:00Z') - ageMs).toISOString();
  const now = new Date('2026-11-28T12:00:00Z');

  it('ages: every second under a minute, then on the minute, the hour and the day', () => {
    assert.equal(nextTickMs({ ages: [21_300] }), 700);
    assert.equal(nextTickMs({ ages: [125_000] }), 55_000);
    assert.equal(nextTickMs({ ages: [2 * 3600_000 + 60_000] }), 3600_000 - 60_000);
    assert.equal(nextTickMs({ ages: [3 * 86_400_000] }), 86_400_000);
    assert.equal(nextTickMs({ ages: [125_000, 21_300] }), 700, 'the soonest change wins');
    assert.equal(nextTickMs({}), undefined, 'nothing relative shown: no redraw');
  });

  it('agrees with formatAge: the text changes at the tick and not before', () => {
    for (const age of [0, 21_300, 59_500, 125_000, 3_540_000, 7_260_000]) {
      const delay = nextTickMs({ ages: [age] })!;
      assert.equal(formatAge(at(age + delay - 1), now), formatAge(at(age), now), `no change before the tick (age ${age})`);
      assert.notEqual(formatAge(at(age + delay), now), formatAge(at(age), now), `a change at the tick (age ${age})`);
    }
  });

  it("agrees with formatDuration for a running run's duration (rounded to the second)", () => {
    for (const d of [0, 1_700, 42_100, 65_000, 3_599_000, 3_700_000]) {
      const delay = nextTickMs({ durations: [d] })!;
      assert.notEqual(formatDuration(d + delay), formatDuration(d), `changes at the tick (duration ${d})`);
      assert.equal(formatDuration(d + delay - 1), formatDuration(d), `not before (duration ${d})`);
    }
  });
});
