import { ChipsPoller, CHIPS_POLL_MS } from '../core/chips/chips-poller';
import { chipsTable } from '../core/chips/chips-table';
import { loadRun, resolveRunId, workersOfRecord } from '../core/run/engine';
import { openCliBackend } from './backend-from-args';
import { connectionsFor } from './connections';
import { requireArg, UsageError, type CommandContext } from './context';

/** Home the cursor and clear the screen (VT100), so a refresh draws over the previous table. */
const CLEAR = '\x1b[H\x1b[2J';

/**
 * `tpw top RUN`: every worker's TPU chips, read from libtpu's metrics service on each worker through the run's SSH
 * connections (the Chips tab of the run view, in a terminal). Redrawn in place on a terminal, printed table after
 * table otherwise; `--once` prints one table and exits, `--json` the readings as JSON (for scripts).
 */
export async function topCommand(ctx: CommandContext): Promise<number> {
  const runId = resolveRunId(requireArg(ctx.positionals[0], 'RUN (see `tpw runs`)'));
  if (ctx.positionals.length > 1) throw new UsageError(`unexpected argument "${ctx.positionals[1]}"`);
  const seconds = ctx.values.interval === undefined ? CHIPS_POLL_MS / 1000 : Number(ctx.values.interval);
  if (!Number.isFinite(seconds) || seconds < 0.5) throw new UsageError(`--interval "${String(ctx.values.interval)}" is not a number of seconds of at least 0.5`);
  const once = Boolean(ctx.values.once) || Boolean(ctx.values.json);
  const backend = await openCliBackend(ctx.globals);
  try {
    const workers = await workersOfRecord(backend, loadRun(runId));
    const conns = connectionsFor(ctx, backend);
    if (once) {
      const readings = await new ChipsPoller(workers, conns, () => undefined).readOnce();
      if (ctx.values.json) ctx.out(JSON.stringify(readings, null, 2));
      else for (const line of chipsTable(readings)) ctx.out(line);
      return readings.some((r) => r.state === 'ok') ? 0 : 1;
    }
    const tty = Boolean(process.stdout.isTTY);
    const stop = new AbortController();
    const onSigint = () => stop.abort();
    process.on('SIGINT', onSigint);
    const poller = new ChipsPoller(workers, conns, () => undefined, { everyMs: seconds * 1000 }).start();
    try {
      while (!stop.signal.aborted) {
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, seconds * 1000);
          stop.signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
        });
        if (stop.signal.aborted) break;
        const lines = [`run ${runId} · ${new Date().toISOString().slice(11, 19)} UTC · every ${seconds} s (Ctrl-C to stop)`, '', ...chipsTable(poller.latest)];
        if (tty) ctx.out(CLEAR + lines.join('\n'));
        else for (const line of [...lines, '']) ctx.out(line);
      }
    } finally {
      poller.stop();
      process.off('SIGINT', onSigint);
    }
    return 0;
  } finally {
    await backend.close();
  }
}
