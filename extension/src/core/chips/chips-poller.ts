import type { WorkerChips, WorkerChipsState } from '../../../../protocol/chip-readings';
import { LIBTPU_METRICS_PORT } from '../../../../protocol/tpu-metric-service';
import { describeError } from '../errors';
import { targetLabel, type ConnectionManager } from '../ssh/connection';
import type { WorkerTarget } from '../ssh/types';
import { GrpcCallError, GrpcStreamSession } from './grpc-over-stream';
import { BadReplyError, readChips } from './libtpu-reader';

/**
 * Reads every worker's chips from its libtpu metrics service, each worker on its own loop so that one that is down,
 * slow or answering garbage delays nobody else. Each worker's service is reached through a `direct-tcpip` channel
 * to its localhost:8431 on the run's shared SSH connection (the one ConnectionManager), kept open between reads
 * with one HTTP/2 session on it; nothing is started on the worker and no port is opened here.
 */

export interface ChipsPollerOptions {
  /** Time between the end of one read of a worker and the start of the next (default 2 s). */
  everyMs?: number;
  /** How long one read may take before the worker counts as not answering (default 4 s). */
  deadlineMs?: number;
  /** The port on the worker (default libtpu's 8431). */
  port?: number;
  log?: (msg: string) => void;
}

export const CHIPS_POLL_MS = 2000;
const DEADLINE_MS = 4000;

interface WorkerLoop {
  target: WorkerTarget;
  session?: GrpcStreamSession;
  timer?: NodeJS.Timeout;
  last?: WorkerChips;
}

export class ChipsPoller {
  private readonly loops: WorkerLoop[];
  private stopped = false;
  private readonly everyMs: number;
  private readonly deadlineMs: number;
  private readonly port: number;

  constructor(
    workers: readonly WorkerTarget[],
    private readonly conns: ConnectionManager,
    private readonly onReading: (w: WorkerChips) => void,
    private readonly opts: ChipsPollerOptions = {},
  ) {
    this.loops = workers.map((target) => ({ target }));
    this.everyMs = opts.everyMs ?? CHIPS_POLL_MS;
    this.deadlineMs = opts.deadlineMs ?? DEADLINE_MS;
    this.port = opts.port ?? LIBTPU_METRICS_PORT;
  }

  /** Starts every worker's loop (the first reads at once). */
  start(): this {
    for (const l of this.loops) void this.tick(l);
    return this;
  }

  /** Every worker's latest reading, in worker order (those not read yet are left out). */
  get latest(): WorkerChips[] {
    return this.loops.flatMap((l) => (l.last ? [l.last] : []));
  }

  /** One read of every worker, together: what `tpw top --once` prints. */
  async readOnce(): Promise<WorkerChips[]> {
    return Promise.all(this.loops.map((l) => this.read(l)));
  }

  /** No more reads; closes the channels to the workers' services. */
  stop(): void {
    this.stopped = true;
    for (const l of this.loops) {
      if (l.timer) clearTimeout(l.timer);
      l.session?.close();
      l.session = undefined;
    }
  }

  private async tick(l: WorkerLoop): Promise<void> {
    if (this.stopped) return;
    const reading = await this.read(l);
    if (this.stopped) return;
    this.onReading(reading);
    l.timer = setTimeout(() => void this.tick(l), this.everyMs);
  }

  private async read(l: WorkerLoop): Promise<WorkerChips> {
    const worker = l.target.index;
    const at = Date.now();
    const failed = (state: WorkerChipsState, detail: string): WorkerChips => {
      // The session is suspect after any failure: the next read opens a fresh channel.
      l.session?.close();
      l.session = undefined;
      if (l.last?.state !== state) this.opts.log?.(`chips: w${worker}: ${detail}`);
      return (l.last = { worker, state, at, chips: [], detail });
    };
    let conn;
    try {
      conn = await this.conns.get(l.target);
    } catch (e) {
      return failed('unreachable', describeError(e));
    }
    if (!l.session || l.session.isClosed) {
      try {
        const channel = await conn.forwardOut('localhost', this.port);
        if (this.stopped) {
          channel.destroy();
          return { worker, state: 'unreachable', at, chips: [], detail: 'stopped' };
        }
        l.session = GrpcStreamSession.open(channel, `localhost:${this.port}`);
      } catch (e) {
        return failed('no-libtpu', `${targetLabel(l.target)}: nothing listens on localhost:${this.port}, where libtpu serves its metrics while a program has the TPU (${describeError(e)})`);
      }
    }
    try {
      const chips = await readChips(l.session, this.deadlineMs);
      return (l.last = { worker, state: 'ok', at, chips });
    } catch (e) {
      if (e instanceof GrpcCallError && e.failure === 'timeout') return failed('timeout', `libtpu's metrics service on w${worker} gave ${e.message}`);
      if (e instanceof GrpcCallError && e.failure === 'closed' && !conn.usable) return failed('unreachable', describeError(e));
      if (e instanceof BadReplyError || e instanceof GrpcCallError) return failed('bad-reply', `libtpu's metrics service on w${worker}: ${e.message}`);
      return failed('bad-reply', describeError(e));
    }
  }
}
