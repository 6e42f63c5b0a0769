import * as fs from 'node:fs';
import * as path from 'node:path';
import { TpwError } from '../core/errors';
import { passthroughEnv, prefixLine, runRecipe, RunTails } from '../core/run/engine';
import { findRunTarget } from '../core/slices/multislice';
import { openCliBackend } from './backend-from-args';
import { usedHere } from './gke-commands';
import { gkeRunCommand, refuseVmFlagsOnGke } from './gke-run-command';
import { connectionsFor } from './connections';
import { stopOnInterrupt } from './interrupt';
import { finishRun, requireArg, UsageError, type CommandContext } from './context';

/**
 * `tpw run RECIPE --vm NAME [-- overrides]`: the current folder is the workspace that is synced. NAME is a VM, or
 * a multislice group (`tpw vm create NAME --slices N`): then the run goes to every worker of every slice.
 * The first Ctrl-C stops the run on every worker (SIGINT, then SIGKILL after a grace period); a second one exits at once.
 */
export async function runCommand(ctx: CommandContext): Promise<number> {
  const [recipeArg, extra] = ctx.positionals;
  if (extra !== undefined) throw new UsageError(`unexpected argument "${extra}" (hydra overrides go after --)`);
  const recipePath = path.resolve(requireArg(recipeArg, 'RECIPE (e.g. tpw run recipes/tiny-llama.sh --vm demo)'));
  if (!fs.existsSync(recipePath)) throw new TpwError('NOT_FOUND', `Recipe not found: ${recipePath}`);
  // GKE: --cluster, or the cluster `tpw gke use` remembered for this folder (unless --vm says otherwise).
  const use = ctx.values.vm ? undefined : usedHere();
  if (ctx.values.cluster || use) {
    if (ctx.values.vm) throw new UsageError('--vm and --cluster exclude each other');
    refuseVmFlagsOnGke(ctx);
    return gkeRunCommand(ctx, recipePath, use);
  }
  for (const gkeOnly of ['dry-run', 'tpu-type', 'num-slices', 'image', 'name', 'priority', 'max-restarts', 'artifact-dir', 'namespace']) {
    if (ctx.values[gkeOnly] !== undefined) throw new UsageError(`--${gkeOnly} is for runs on GKE (--cluster C)`);
  }
  const vm = requireArg(ctx.values.vm as string | undefined, '--vm NAME (see `tpw vm list`), or --cluster C for GKE');
  const backend = await openCliBackend(ctx.globals);
  const interrupt = stopOnInterrupt(ctx, 'Stopping the run on every worker');
  try {
    const { node, slices } = await findRunTarget(backend, vm, ctx.globals.zone);
    // Multislice lines read [s1w3]: slice 1, its worker 3.
    const perSlice = slices ? node.networkEndpoints.length : undefined;
    const tails = new RunTails();
    const result = await runRecipe({
      backend,
      node,
      ...(slices ? { slices } : {}),
      recipePath,
      workspaceRoot: process.cwd(),
      extraOverrides: ctx.rest,
      failFast: !ctx.values['no-fail-fast'],
      detach: Boolean(ctx.values.detach),
      conns: connectionsFor(ctx, backend),
      // HF_TOKEN, WANDB_API_KEY and the XLA/libtpu knobs from this shell, through the 0600 env file only.
      passEnv: passthroughEnv(process.env),
      onStarted: (runId) => ctx.err(`Run ${runId} started on every worker (\`tpw logs ${runId} --follow\`, \`tpw stop ${runId}\`).`),
      signal: interrupt.signal,
      listener: tails.wrap({
        onPhase: (_phase, detail) => ctx.err(detail),
        onLine: (worker, _stream, line) => ctx.out(prefixLine(worker, line, perSlice)),
      }),
    });
    return finishRun(ctx, result, tails);
  } finally {
    interrupt.dispose();
    await backend.close();
  }
}
