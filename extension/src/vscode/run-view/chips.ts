import { ChipsPoller } from '../../core/chips/chips-poller';
import { ChipIdleWatch, DEFAULT_IDLE_RULE } from '../../core/chips/idle-health';
import type { WorkerChips } from '../../../../protocol/chip-readings';
import type { MetricRecord } from '../../../../protocol/metrics-record';
import type { RunStatus } from '../../../../protocol/run-status';
import type { HostToWebview } from '../../../../protocol/run-view-messages';
import type { RunSource } from './remote';

/** Readings are sent together: one message per worker per read would be many on a 64-worker slice. */
const FLUSH_MS = 250;

export interface ChipsWatchOptions {
  everyMs?: number;
  /** Seconds a chip may idle while training before it gets a Health note. */
  idleNoteSeconds?: number;
  log?: (msg: string) => void;
}

/**
 * The run view's Chips tab while its panel is open: every worker's chips read from libtpu's metrics service over
 * the run's connections (ChipsPoller), sent to the webview in batches, and a Health note for a chip that idles while
 * its trainer says it is training (ChipIdleWatch). The panel owns it and disposes it with itself, so nothing is read
 * while no panel shows the run.
 */
export class ChipsWatch {
  private readonly poller: ChipsPoller;
  private readonly idle: ChipIdleWatch;
  private pending = new Map<number, WorkerChips>();
  private timer: NodeJS.Timeout | undefined;
  /** The latest step each worker's trainer logged; cleared when the run ends (it is no longer training). */
  private readonly steps = new Map<number, number>();
  private running = true;
  private disposed = false;

  constructor(
    source: RunSource,
    private readonly post: (m: HostToWebview) => void,
    opts: ChipsWatchOptions = {},
  ) {
    this.idle = new ChipIdleWatch({ ...DEFAULT_IDLE_RULE, idleSeconds: opts.idleNoteSeconds ?? DEFAULT_IDLE_RULE.idleSeconds });
    this.poller = new ChipsPoller(source.workers, source.conns, (r) => this.onReading(r), { everyMs: opts.everyMs, log: opts.log }).start();
  }

  /** The trainer's records: a worker that logged a step is training (until the run ends). */
  onMetrics(records: readonly MetricRecord[]): void {
    for (const r of records) {
      const w = r.worker ?? 0;
      if (Number.isFinite(r.step) && r.step > (this.steps.get(w) ?? 0)) this.steps.set(w, r.step);
    }
  }

  onStatus(state: RunStatus): void {
    this.running = state === 'starting' || state === 'running';
  }

  dispose(): void {
    this.disposed = true;
    this.poller.stop();
    if (this.timer) clearTimeout(this.timer);
  }

  private onReading(r: WorkerChips): void {
    if (this.disposed) return;
    this.pending.set(r.worker, r);
    this.timer ??= setTimeout(() => this.flush(), FLUSH_MS);
    const step = this.running ? this.steps.get(r.worker) : undefined;
    const findings = this.idle.update(r, step === undefined ? undefined : { step });
    if (findings) this.post({ type: 'health', worker: r.worker, source: 'chips', findings });
  }

  private flush(): void {
    this.timer = undefined;
    const workers = [...this.pending.values()].sort((a, b) => a.worker - b.worker);
    this.pending = new Map();
    if (workers.length && !this.disposed) this.post({ type: 'chips', workers });
  }
}
