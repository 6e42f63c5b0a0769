import { isTaskYamlRun, relaunchInstead } from '../core/task-yaml/launch';
import {
  firstFailure,
  formatDuration,
  listRuns,
  loadRun,
  passthroughEnv,
  prefixLine,
  resolveRunId,
  runRecipe,
  runStatusText,
  RunTails,
  stopRecordedRun,
  vmForResume,
  watchRecordedRun,
  type RunRecord,
} from '../core/run/engine';
import { openCliBackend } from './backend-from-args';
import { gkeGlobalsForRun } from './gke-commands';
import { gkeResume } from './gke-run-command';
import { isGkeRun } from '../core/run/engine';
import { connectionsFor } from './connections';
import { requireArg, UsageError, type CommandContext } from './context';

/**
 * `tpw runs`, `tpw logs RUN [--follow]`, `tpw stop RUN`: the run registry (<TPW_HOME>/runs) seen from any
 * shell, independently of the `tpw run` that started the run (it may have been `--detach`ed or killed).
 */

function exitCodes(r: RunRecord): string {
  return r.exitCodes ? r.exitCodes.map((c, i) => `w${i}=${c ?? '-'}`).join(' ') : '';
}

function duration(r: RunRecord): string {
  const end = r.endedAt ? Date.parse(r.endedAt) : Date.now();
  return formatDuration(end - Date.parse(r.startedAt));
}

export async function runsCommand(ctx: CommandContext): Promise<number> {
  if (ctx.positionals.length > 0) throw new UsageError(`unexpected argument "${ctx.positionals[0]}"`);
  const runs = listRuns();
  if (ctx.values.json) {
    ctx.out(JSON.stringify(runs, null, 2));
    return 0;
  }
  if (runs.length === 0) {
    ctx.out('No runs yet. Start one with `tpw run RECIPE --vm NAME`.');
    return 0;
  }
  const rows = runs.map((r) => [r.runId, runStatusText(r), r.vm, r.recipe.split('/').pop() ?? r.recipe, r.startedAt.replace('T', ' ').slice(0, 19), duration(r), exitCodes(r)]);
  const head = ['RUN', 'STATUS', 'VM', 'RECIPE', 'STARTED (UTC)', 'DURATION', 'EXIT CODES'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  for (const row of [head, ...rows]) ctx.out(row.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd());
  return 0;
}

export async function logsCommand(ctx: CommandContext): Promise<number> {
  const runId = resolveRunId(requireArg(ctx.positionals[0], 'RUN (see `tpw runs`)'));
  const follow = Boolean(ctx.values.follow);
  const backend = await openCliBackend(gkeGlobalsForRun(ctx.globals, loadRun(runId)));
  const conns = connectionsFor(ctx, backend);
  const detach = new AbortController();
  // Ctrl-C while following stops *watching*; the run goes on (`tpw stop` stops it).
  const onSigint = () => detach.abort();
  process.on('SIGINT', onSigint);
  try {
    const tails = new RunTails();
    const perSlice = loadRun(runId).workersPerSlice;
    const listener = tails.wrap({ onLine: (w: number, _s: unknown, line: string) => ctx.out(prefixLine(w, line, perSlice)), onNotice: (m: string) => ctx.err(`tpw: ${m}`) });
    const result = await watchRecordedRun(backend, conns, runId, listener, {
      follow,
      signal: detach.signal,
      onNotice: (w, m) => ctx.err(`tpw: w${w}: ${m}`),
    });
    if (!follow) {
      const rec = loadRun(runId);
      ctx.err(`run ${runId}: ${rec.status}${rec.exitCodes ? ` — ${exitCodes(rec)}` : ''}`);
      // A finished failed run: name the worker that failed first and quote its last lines (just printed above,
      // but interleaved with every other worker's).
      const first = rec.status === 'failed' ? firstFailure(result, rec.failedWorker) : undefined;
      if (first) for (const line of tails.report(result, first.index).slice(1)) ctx.err(line);
      return 0;
    }
    if (result.detached) {
      ctx.err(`Stopped following; run ${runId} goes on.`);
      return 0;
    }
    for (const line of tails.report(result, loadRun(runId).failedWorker)) ctx.out(line);
    return result.ok ? 0 : 1;
  } finally {
    process.off('SIGINT', onSigint);
    await backend.close();
  }
}

export async function stopCommand(ctx: CommandContext): Promise<number> {
  const runId = resolveRunId(requireArg(ctx.positionals[0], 'RUN (see `tpw runs`)'));
  const backend = await openCliBackend(gkeGlobalsForRun(ctx.globals, loadRun(runId)));
  const conns = connectionsFor(ctx, backend);
  try {
    const rec = await stopRecordedRun(backend, conns, runId);
    if (isGkeRun(rec)) {
      ctx.out(`run ${runId}: workload ${rec.gke.jobset} deleted (${rec.status})`);
      return 0;
    }
    ctx.out(`run ${runId}: stopped on ${rec.workers.length} workers (${rec.status})`);
    return 0;
  } finally {
    await backend.close();
  }
}

/**
 * `tpw resume RUN`: "Recreate and resume" — if the run's VM was preempted (or terminated), delete and create it
 * again with the same spec, then run the same recipe with the same overrides plus `resume=auto` (trainer
 * recipes), from the same workspace.
 */
export async function resumeCommand(ctx: CommandContext): Promise<number> {
  const runId = resolveRunId(requireArg(ctx.positionals[0], 'RUN (see `tpw runs`)'));
  const rec = loadRun(runId);
  if (isTaskYamlRun(rec)) throw relaunchInstead(rec);
  if (isGkeRun(rec)) return gkeResume({ ...ctx, globals: gkeGlobalsForRun(ctx.globals, rec) }, rec, undefined);
  const backend = await openCliBackend(ctx.globals);
  try {
    // Every slice of a multislice run is brought back; only the ones that went away are recreated or started.
    const slices = [];
    for (const [i, name] of (rec.slices && rec.slices.length > 0 ? rec.slices : [rec.node]).entries()) slices.push(await vmForResume(backend.api, name, runId, (m) => ctx.err(m), rec.recreate?.[i]));
    const node = slices[0];
    const tails = new RunTails();
    const result = await runRecipe({
      backend,
      node,
      recipePath: rec.recipe,
      workspaceRoot: rec.workspaceRoot,
      extraOverrides: rec.extraOverrides,
      resume: true,
      ...(slices.length > 1 ? { slices } : {}),
      conns: connectionsFor(ctx, backend),
      passEnv: passthroughEnv(process.env),
      onStarted: (id) => ctx.err(`Run ${id} resumes ${runId} on ${rec.vm}.`),
      listener: tails.wrap({ onPhase: (_p, d) => ctx.err(d), onLine: (w, _s, line) => ctx.out(prefixLine(w, line, rec.workersPerSlice)) }),
    });
    for (const line of tails.report(result)) ctx.out(line);
    return result.ok ? 0 : 1;
  } finally {
    await backend.close();
  }
}
