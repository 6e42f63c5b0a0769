/** The run view's pure parts, in Node: ANSI parsing, the log store's filters and search, step-line parsing, run folders. */
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { findCaptures, outputDir, readMetricsJsonl } from '../../extension/src/vscode/run-view/local';
import { parseAnsi, stripAnsi } from '../../webview/src/logs/ansi';
import { Level, levelOf, LogStore } from '../../webview/src/logs/store';
import { WrapLayout } from '../../webview/src/logs/wrap';
import { parseStepLine } from '../../webview/src/stepline';

describe('ANSI', () => {
  it('turns SGR colours into styled segments and drops other escapes', () => {
    const segs = parseAnsi('a\x1b[1;31mred\x1b[0m b\x1b[38;5;196mx\x1b[39m\x1b[2K');
    assert.deepEqual(segs.map((s) => s.text), ['a', 'red', ' b', 'x']);
    assert.equal(segs[1].fg, 'var(--vscode-terminal-ansiRed)');
    assert.equal(segs[1].bold, true);
    assert.equal(segs[2].fg, undefined);
    assert.equal(segs[3].fg, 'rgb(255,0,0)');
    assert.equal(stripAnsi('\x1b]0;title\x07plain \x1b[32mgreen\x1b[0m'), 'plain green');
  });
});

describe('log store', () => {
  it('classifies levels', () => {
    assert.equal(levelOf('Traceback (most recent call last):'), Level.Error);
    assert.equal(levelOf('RuntimeError: bad'), Level.Error);
    assert.equal(levelOf('E1122 ERROR: x'), Level.Error);
    assert.equal(levelOf('WARNING: slow'), Level.Warn);
    assert.equal(levelOf('step 1 loss 2.0'), Level.Info);
  });

  it('filters by worker and level incrementally, and searches the view', () => {
    const s = new LogStore();
    s.append(0, ['a0', 'WARNING w0', 'b0']);
    s.append(1, ['a1', 'ValueError: w1']);
    assert.equal(s.viewLength, 5);
    s.hiddenWorkers.add(0);
    s.refilter();
    assert.deepEqual(s.viewText().split('\n'), ['[w1] a1', '[w1] ValueError: w1']);
    s.append(0, ['hidden']);
    s.append(1, ['c1']);
    assert.equal(s.viewLength, 3, 'appends respect the filter');
    s.hiddenWorkers.clear();
    s.minLevel = Level.Warn;
    s.refilter();
    assert.deepEqual(s.viewText().split('\n'), ['[w0] WARNING w0', '[w1] ValueError: w1']);
    assert.equal(s.firstError(), 1);
    s.minLevel = Level.Info;
    s.refilter();
    assert.deepEqual([...s.search(/^[ab]\d$/)], [0, 2, 3]);
  });

  it('holds a million lines', () => {
    const s = new LogStore();
    const lines = Array.from({ length: 1000 }, (_, i) => `line ${i}`);
    for (let k = 0; k < 1000; k++) s.append(k % 64, lines);
    assert.equal(s.length, 1_000_000);
    assert.equal(s.viewLength, 1_000_000);
    assert.equal(s.search(/line 999$/).length, 1000);
  });
});

describe('metrics from step lines and run folders', () => {
  it('parses the trainer\'s step line', () => {
    assert.deepEqual(parseStepLine('step 10 loss 5.3177 lr 3.000e-04 grad_norm 2.155 step_time_s 0.0805 tokens_per_s 12727 mfu - mem 924.5MiB', 3), {
      step: 10, worker: 3, loss: 5.3177, lr: 3e-4, grad_norm: 2.155, step_time_s: 0.0805, tokens_per_s: 12727, mfu: null, mem_bytes: 924.5 * 2 ** 20,
    });
    assert.equal(parseStepLine('step 10 done', 0), undefined);
    assert.equal(parseStepLine('checkpoint step 12 -> /x', 0), undefined);
  });

  it('finds captures and metrics in a run folder, skipping a torn last line', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'tpw-runfolder-'));
    mkdirSync(path.join(dir, 'output'), { recursive: true });
    mkdirSync(path.join(dir, 'profile/plugins/profile/2026_01_01'), { recursive: true });
    writeFileSync(path.join(dir, 'profile/plugins/profile/2026_01_01/host.xplane.pb'), 'x');
    // The trainer's native path (torch.profiler) writes a Chrome trace per rank beside where XLA writes an XSpace.
    writeFileSync(path.join(dir, 'profile/plugins/profile/2026_01_01/vm_1.pt.trace.json'), '{}');
    writeFileSync(path.join(dir, 'profile/plugins/profile/2026_01_01/vm_1.trace.json'), '{}');
    writeFileSync(path.join(dir, 'output/metrics.jsonl'), '{"step":1,"loss":2}\n{"step":2,"lo');
    assert.equal(outputDir(dir), path.join(dir, 'output'));
    assert.deepEqual(readMetricsJsonl(path.join(dir, 'output/metrics.jsonl')), [{ step: 1, loss: 2 }]);
    assert.deepEqual(findCaptures(dir).map((c) => [c.run, c.host, c.bytes]), [['2026_01_01', 'host', 1], ['2026_01_01', 'vm_1', 2]]);
  });
});

describe('log wrap layout', () => {
  const lengths = [10, 250, 0, 81, 80];
  const lay = (cols: number, rows = lengths.length) => {
    const l = new WrapLayout();
    l.setCols(cols);
    l.update(rows, (r) => lengths[r]);
    return l;
  };

  it('one screen line per row when not wrapping, the lines a row needs when it is', () => {
    const off = lay(0);
    assert.equal(off.wrapping, false);
    assert.deepEqual([0, 1, 2, 3, 4].map((r) => off.startOf(r)), [0, 1, 2, 3, 4]);
    assert.equal(off.total, 5);
    const on = lay(80);
    assert.deepEqual([0, 1, 2, 3, 4].map((r) => on.linesOfRow(r)), [1, 4, 1, 2, 1], 'ceil(length / 80), an empty row still one line');
    assert.equal(on.total, 9);
  });

  it('finds the row a screen line is in, including a line inside a wrapped row', () => {
    const l = lay(80);
    assert.deepEqual([0, 1, 2, 4, 5, 6, 7, 8, 100].map((line) => l.rowAt(line)), [0, 1, 1, 1, 2, 3, 3, 4, 4]);
    assert.equal(new WrapLayout().rowAt(3), 0, 'no rows');
  });

  it('grows with appended rows and starts again after a filter or a width change', () => {
    const l = lay(80, 2);
    assert.equal(l.total, 5);
    l.update(5, (r) => lengths[r]);
    assert.equal(l.total, 9, 'appended rows added on');
    l.update(3, (r) => [300, 300, 300][r]);
    assert.equal(l.total, 12, 'fewer rows (a filter): laid out again');
    l.setCols(150);
    l.update(3, (r) => [300, 300, 300][r]);
    assert.equal(l.total, 6, 'a new width: laid out again');
  });

  it('a million rows in one pass', () => {
    const l = new WrapLayout();
    l.setCols(100);
    l.update(1_000_000, (r) => (r % 7) * 60);
    assert.equal(l.rowAt(l.startOf(765_432)), 765_432);
    assert.equal(l.linesOfRow(6), 4);
  });
});
