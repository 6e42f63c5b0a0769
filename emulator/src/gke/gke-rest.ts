import type { GkeService } from './gke-service';

/**
 * The GKE API subset (container/v1) on the emulator's REST server, at Google's paths, so that
 * `@google-cloud/container` (REST fallback) and `gcloud container clusters …` reach it unchanged:
 *   GET    /v1/projects/p/locations/l/clusters                  (l = zone, region, or - for all)
 *   POST   /v1/projects/p/locations/l/clusters                  body {cluster}
 *   GET    /v1/projects/p/locations/l/clusters/c                DELETE the same
 *   GET    /v1/projects/p/locations/l/clusters/c/nodePools[/np]  POST …/nodePools body {nodePool}; DELETE …/np
 *   GET    /v1/projects/p/locations/l/operations[/op]
 * and the same under gcloud's older zonal form (/v1/projects/p/zones/z/…). Test-only:
 *   POST   /emulator/v1/projects/p/locations/l/clusters/c/nodePools/np:preempt?downSeconds=N
 */

export interface GkeRoute {
  verb: string;
  re: RegExp;
  rpc: string;
  handle: (m: string[], ctx: { query: URLSearchParams; body: Record<string, unknown> }) => unknown;
}

const SEG = '([^/:]+)';

export function gkeRoutes(gke: GkeService): GkeRoute[] {
  const routes: GkeRoute[] = [];
  for (const scope of ['locations', 'zones']) {
    const L = `^/v1/projects/${SEG}/${scope}/${SEG}`;
    const C = `${L}/clusters/${SEG}`;
    routes.push(
      { verb: 'GET', re: new RegExp(`${L}/clusters$`), rpc: 'container.clusters.list', handle: (m) => gke.listClusters(m[0], m[1]) },
      { verb: 'POST', re: new RegExp(`${L}/clusters$`), rpc: 'container.clusters.create', handle: (m, c) => gke.createCluster(m[0], m[1], c.body) },
      { verb: 'GET', re: new RegExp(`${C}$`), rpc: 'container.clusters.get', handle: (m) => gke.getCluster(m[0], m[1], m[2]) },
      { verb: 'DELETE', re: new RegExp(`${C}$`), rpc: 'container.clusters.delete', handle: (m) => gke.deleteCluster(m[0], m[1], m[2]) },
      { verb: 'GET', re: new RegExp(`${C}/nodePools$`), rpc: 'container.nodePools.list', handle: (m) => gke.listNodePools(m[0], m[1], m[2]) },
      { verb: 'POST', re: new RegExp(`${C}/nodePools$`), rpc: 'container.nodePools.create', handle: (m, c) => gke.createNodePool(m[0], m[1], m[2], c.body) },
      { verb: 'GET', re: new RegExp(`${C}/nodePools/${SEG}$`), rpc: 'container.nodePools.get', handle: (m) => gke.getNodePool(m[0], m[1], m[2], m[3]) },
      { verb: 'DELETE', re: new RegExp(`${C}/nodePools/${SEG}$`), rpc: 'container.nodePools.delete', handle: (m) => gke.deleteNodePool(m[0], m[1], m[2], m[3]) },
      { verb: 'GET', re: new RegExp(`${L}/operations$`), rpc: 'container.operations.list', handle: (m) => gke.listOperations(m[0], m[1]) },
      { verb: 'GET', re: new RegExp(`${L}/operations/${SEG}$`), rpc: 'container.operations.get', handle: (m) => gke.getOperation(m[0], m[1], m[2]) },
    );
  }
  routes.push({
    verb: 'POST',
    re: new RegExp(`^/emulator/v1/projects/${SEG}/locations/${SEG}/clusters/${SEG}/nodePools/${SEG}:preempt$`),
    rpc: 'PreemptNodePool',
    handle: (m, c) => gke.preemptNodePool(m[0], m[1], m[2], m[3], Number(c.query.get('downSeconds') ?? '10') * 1000),
  });
  return routes;
}
