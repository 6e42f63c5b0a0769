import { formatRunSummary } from '../core/run/engine';
import { downVm, executeLaunch } from '../core/task-yaml/launch';
import { formatPlan, planLaunch } from '../core/task-yaml/plan';
import { rankPrefix } from '../core/task-yaml/task-env';
import { openCliBackend } from './backend-from-args';
import { connectionsFor } from './connections';
import { stopOnInterrupt } from './interrupt';
import { positionalsUpTo, requireArg, UsageError, type CommandContext } from './context';

/**
 * `tpw launch TASK.yaml [-c NAME] [--env K[=V]]… [--secret K[=V]]… [--dry-run]`, `tpw exec NAME TASK.yaml`,
 * `tpw down NAME`: SkyPilot task YAMLs on Cloud TPU VMs (core/task-yaml/). Secret values come from this
 * process's environment (or the YAML) and go only into each host's 0600 env file; nothing here prints them.
 */

/** `--env K=V` as given, `--env K` from this process's environment (as `sky launch` reads them). */
function listOf(values: unknown): string[] {
  const list: unknown[] = values === undefined ? [] : Array.isArray(values) ? values : [values];
  return list.filter((x): x is string => typeof x === 'string');
}

function resolvePairs(values: unknown, flag: '--env' | '--secret'): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of listOf(values)) {
    const eq = item.indexOf('=');
    const key = eq < 0 ? item : item.slice(0, eq);
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) throw new UsageError(`${flag} "${eq < 0 ? item : `${key}=…`}": ${key || 'the name'} is not a variable name`);
    if (eq >= 0) out[key] = item.slice(eq + 1);
    else {
      const v = process.env[key];
      if (v === undefined) throw new UsageError(`${flag} ${key}: ${key} is not set in your environment (export it, then pass ${flag} ${key} again)`);
      out[key] = v;
    }
  }
  return out;
}

export function launchCommand(ctx: CommandContext): Promise<number> {
  const [yaml] = positionalsUpTo(ctx, 1);
  return launchOrExec(ctx, 'launch', requireArg(yaml, 'TASK.yaml (tpw launch TASK.yaml [-c NAME])'), ctx.values.cluster as string | undefined);
}

export function execCommand(ctx: CommandContext): Promise<number> {
  const [name, yaml] = positionalsUpTo(ctx, 2);
  const vm = requireArg(name, 'VM name (tpw exec NAME TASK.yaml)');
  return launchOrExec(ctx, 'exec', requireArg(yaml, 'TASK.yaml (tpw exec NAME TASK.yaml)'), vm);
}

async function launchOrExec(ctx: CommandContext, mode: 'launch' | 'exec', yamlPath: string, cluster: string | undefined): Promise<number> {
  const envOverrides = resolvePairs(ctx.values.env, '--env');
  const secretOverrides = resolvePairs(ctx.values.secret, '--secret');
  for (const item of listOf(ctx.values.secret).filter((x) => x.includes('='))) {
    const key = item.slice(0, item.indexOf('='));
    ctx.err(`Warning: --secret ${key}=… puts the value in tpw's command line, which every user of this machine can read (ps, /proc): export ${key} and pass --secret ${key} instead.`);
  }
  const backend = await openCliBackend(ctx.globals);
  const interrupt = stopOnInterrupt(ctx, 'Stopping on every host');
  try {
    const plan = await planLaunch({ backend, mode, yamlPath, cluster, zone: ctx.globals.zone, cwd: process.cwd(), envOverrides, secretOverrides, signal: interrupt.signal });
    if (ctx.values['dry-run']) {
      for (const line of formatPlan(plan)) ctx.out(line);
      return 0;
    }
    for (const n of plan.notes) ctx.err(`Note: ${n}`);
    for (const w of plan.warnings) ctx.err(`Warning: ${w}`);
    let hosts = plan.hosts ?? 1;
    const result = await executeLaunch(plan, {
      backend,
      conns: connectionsFor(ctx, backend),
      signal: interrupt.signal,
      say: (line) => ctx.err(line),
      onHosts: (n) => (hosts = n),
      onLine: (stage, w, line) => ctx.out(`${rankPrefix(w, hosts, plan.task.name, stage)} ${line}`),
      onStarted: (stage, runId) => ctx.err(`${stage === 'setup' ? 'Setup' : 'Run'} ${runId} started on every host (\`tpw logs ${runId}\`, \`tpw stop ${runId}\`).`),
    });
    if (result.setup && !result.setup.ok) {
      ctx.err(`Setup: ${formatRunSummary(result.setup)}`);
      return result.setup.cancelled ? 130 : 1;
    }
    if (!result.run) {
      ctx.err(`${plan.cluster}: done (the task has no run).`);
      return 0;
    }
    ctx.err(`Run: ${formatRunSummary(result.run)}`);
    if (result.run.cancelled) return 130;
    return result.run.ok ? 0 : 1;
  } finally {
    interrupt.dispose();
    await backend.close();
  }
}

export async function downCommand(ctx: CommandContext): Promise<number> {
  const [name] = positionalsUpTo(ctx, 1);
  const vm = requireArg(name, 'VM name (tpw down NAME)');
  const backend = await openCliBackend(ctx.globals);
  try {
    await downVm(backend, vm, ctx.globals.zone, (l) => ctx.err(l));
    ctx.out(`${vm}: deleted`);
    return 0;
  } finally {
    await backend.close();
  }
}
