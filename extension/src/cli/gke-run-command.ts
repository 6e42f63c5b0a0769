import * as path from 'node:path';
import { TpwError } from '../core/errors';
import { PRIORITIES, type Priority } from '../core/gke/manifest';
import { parseClusterName } from '../core/gke/models';
import { DEFAULT_IMAGE, type GkeUse } from '../core/gke/use-config';
import { scriptRecipe } from '../core/recipes/recipe';
import { gkeRunManifest, passthroughEnv, prefixLine, runRecipeOnGke, RunTails, type GkeRunRequest, type RunRecord } from '../core/run/engine';
import { resolveCluster, withGkeBackend } from './gke-commands';
import { stopOnInterrupt } from './interrupt';
import { finishRun, UsageError, type CommandContext } from './context';

/**
 * `tpw run RECIPE|SCRIPT.py --cluster C [-- OVERRIDE…]` (or with the cluster `tpw gke use` remembered): the recipe as
 * a JobSet on a TPU node pool, its pods' logs as `[sNwM]` lines, Ctrl-C deleting the workload. `--dry-run` prints
 * the manifests and submits nothing. `tp run train.py model=… ici_mesh.fsdp=…` is `tpw run train.py -- model=…
 * ici_mesh.fsdp=…` after `tpw gke use` (docs/gke.md).
 */

function numberFlag(ctx: CommandContext, name: string): number | undefined {
  const v = ctx.values[name] as string | undefined;
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v)) throw new UsageError(`--${name} must be a whole number (got "${v}")`);
  return Number(v);
}

/** The GKE run the flags and the remembered settings ask for (flags win). */
function requestFrom(ctx: CommandContext, recipePath: string, use: GkeUse | undefined): Omit<GkeRunRequest, 'gke' | 'cluster' | 'listener'> {
  const tpuType = (ctx.values['tpu-type'] as string | undefined) ?? use?.tpuType;
  if (!tpuType) throw new UsageError('missing --tpu-type T (or remember one for this folder with `tpw gke use`)');
  const priority = (ctx.values.priority as string | undefined) ?? use?.priority ?? 'medium';
  if (!(PRIORITIES as readonly string[]).includes(priority)) throw new UsageError(`--priority must be one of ${PRIORITIES.join(', ')} (got "${priority}")`);
  const workspaceRoot = process.cwd();
  const artifactDir = (ctx.values['artifact-dir'] as string | undefined) ?? use?.artifactDir;
  const maxRestarts = numberFlag(ctx, 'max-restarts');
  return {
    tpuType,
    numSlices: numberFlag(ctx, 'num-slices') ?? use?.numSlices ?? 1,
    image: (ctx.values.image as string | undefined) ?? use?.image ?? DEFAULT_IMAGE,
    namespace: (ctx.values.namespace as string | undefined) ?? use?.namespace ?? 'default',
    ...(ctx.values.name ? { workload: ctx.values.name as string } : {}),
    priority: priority as Priority,
    ...(maxRestarts !== undefined ? { maxRestarts } : {}),
    recipePath,
    // A Python script runs as it is, as `tp run` runs one.
    ...(recipePath.endsWith('.py') ? { recipe: scriptRecipe(recipePath, workspaceRoot) } : {}),
    workspaceRoot,
    ...(artifactDir ? { artifactDir } : {}),
    extraOverrides: ctx.rest,
    // HF_TOKEN and WANDB_API_KEY into the workload's Secret; the XLA/libtpu knobs into its env, as `tp run` proxies them.
    passEnv: passthroughEnv(process.env),
  };
}

export async function gkeRunCommand(ctx: CommandContext, recipeArg: string, use: GkeUse | undefined): Promise<number> {
  const recipePath = path.resolve(recipeArg);
  const base = requestFrom(ctx, recipePath, use);
  return withGkeBackend(ctx, use, async (backend) => {
    const cluster = await resolveCluster(ctx, backend, use);
    if (ctx.values['dry-run']) {
      ctx.out((await gkeRunManifest({ ...base, gke: backend.gke, cluster, listener: {} })).trimEnd());
      return 0;
    }
    const interrupt = stopOnInterrupt(ctx, 'Deleting the workload (its pods get SIGTERM, then SIGKILL after 30 s)');
    try {
      const tails = new RunTails();
      let podsPerSlice = 1;
      const result = await runRecipeOnGke({
        ...base,
        gke: backend.gke,
        cluster,
        detach: Boolean(ctx.values.detach),
        signal: interrupt.signal,
        onStarted: (runId, plan) => {
          podsPerSlice = plan.tpu.vmsPerSlice;
          ctx.err(`Run ${runId} submitted as workload ${plan.workload} (\`tpw logs ${runId} --follow\`, \`tpw stop ${runId}\`).`);
        },
        listener: tails.wrap({
          onPhase: (_phase, detail) => ctx.err(detail),
          onNotice: (m) => ctx.err(m),
          onLine: (worker, _stream, line) => ctx.out(prefixLine(worker, line, podsPerSlice)),
        }),
      });
      return finishRun(ctx, result, tails);
    } finally {
      interrupt.dispose();
    }
  });
}

/** `tpw resume RUN` for a GKE run: the same recipe, cluster and shape submitted again with resume=auto. */
export async function gkeResume(ctx: CommandContext, rec: RunRecord & { gke: NonNullable<RunRecord['gke']> }, use: GkeUse | undefined): Promise<number> {
  return withGkeBackend(ctx, use, async (backend) => {
    const cluster = await backend.gke.api.getCluster(parseClusterName(rec.gke.cluster));
    const tails = new RunTails();
    const result = await runRecipeOnGke({
      gke: backend.gke,
      cluster,
      namespace: rec.gke.namespace,
      tpuType: rec.gke.tpuType,
      numSlices: rec.gke.slices,
      image: rec.gke.image,
      recipePath: rec.recipe,
      ...(rec.recipe.endsWith('.py') ? { recipe: scriptRecipe(rec.recipe, rec.workspaceRoot) } : {}),
      workspaceRoot: rec.workspaceRoot,
      extraOverrides: rec.extraOverrides,
      resume: true,
      passEnv: passthroughEnv(process.env),
      onStarted: (id, plan) => ctx.err(`Run ${id} resumes ${rec.runId} as workload ${plan.workload}.`),
      listener: tails.wrap({ onPhase: (_p, d) => ctx.err(d), onNotice: (m) => ctx.err(m), onLine: (w, _s, line) => ctx.out(prefixLine(w, line, rec.gke.podsPerSlice)) }),
    });
    for (const line of tails.report(result)) ctx.out(line);
    return result.ok ? 0 : 1;
  });
}

/** Refuses what only VMs take, so a flag is never silently ignored. */
export function refuseVmFlagsOnGke(ctx: CommandContext): void {
  if (ctx.values['no-fail-fast']) throw new TpwError('INVALID_ARGUMENT', '--no-fail-fast is for VM runs: on GKE the JobSet fails as soon as one pod fails (xpk\'s failure policy).');
}
