/**
 * When relative times on screen ("READY · 21s", a running run's "1m05s") next change their text, so the views
 * redraw from what they already have exactly then: every second while a time is under a minute (or, for a
 * duration, under an hour), on the minute, hour or day after that. Pure: the caller owns the timer.
 */

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** The text step of `formatAge` (core/explorer/node-status.ts) at this age: 1s, 1m, 1h, 1d. */
function ageStep(ageMs: number): number {
  return ageMs < MINUTE ? SECOND : ageMs < HOUR ? MINUTE : ageMs < DAY ? HOUR : DAY;
}

/** The text step of `formatDuration` (core/run/registry.ts): seconds below an hour, then minutes. */
function durationStep(ms: number): number {
  return ms < HOUR ? SECOND : MINUTE;
}

export interface TickInput {
  /** Ages shown with formatAge, in ms. */
  ages?: readonly number[];
  /** Running durations shown with formatDuration, in ms. */
  durations?: readonly number[];
}

/** Milliseconds until the first shown text changes (at least 250 ms), or undefined when nothing relative is shown. */
export function nextTickMs(input: TickInput): number | undefined {
  let next: number | undefined;
  const take = (ms: number, step: number): void => {
    const left = step - (Math.max(0, ms) % step);
    next = next === undefined ? left : Math.min(next, left);
  };
  for (const a of input.ages ?? []) take(a, ageStep(a));
  // formatDuration rounds to the nearest second: its text changes half a second before each whole one.
  for (const d of input.durations ?? []) take(d + 500, durationStep(d));
  return next === undefined ? undefined : Math.max(250, next);
}
