import { TpwError } from '../errors';
import { kubeconfigClusterFor, type TokenSource } from './credentials';
import type { GkeApi } from './gke-api';
import { KubeClient } from './kube';
import type { ClusterId, GkeCluster, GkeNodePool } from './models';
import { GcsReader } from '../storage/gcs-reader';

/**
 * The GKE target of one backend (the emulator, or a Google Cloud project): its clusters through the GKE API, and a
 * Kubernetes client per cluster, made once and kept (the CLI makes one provider per command, the extension one per
 * backend). Credentials per cluster: gcloud's kubeconfig context when there is one, else `fallbackTokens` (ADC,
 * or the emulator's token).
 */
export class GkeProvider {
  private readonly clients = new Map<string, KubeClient>();

  constructor(
    readonly api: GkeApi,
    private readonly fallbackTokens: TokenSource,
    /** The emulator answers on its own addresses: no kubeconfig of the user's applies there. */
    private readonly useKubeconfig: boolean,
    /** Where runs' artifact folders are read (gs://…), with the same credentials: Google's Cloud Storage, or the emulator's. */
    readonly storage: GcsReader = new GcsReader(fallbackTokens),
  ) {}

  listClusters(project: string, location = '-'): Promise<GkeCluster[]> {
    return this.api.listClusters(project, location);
  }

  /**
   * A cluster by name, in `location` or wherever it is; NOT_FOUND names the project and the clusters it has, and
   * INVALID_ARGUMENT when the name is in two locations and none was given.
   */
  async findCluster(project: string, name: string, location?: string): Promise<GkeCluster> {
    const all = await this.api.listClusters(project, location ?? '-');
    const hits = all.filter((c) => c.cluster === name);
    if (hits.length === 1) return hits[0];
    if (hits.length > 1) {
      throw new TpwError('INVALID_ARGUMENT', `GKE cluster "${name}" exists in ${hits.map((c) => c.location).join(' and ')} of project ${project}: give its location (--zone).`);
    }
    const names = all.map((c) => `${c.cluster} (${c.location})`);
    const where = location ? `${project}/${location}` : `project ${project}`;
    throw new TpwError('NOT_FOUND', `No GKE cluster "${name}" in ${where}${names.length ? `; it has ${names.join(', ')}` : '; it has none'} (see \`tpw gke clusters\`).`);
  }

  /** The Kubernetes client of a cluster (one per cluster, kept). FAILED_PRECONDITION while it has no API server. */
  kube(cluster: GkeCluster): KubeClient {
    let client = this.clients.get(cluster.fullName);
    if (client) return client;
    if (!cluster.endpoint) throw new TpwError('FAILED_PRECONDITION', `GKE cluster "${cluster.cluster}" is ${cluster.status} and has no API server endpoint yet.`);
    const label = `GKE cluster "${cluster.cluster}"`;
    const fromKubeconfig = this.useKubeconfig ? kubeconfigClusterFor(cluster) : undefined;
    client = fromKubeconfig
      ? new KubeClient({ label, server: fromKubeconfig.server, caPem: fromKubeconfig.caPem ?? cluster.caCertificate, tokens: fromKubeconfig.tokens })
      : new KubeClient({ label, server: `https://${cluster.endpoint}`, caPem: cluster.caCertificate || undefined, tokens: this.fallbackTokens });
    this.clients.set(cluster.fullName, client);
    return client;
  }

  /** The cluster's node pools as the GKE API has them, with their Kubernetes nodes counted (ready of all). */
  async nodePools(cluster: GkeCluster): Promise<Array<GkeNodePool & { nodes: { ready: number; total: number } }>> {
    const kube = this.kube(cluster);
    const nodes = await kube.call('list the nodes', () => kube.core.listNode({}));
    const byPool = new Map<string, { ready: number; total: number }>();
    for (const n of nodes.items) {
      const pool = n.metadata?.labels?.['cloud.google.com/gke-nodepool'];
      if (!pool) continue;
      const c = byPool.get(pool) ?? { ready: 0, total: 0 };
      c.total++;
      if (n.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True')) c.ready++;
      byPool.set(pool, c);
    }
    return cluster.nodePools.map((p) => ({ ...p, nodes: byPool.get(p.name) ?? { ready: 0, total: 0 } }));
  }

  /** Drops the clients of clusters that are gone; the next call makes them again. */
  forget(id?: ClusterId): void {
    if (!id) this.clients.clear();
    else for (const k of this.clients.keys()) if (k.endsWith(`/clusters/${id.cluster}`) && k.includes(`/locations/${id.location}/`)) this.clients.delete(k);
  }

  async close(): Promise<void> {
    this.clients.clear();
    await this.api.close();
  }
}

/**
 * The TPU node pools of a cluster that can run `tpuType` with `slices` slices: FAILED_PRECONDITION naming the
 * cluster, the type and the pools it has when there is none, or too few (one pool per slice: xpk's JobSets place
 * each slice on a pool of its own).
 */
export function poolsFor(cluster: GkeCluster, tpuType: string, slices: number): GkeNodePool[] {
  const fit = cluster.nodePools.filter((p) => p.tpu?.type === tpuType);
  const tpuPools = cluster.nodePools.filter((p) => p.tpu).map((p) => `${p.name} (${p.tpu!.type})`);
  if (fit.length === 0) {
    throw new TpwError(
      'FAILED_PRECONDITION',
      `GKE cluster "${cluster.cluster}" has no TPU node pool of type ${tpuType}${tpuPools.length ? `; its TPU node pools: ${tpuPools.join(', ')}` : '; it has no TPU node pools'}.`,
    );
  }
  if (fit.length < slices) {
    throw new TpwError('FAILED_PRECONDITION', `GKE cluster "${cluster.cluster}" has ${fit.length} node pool${fit.length === 1 ? '' : 's'} of ${tpuType} (${fit.map((p) => p.name).join(', ')}) but the run asks for ${slices} slices: one node pool per slice.`);
  }
  return fit;
}
