/**
 * One run status vocabulary (protocol/run-status.ts): the run view's header says what the registry records for
 * the same run — which the Runs view and `tpw runs` show — so a preempted run reads "preempted" everywhere, not
 * "failed" in its view. The worker chips' statuses are of the same vocabulary.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { RUN_STATUSES } from '../../protocol/run-status';
import { loadRun, saveRun, type RunRecord } from '../../extension/src/core/run/registry';
import { endedByStop } from '../../extension/src/core/run/detached';
import { markStopping, recordResult } from '../../extension/src/core/run/session';
import type { RunResult, WorkerResult } from '../../extension/src/core/run/types';
import { headerStatus, workerStatus } from '../../extension/src/vscode/run-view/status';

const worker = (index: number, w: Partial<WorkerResult> = {}): WorkerResult => ({ index, host: '127.0.0.1', exitCode: 0, stopped: false, ...w });
const result = (r: Partial<RunResult>): RunResult => ({ runId: 'r', workers: [worker(0), worker(1)], durationMs: 1000, cancelled: false, ok: true, ...r });

const ENDINGS: [string, RunResult, string][] = [
  ['a run that succeeded', result({}), 'succeeded'],
  ['a run with a failed worker', result({ ok: false, workers: [worker(0, { exitCode: 3 }), worker(1, { exitCode: null, stopped: true })], firstFailed: 0 }), 'failed'],
  ['a cancelled run', result({ ok: false, cancelled: true, workers: [worker(0, { exitCode: null, stopped: true }), worker(1, { exitCode: null, stopped: true })] }), 'cancelled'],
  ['a preempted run', result({ ok: false, preempted: true, preemptedReason: 'the VM went PREEMPTED', workers: [worker(0, { exitCode: null }), worker(1, { exitCode: 143 })] }), 'preempted'],
];

function recordOf(runId: string): RunRecord {
  return { runId, node: 'projects/p/locations/z/nodes/vm', vm: 'vm', recipe: 'recipes/tiny.sh', workspaceRoot: '/w', extraOverrides: [], workers: [{ index: 0, host: '127.0.0.1', port: 22 }, { index: 1, host: '127.0.0.1', port: 23 }], startedAt: new Date().toISOString(), status: 'running' };
}

describe('run status: one vocabulary', () => {
  for (const [what, r, expected] of ENDINGS) {
    it(`${what} reads "${expected}" in its view and in the registry`, () => {
      const home = mkdtempSync(path.join(tmpdir(), 'tpw-status-'));
      const runId = `run-${what.replace(/\W+/g, '-')}`;
      saveRun(recordOf(runId), home);
      recordResult(runId, { ...r, runId }, home);
      const recorded = loadRun(runId, home).status;
      assert.equal(recorded, expected, 'the registry (Runs view, tpw runs)');
      assert.equal(headerStatus(r), expected, 'the run view header, live');
      // Reopened later ("Open Run View" on the Runs view): the recorded verdict stands.
      assert.equal(headerStatus(result({ ok: false }), loadRun(runId, home)), expected, 'the run view header, reopened');
    });
  }

  it('a watch that stopped while the run goes on leaves the header at running, as the registry does', () => {
    assert.equal(headerStatus(result({ ok: false, detached: true, workers: [worker(0, { exitCode: null })] })), 'running');
  });

  it('a recorded status the view cannot improve on is shown as recorded', () => {
    for (const status of RUN_STATUSES.filter((s) => s !== 'starting' && s !== 'running' && s !== 'stopping')) {
      assert.equal(headerStatus(result({}), { ...recordOf('x'), status }), status);
    }
  });

  it('a worker signalled by a stop it had already failed before reads failed, not stopped (endedByStop)', () => {
    for (const end of [{ exitCode: null }, { exitCode: 130 }, { exitCode: 143 }, { exitCode: 137 }, { exitCode: 0 }, { exitCode: null, signal: 'KILL' }]) {
      assert.equal(endedByStop(end), true, JSON.stringify(end));
    }
    for (const end of [{ exitCode: 1 }, { exitCode: 2 }, { exitCode: 75 }, { exitCode: null, error: 'ssh: connection refused' }]) {
      assert.equal(endedByStop(end), false, JSON.stringify(end));
    }
  });

  it('a run someone is stopping reads "stopping" in the registry at once, and its end replaces it', () => {
    const home = mkdtempSync(path.join(tmpdir(), 'tpw-status-'));
    saveRun(recordOf('stopping-run'), home);
    markStopping('stopping-run', home);
    assert.equal(loadRun('stopping-run', home).status, 'stopping');
    assert.ok(RUN_STATUSES.includes('stopping'));
    recordResult('stopping-run', { ...result({ ok: false, cancelled: true }), runId: 'stopping-run' }, home);
    assert.equal(loadRun('stopping-run', home).status, 'cancelled');
    markStopping('stopping-run', home);
    assert.equal(loadRun('stopping-run', home).status, 'cancelled', 'a run that ended is left as it ended');
  });

  it('worker chips: exited, failed, stopped', () => {
    assert.equal(workerStatus(worker(0)), 'exited');
    assert.equal(workerStatus(worker(0, { exitCode: 1 })), 'failed');
    assert.equal(workerStatus(worker(0, { exitCode: null, error: 'ssh: connection refused' })), 'failed');
    assert.equal(workerStatus(worker(0, { exitCode: null, stopped: true })), 'stopped');
  });
});
