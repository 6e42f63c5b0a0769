/**
 * The idle-chip Health note: a chip whose duty cycle stays low for N seconds while its trainer says it is training
 * (it logged a step and the run goes on) gets a warning, as a recompiling step does; idle chips before the first
 * step, after the run, or for a shorter time do not.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ChipReading, WorkerChips } from '../../protocol/chip-readings';
import { ChipIdleWatch } from '../../extension/src/core/chips/idle-health';

function chip(c: number, duty: number, idleSeconds: number | null): ChipReading {
  return { chip: c, dutyCyclePct: duty, hbmUsedBytes: 1, hbmTotalBytes: 2, hbmBandwidthPct: null, idleSeconds, queueSize: null, execMeanUs: null, execP50Us: null, execP90Us: null };
}

const reading = (at: number, chips: ChipReading[], worker = 1): WorkerChips => ({ worker, state: 'ok', at, chips });

test("libtpu's idle duration past the limit while training is a warning naming the chip, the time and the step", () => {
  const watch = new ChipIdleWatch({ idleSeconds: 30, dutyBelowPct: 5 });
  assert.equal(watch.update(reading(0, [chip(0, 90, 0), chip(1, 0, 29)]), { step: 12 }), undefined, '29 s is not yet 30');
  const notes = watch.update(reading(2000, [chip(0, 90, 0), chip(1, 0.5, 31.4)]), { step: 12 });
  assert.deepEqual(notes?.map((n) => [n.severity, n.title]), [['warning', 'Chip 1 idle for 31 s while training']]);
  assert.match(notes![0].detail, /under 5% .* at step 12/);
  assert.equal(watch.update(reading(2500, [chip(0, 90, 0), chip(1, 0, 31.9)]), { step: 12 }), undefined, 'the same second: no new note');
  const longer = watch.update(reading(4000, [chip(0, 1, 40), chip(1, 0, 45)]), { step: 13 });
  assert.deepEqual(longer?.map((n) => n.title), ['Chips 0, 1 idle for 45 s while training']);
  assert.deepEqual(watch.findings(0), [], 'another worker has no note');
});

test('idle chips while not training (before the first step, after the run) or busy chips get no note', () => {
  const watch = new ChipIdleWatch({ idleSeconds: 30, dutyBelowPct: 5 });
  assert.equal(watch.update(reading(0, [chip(0, 0, 500)]), undefined), undefined);
  assert.equal(watch.update(reading(0, [chip(0, 50, 500)]), { step: 3 }), undefined, 'a chip at 50% is not idle, whatever idle_duration says');
  assert.equal(watch.update({ worker: 1, state: 'timeout', at: 0, chips: [] }, { step: 3 }), undefined);
  assert.deepEqual(watch.findings(1), []);
});

test('without idle_duration (an older libtpu), the time the duty cycle stayed low in our reads counts', () => {
  const watch = new ChipIdleWatch({ idleSeconds: 30, dutyBelowPct: 5 });
  assert.equal(watch.update(reading(1_000, [chip(0, 2, null)]), { step: 5 }), undefined);
  assert.equal(watch.update(reading(20_000, [chip(0, 2, null)]), { step: 5 }), undefined);
  assert.equal(watch.update(reading(25_000, [chip(0, 60, null)]), { step: 6 }), undefined, 'busy again: the stretch restarts');
  assert.equal(watch.update(reading(40_000, [chip(0, 1, null)]), { step: 6 }), undefined);
  assert.deepEqual(watch.update(reading(71_000, [chip(0, 1, null)]), { step: 6 })?.map((n) => n.title), ['Chip 0 idle for 31 s while training']);
});
