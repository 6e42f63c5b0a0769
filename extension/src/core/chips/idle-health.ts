import type { WorkerChips } from '../../../../protocol/chip-readings';
import type { HealthFinding } from '../../../../protocol/run-view-messages';

/**
 * A chip that sits idle while its trainer says it is training is the chip-side twin of a recompiling step: time
 * the TPU is paid for and does nothing (a stalled input pipeline, a host sync, a checkpoint written in the
 * foreground, a straggling peer in a collective). This turns each worker's readings into the same kind of Health
 * note the run view shows for recompilation. How long a chip has been idle is libtpu's own
 * `tensorcore.idle_duration.seconds` where it serves it; else the time its duty cycle has stayed low in our reads.
 */

export interface IdleRule {
  /** A chip idle at least this long while training gets a note. */
  idleSeconds: number;
  /** Duty cycle (percent) below which a chip counts as idle. */
  dutyBelowPct: number;
}

export const DEFAULT_IDLE_RULE: IdleRule = { idleSeconds: 30, dutyBelowPct: 5 };

/** What the trainer last said on a worker: it logged this step, and the run is still going. */
export interface TrainingNow {
  step: number;
}

interface Stretch {
  /** Longest idle stretch seen while training, in seconds. */
  seconds: number;
  /** The step the trainer was at when it was seen. */
  step: number;
}

export class ChipIdleWatch {
  /** `w/c` → when (ms) our reads first saw the chip under the threshold, for libtpus without idle_duration. */
  private readonly lowSince = new Map<string, number>();
  private readonly stretches = new Map<number, Map<number, Stretch>>();

  constructor(private readonly rule: IdleRule = DEFAULT_IDLE_RULE) {}

  /**
   * One reading of a worker; `training`: what its trainer says now (undefined: not training: compiling, finished,
   * or no step logged yet). Returns the worker's chip findings when they changed, else undefined.
   */
  update(r: WorkerChips, training: TrainingNow | undefined): HealthFinding[] | undefined {
    if (r.state !== 'ok') return undefined;
    let changed = false;
    for (const c of r.chips) {
      const key = `${r.worker}/${c.chip}`;
      const low = c.dutyCyclePct < this.rule.dutyBelowPct;
      if (!low) this.lowSince.delete(key);
      else if (!this.lowSince.has(key)) this.lowSince.set(key, r.at);
      if (!low || !training) continue;
      const idle = c.idleSeconds ?? (r.at - this.lowSince.get(key)!) / 1000;
      if (idle < this.rule.idleSeconds) continue;
      let mine = this.stretches.get(r.worker);
      if (!mine) this.stretches.set(r.worker, (mine = new Map()));
      const seen = mine.get(c.chip);
      // Whole seconds: a note that changes only when a stretch grows by a second, not at every read.
      const seconds = Math.floor(idle);
      if (!seen || seconds > seen.seconds) {
        mine.set(c.chip, { seconds, step: training.step });
        changed = true;
      }
    }
    return changed ? this.findings(r.worker) : undefined;
  }

  /** The notes of a worker so far: one per idle stretch length, chips with the same story together. */
  findings(worker: number): HealthFinding[] {
    const mine = [...(this.stretches.get(worker) ?? new Map<number, Stretch>()).entries()].sort((a, b) => a[0] - b[0]);
    if (mine.length === 0) return [];
    const longest = Math.max(...mine.map(([, s]) => s.seconds));
    const chips = mine.map(([c]) => c);
    const steps = [...new Set(mine.map(([, s]) => s.step))].sort((a, b) => a - b);
    return [
      {
        severity: 'warning',
        title: `${chips.length === 1 ? `Chip ${chips[0]}` : `Chips ${chips.join(', ')}`} idle for ${longest} s while training`,
        detail:
          `libtpu's duty cycle stayed under ${this.rule.dutyBelowPct}% (tensorcore.idle_duration ${longest} s) while the trainer was at step ${steps.join(', ')}. ` +
          'Chips wait on the host when the input pipeline stalls, a value is read back to Python, a checkpoint is written in the foreground, or another worker lags behind in a collective: the log around that step says which.',
      },
    ];
  }
}
