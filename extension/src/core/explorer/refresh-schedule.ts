/**
 * When the explorer refreshes on its own. Two reasons, two schedules:
 * - something is transitional (CREATING, STOPPING, WAITING_FOR_RESOURCES…): poll, quickly at first, then
 *   slower while nothing changes (a queued resource can wait for hours; 2 s polls for hours would waste quota);
 *   back to quick as soon as a state changes.
 * - a zone failed with a transient error (network, 503): retry with exponential backoff, so a flaky link
 *   never freezes the tree and a dead one is not hammered.
 * Pure: the caller owns the timer.
 */
export interface RefreshScheduleOptions {
  /** First poll delay while something is transitional (default 2 s). */
  pollStartMs?: number;
  /** Longest poll delay (default 30 s). */
  pollMaxMs?: number;
  /** First retry delay after a failed zone (default 5 s). */
  retryStartMs?: number;
  /** Longest retry delay (default 120 s). */
  retryMaxMs?: number;
}

export interface RefreshObservation {
  /** A fingerprint of every shown state (e.g. "vm-1=CREATING;qr-2=WAITING_FOR_RESOURCES"). */
  fingerprint: string;
  /** Anything shown is in a state it leaves on its own. */
  transitional: boolean;
  /** Some zone failed with an error worth retrying. */
  retryableFailure: boolean;
}

export class RefreshSchedule {
  private pollDelay: number;
  private retryDelay: number;
  private lastFingerprint: string | undefined;
  private readonly o: Required<RefreshScheduleOptions>;

  constructor(opts: RefreshScheduleOptions = {}) {
    this.o = { pollStartMs: 2000, pollMaxMs: 30_000, retryStartMs: 5000, retryMaxMs: 120_000, ...opts };
    this.pollDelay = this.o.pollStartMs;
    this.retryDelay = this.o.retryStartMs;
  }

  /**
   * Records one refresh's outcome and returns the delay until the next automatic one, or undefined when
   * nothing needs watching (everything settled and every zone answered).
   */
  next(obs: RefreshObservation): number | undefined {
    const changed = obs.fingerprint !== this.lastFingerprint;
    this.lastFingerprint = obs.fingerprint;
    let poll: number | undefined;
    if (obs.transitional) {
      // A change means things are moving: look again soon. No change: wait a little longer each time.
      if (changed) this.pollDelay = this.o.pollStartMs;
      poll = this.pollDelay;
      this.pollDelay = Math.min(this.o.pollMaxMs, Math.round(this.pollDelay * 1.5));
    } else {
      this.pollDelay = this.o.pollStartMs;
    }
    let retry: number | undefined;
    if (obs.retryableFailure) {
      retry = this.retryDelay;
      this.retryDelay = Math.min(this.o.retryMaxMs, this.retryDelay * 2);
    } else {
      this.retryDelay = this.o.retryStartMs;
    }
    if (poll === undefined) return retry;
    if (retry === undefined) return poll;
    return Math.min(poll, retry);
  }

  /** Forget the backoff (the user pressed Refresh, or the settings changed). */
  reset(): void {
    this.pollDelay = this.o.pollStartMs;
    this.retryDelay = this.o.retryStartMs;
    this.lastFingerprint = undefined;
  }
}
