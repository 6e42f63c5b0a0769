import type { Backend } from '../core/backend';
import { TpwError } from '../core/errors';
import { parseClusterName, type GkeCluster } from '../core/gke/models';
import type { RunRecord } from '../core/run/engine';
import { checkGkeUse, DEFAULT_IMAGE, loadGkeUse, saveGkeUse, type GkeUse } from '../core/gke/use-config';
import { tpuNodePoolRequest } from '../core/gke/node-pool-request';
import { listQueues, listWorkloads } from '../core/gke/workloads';
import { openCliBackend } from './backend-from-args';
import { positionalsUpTo, requireArg, UsageError, type CommandContext, type GlobalOptions } from './context';
import { formatTable } from './table';

/**
 * `tpw gke use | clusters | nodepools | queues | workloads`: torchprime's `tp use`, and what a GKE fleet holds, from
 * the GKE API and each cluster's Kubernetes API (core/gke). A cluster is `--cluster C`, or the one `tpw gke use`
 * remembered for the current folder.
 */

/** The remembered settings of this folder (`tpw gke use`), if any. */
export function usedHere(): GkeUse | undefined {
  return loadGkeUse(process.cwd());
}

/** The backend GKE commands talk to: the flags, else what `tpw gke use` remembered (its project, or the emulator). */
export function gkeGlobals(g: GlobalOptions, use: GkeUse | undefined): GlobalOptions {
  if (g.project || g.emulator || !use) return g;
  return use.emulator ? { ...g, emulator: true } : { ...g, project: use.project };
}

/** The backend a recorded GKE run was submitted through (its project, or the emulator), unless flags say otherwise. */
export function gkeGlobalsForRun(g: GlobalOptions, rec: RunRecord): GlobalOptions {
  if (!rec.gke || g.project || g.emulator) return g;
  return rec.gke.emulator ? { ...g, emulator: true } : { ...g, project: parseClusterName(rec.gke.cluster).project };
}

export async function withGkeBackend<T>(ctx: CommandContext, use: GkeUse | undefined, fn: (backend: Backend) => Promise<T>): Promise<T> {
  const backend = await openCliBackend(gkeGlobals(ctx.globals, use));
  try {
    return await fn(backend);
  } finally {
    await backend.close();
  }
}

/** `--cluster C` (in --zone, or wherever it is), else the remembered cluster; one-line errors name what is missing. */
export async function resolveCluster(ctx: CommandContext, backend: Backend, use: GkeUse | undefined): Promise<GkeCluster> {
  const name = (ctx.values.cluster as string | undefined) ?? use?.cluster;
  if (!name) throw new UsageError('missing --cluster C (or remember one for this folder with `tpw gke use`)');
  const location = ctx.globals.zone ?? (name === use?.cluster ? use.zone : undefined);
  return backend.gke.findCluster(backend.project, name, location);
}

/** `tpw gke use --cluster C --project P --zone Z [--num-slices N] --tpu-type T [--artifact-dir gs://…]` */
export async function gkeUse(ctx: CommandContext): Promise<number> {
  positionalsUpTo(ctx, 0);
  const cluster = requireArg(ctx.values.cluster as string | undefined, '--cluster C');
  const project = requireArg((ctx.values.project as string | undefined) ?? ctx.globals.project, '--project P');
  const zone = requireArg(ctx.globals.zone, '--zone Z');
  const tpuType = requireArg(ctx.values['tpu-type'] as string | undefined, '--tpu-type T (e.g. v6e-256)');
  const slicesText = (ctx.values['num-slices'] as string | undefined) ?? '1';
  if (!/^\d+$/.test(slicesText)) throw new UsageError(`--num-slices must be a number (got "${slicesText}")`);
  const artifactDir = ctx.values['artifact-dir'] as string | undefined;
  const use: GkeUse = {
    workspace: process.cwd(),
    cluster,
    project,
    zone,
    numSlices: Number(slicesText),
    tpuType,
    ...(artifactDir ? { artifactDir } : {}),
    image: (ctx.values.image as string | undefined) ?? DEFAULT_IMAGE,
    namespace: (ctx.values.namespace as string | undefined) ?? 'default',
    priority: 'medium',
    emulator: ctx.globals.emulator,
  };
  checkGkeUse(use);
  // As `tp use` checks its setup: the cluster must exist there and have node pools of the type.
  await withGkeBackend(ctx, use, async (backend) => {
    if (backend.kind === 'emulator' && backend.project !== project) {
      throw new TpwError('INVALID_ARGUMENT', `The local emulator serves project ${backend.project}, not ${project}: use --project ${backend.project} with --emulator.`);
    }
    const c = await backend.gke.findCluster(project, cluster, zone);
    const pools = c.nodePools.filter((p) => p.tpu?.type === tpuType);
    if (pools.length === 0) {
      const have = c.nodePools.filter((p) => p.tpu).map((p) => `${p.name} (${p.tpu!.type})`);
      throw new TpwError('FAILED_PRECONDITION', `GKE cluster "${cluster}" has no TPU node pool of type ${tpuType}${have.length ? `; its TPU node pools: ${have.join(', ')}` : '; it has no TPU node pools'}.`);
    }
    if (pools.length < use.numSlices) ctx.err(`Note: ${cluster} has ${pools.length} node pool(s) of ${tpuType}; a run of ${use.numSlices} slices waits until there are ${use.numSlices}.`);
  });
  const file = saveGkeUse(use);
  ctx.out(`Using GKE cluster ${cluster} (project ${project}, ${zone}): ${use.numSlices} × ${tpuType}${artifactDir ? `, artifacts in ${artifactDir}` : ''}.`);
  ctx.err(`Remembered for ${use.workspace} (${file}); \`tpw run SCRIPT|RECIPE -- overrides\` here now runs on it.`);
  return 0;
}

/** `tpw gke clusters [--json]` */
export async function gkeClusters(ctx: CommandContext): Promise<number> {
  positionalsUpTo(ctx, 0);
  const use = usedHere();
  return withGkeBackend(ctx, use, async (backend) => {
    const clusters = await backend.gke.listClusters(backend.project, ctx.globals.zone ?? '-');
    if (ctx.values.json) {
      ctx.out(JSON.stringify(clusters.map(({ caCertificate: _ca, ...c }) => c), null, 2));
      return 0;
    }
    if (clusters.length === 0) {
      ctx.out(`No GKE clusters in project ${backend.project}${ctx.globals.zone ? ` (${ctx.globals.zone})` : ''}.`);
      return 0;
    }
    const rows = clusters.map((c) => [
      c.cluster + (use?.cluster === c.cluster ? ' *' : ''),
      c.location,
      c.status,
      c.version ?? '',
      String(c.nodePools.filter((p) => p.tpu).length),
      [...new Set(c.nodePools.flatMap((p) => (p.tpu ? [p.tpu.type] : [])))].join(' '),
    ]);
    for (const l of formatTable(['CLUSTER', 'LOCATION', 'STATUS', 'VERSION', 'TPU POOLS', 'TPU TYPES'], rows)) ctx.out(l);
    return 0;
  });
}

/** `tpw gke nodepools [--cluster C] [--json]` */
export async function gkeNodePools(ctx: CommandContext): Promise<number> {
  positionalsUpTo(ctx, 0);
  const use = usedHere();
  return withGkeBackend(ctx, use, async (backend) => {
    const cluster = await resolveCluster(ctx, backend, use);
    const pools = await backend.gke.nodePools(cluster);
    if (ctx.values.json) {
      ctx.out(JSON.stringify(pools, null, 2));
      return 0;
    }
    const rows = pools.map((p) => [
      p.name,
      p.tpu?.type ?? p.machineType,
      p.tpu?.topology ?? '',
      `${p.nodes.ready}/${p.nodeCount}`,
      p.status + (p.statusMessage ? ` (${p.statusMessage})` : ''),
      [p.spot ? 'spot' : '', p.reservation ? `reservation ${p.reservation}` : ''].filter(Boolean).join(', '),
    ]);
    for (const l of formatTable(['NODE POOL', 'TYPE', 'TOPOLOGY', 'NODES READY', 'STATUS', 'CAPACITY'], rows)) ctx.out(l);
    return 0;
  });
}

/** `tpw gke create-nodepool NAME --tpu-type T [--cluster C] [--spot | --reservation R]`: one slice's TPU node pool. */
export async function gkeCreateNodePool(ctx: CommandContext): Promise<number> {
  const [name] = positionalsUpTo(ctx, 1);
  const use = usedHere();
  const tpuType = (ctx.values['tpu-type'] as string | undefined) ?? use?.tpuType;
  const body = tpuNodePoolRequest({
    name: requireArg(name, 'NAME (the node pool)'),
    tpuType: requireArg(tpuType, '--tpu-type T'),
    ...(ctx.values.spot ? { spot: true } : {}),
    ...(ctx.values.reservation !== undefined ? { reservation: ctx.values.reservation as string } : {}),
  });
  return withGkeBackend(ctx, use, async (backend) => {
    const cluster = await resolveCluster(ctx, backend, use);
    ctx.err(`Creating node pool ${body.name} (${tpuType}: ${body.initialNodeCount} × ${body.config.machineType}${body.config.spot ? ', spot' : ''}${body.config.reservationAffinity ? `, reservation ${body.config.reservationAffinity.values[0]}` : ''}) in GKE cluster ${cluster.cluster}…`);
    const pool = await backend.gke.api.createNodePool(cluster, body, { ...(backend.gke.api.emulator ? { pollMs: 300 } : {}) });
    ctx.out(`${pool.name} ${pool.status}: ${pool.tpu?.type ?? pool.machineType} ${pool.tpu?.topology ?? ''}, ${pool.nodeCount} nodes${pool.spot ? ', spot' : ''}${pool.reservation ? `, reservation ${pool.reservation}` : ''}`);
    return 0;
  });
}

/** `tpw gke queues [--cluster C] [--json]` */
export async function gkeQueues(ctx: CommandContext): Promise<number> {
  positionalsUpTo(ctx, 0);
  const use = usedHere();
  return withGkeBackend(ctx, use, async (backend) => {
    const cluster = await resolveCluster(ctx, backend, use);
    const q = await listQueues(backend.gke.kube(cluster));
    if (ctx.values.json) {
      ctx.out(JSON.stringify(q, null, 2));
      return 0;
    }
    if (q.noKueue) {
      ctx.out(`GKE cluster ${cluster.cluster} has no Kueue: workloads start without queueing.`);
      return 0;
    }
    const rows = q.clusterQueues.flatMap((c) =>
      (c.resources.length ? c.resources : [{ flavor: '', resource: '', nominal: '', used: '' }]).map((r, i) => [
        i === 0 ? c.name : '',
        r.flavor,
        r.resource,
        r.resource ? `${r.used}/${r.nominal}` : '',
        i === 0 ? String(c.admitted) : '',
        i === 0 ? String(c.pending) : '',
        i === 0 ? (c.inactiveReason ?? '') : '',
      ]),
    );
    for (const l of formatTable(['CLUSTER QUEUE', 'FLAVOR', 'RESOURCE', 'USED/QUOTA', 'ADMITTED', 'PENDING', 'INACTIVE'], rows)) ctx.out(l);
    ctx.out('');
    for (const l of formatTable(['LOCAL QUEUE', 'NAMESPACE', 'CLUSTER QUEUE', 'ADMITTED', 'PENDING'], q.localQueues.map((l) => [l.name, l.namespace, l.clusterQueue, String(l.admitted), String(l.pending)]))) ctx.out(l);
    return 0;
  });
}

/** `tpw gke workloads [--cluster C] [--limit N] [--all] [--json]`: a page at a time, as the API server pages them. */
export async function gkeWorkloads(ctx: CommandContext): Promise<number> {
  positionalsUpTo(ctx, 0);
  const use = usedHere();
  const limitText = (ctx.values.limit as string | undefined) ?? '100';
  if (!/^[1-9]\d*$/.test(limitText)) throw new UsageError(`--limit must be a positive number (got "${limitText}")`);
  return withGkeBackend(ctx, use, async (backend) => {
    const cluster = await resolveCluster(ctx, backend, use);
    const kube = backend.gke.kube(cluster);
    const namespace = (ctx.values.namespace as string | undefined) ?? use?.namespace ?? 'default';
    let token: string | undefined;
    const all = [];
    do {
      const page = await listWorkloads(kube, { namespace, limit: Number(limitText), ...(token ? { continue: token } : {}) });
      all.push(...page.items);
      token = page.continue;
      if (token && !ctx.values.all) {
        ctx.err(`More workloads: ${page.remaining !== undefined ? `${page.remaining} more; ` : ''}use --all to list every one, or a larger --limit.`);
        break;
      }
    } while (token);
    if (ctx.values.json) {
      ctx.out(JSON.stringify(all, null, 2));
      return 0;
    }
    if (all.length === 0) {
      ctx.out(`No workloads in namespace ${namespace} of GKE cluster ${cluster.cluster}.`);
      return 0;
    }
    const rows = all.map((w) => [w.name, w.phase, w.tpuType ? `${w.slices} × ${w.tpuType}` : `${w.slices} slices`, String(w.restarts), w.runId ?? '', w.message ?? '']);
    for (const l of formatTable(['WORKLOAD', 'PHASE', 'TPUS', 'RESTARTS', 'TPW RUN', 'WHY'], rows)) ctx.out(l);
    return 0;
  });
}
