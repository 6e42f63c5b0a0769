import { familyInfo, TPU_FAMILIES, TPU_MACHINE_TYPES } from '../../protocol/tpu-machine-types';
import { aggregatedPage, canonicalLink, page } from './compute-lists';
import type { ComputeState, Json, OperationJson } from './compute-state';
import { ApiError, GOOGLE_STATUS } from './types';

/**
 * The Compute Engine v1 REST subset that TPU VMs on Compute Engine need, on the emulator's one HTTP server, at
 * the paths Google serves them so that `@google-cloud/compute` (REST) and Python's google-cloud-compute reach it
 * unchanged. What the Node client sends (logged from the real client):
 *   POST   /compute/v1/projects/p/zones/z/instances                       body: the Instance
 *   GET    /compute/v1/projects/p/zones/z/instances[/i]      DELETE …/instances/i
 *   POST   /compute/v1/projects/p/zones/z/instances/i/{start,stop,setMetadata}
 *   POST   /compute/v1/projects/p/global/instanceTemplates               body: the InstanceTemplate
 *   POST   /compute/v1/projects/p/regions/r/resourcePolicies             body: { name, workloadPolicy }
 *   POST   /compute/v1/projects/p/zones/z/instanceGroupManagers[/m/listManagedInstances | /m/resize?size=N]
 *   POST   /compute/v1/projects/p/{zones/z|regions/r|global}/operations/op/wait   (GET without /wait)
 *   GET    /compute/v1/projects/p      POST /compute/v1/projects/p/setCommonInstanceMetadata   body: the Metadata
 * Lists page with maxResults/pageToken and answer `items`. Errors are Compute's: {error:{code,message,errors:[{reason}]}}.
 */

export interface ComputeRoute {
  verb: string;
  re: RegExp;
  rpc: string;
  handle: (m: string[], ctx: { query: URLSearchParams; body: Record<string, unknown> }) => unknown;
}

const SEG = '([^/]+)';
const BASE = 'https://compute.googleapis.com/compute/v1';
/** Compute Engine's operations.wait returns after at most 2 minutes; the emulator's after a few seconds. */
const WAIT_MS = 5000;

/** Compute's `errors[].reason` for a status, when the error does not name one. */
const REASONS: Partial<Record<keyof typeof GOOGLE_STATUS, string>> = {
  NOT_FOUND: 'notFound', ALREADY_EXISTS: 'alreadyExists', INVALID_ARGUMENT: 'invalid', PERMISSION_DENIED: 'forbidden',
  RESOURCE_EXHAUSTED: 'quotaExceeded', UNAUTHENTICATED: 'authError', FAILED_PRECONDITION: 'conditionNotMet',
  UNAVAILABLE: 'backendError', INTERNAL: 'backendError',
};

/** The error body Compute Engine answers with (it also carries `status`, and ErrorInfo details where it has them). */
export function computeErrorBody(err: ApiError, http: number): Json {
  return {
    error: {
      code: http,
      message: err.message,
      errors: [{ message: err.message, domain: err.reason === 'accessNotConfigured' ? 'usageLimits' : 'global', reason: err.reason ?? REASONS[err.status] ?? 'backendError' }],
      status: err.status,
      ...(err.details ? { details: err.details } : {}),
    },
  };
}

export function computeRoutes(opts: { compute: ComputeState; project: string; zones: readonly string[] }): ComputeRoute[] {
  const cs = opts.compute;
  const checkProject = (p: string): string => {
    if (p !== opts.project) {
      throw new ApiError('PERMISSION_DENIED', `Required 'compute.instances.list' permission for 'projects/${p}': the local emulator serves only project "${opts.project}".`, { reason: 'forbidden' });
    }
    return p;
  };
  const checkZone = (p: string, z: string): string => {
    checkProject(p);
    if (!opts.zones.includes(z)) throw new ApiError('NOT_FOUND', `The resource 'projects/${p}/zones/${z}' was not found`, { reason: 'notFound' });
    return z;
  };
  const regions = () => [...new Set(opts.zones.map(regionOf))];
  const checkRegion = (p: string, r: string): string => {
    checkProject(p);
    if (!regions().includes(r)) throw new ApiError('NOT_FOUND', `The resource 'projects/${p}/regions/${r}' was not found`, { reason: 'notFound' });
    return r;
  };
  const P = `^/compute/v1/projects/${SEG}`;
  const Z = `${P}/zones/${SEG}`;
  const R = `${P}/regions/${SEG}`;
  const G = `${P}/global`;
  const zoneJson = (p: string, z: string) => ({ kind: 'compute#zone', name: z, status: 'UP', region: `${BASE}/projects/${p}/regions/${regionOf(z)}`, selfLink: `${BASE}/projects/${p}/zones/${z}` });
  const machineTypes = (p: string, z: string) =>
    TPU_MACHINE_TYPES.map((mt) => ({
      kind: 'compute#machineType', name: mt.name, zone: z, selfLink: `${BASE}/projects/${p}/zones/${z}/machineTypes/${mt.name}`,
      description: `${mt.chips} ${familyInfo(mt.family)?.label ?? mt.family} chip${mt.chips === 1 ? '' : 's'}`,
    }));
  const images = (p: string) =>
    [...new Set(TPU_FAMILIES.map((f) => f.defaultImage))].map((family) => ({
      kind: 'compute#image', name: `${family}-v20250101`, family, status: 'READY', selfLink: `${BASE}/projects/${p}/global/images/${family}-v20250101`,
      description: 'TPU VM image (local emulator)',
    }));
  const findImage = (p: string, pred: (i: Json) => boolean, what: string) => {
    const hit = images(p).find(pred);
    if (!hit) throw new ApiError('NOT_FOUND', `The resource 'projects/${p}/global/images/${what}' was not found`, { reason: 'notFound' });
    return hit;
  };
  const zoneScopes = (_p: string) => opts.zones.map((z) => `zones/${z}`);
  const regionScopes = (_p: string) => regions().map((r) => `regions/${r}`);
  const aggregate = (kind: string, key: string, what: string, scopes: string[], itemsIn: (scope: string) => Json[]) => (m: string[], c: { query: URLSearchParams }) =>
    aggregatedPage(scopes.map((scope) => ({ scope, items: itemsIn(scope) })), key, c.query, kind, `${BASE}/projects/${checkProject(m[0])}/aggregated/${what}`);
  const under = (p: string, scope: string) => (x: Json) => String(x.selfLink).startsWith(`${BASE}/projects/${p}/${scope}/`);
  const ops = (p: string, scope: string): OperationJson[] => [...cs.operations.values()].filter(under(p, scope));
  const instanceGroups = (p: string, z: string): Json[] =>
    cs.groups.listMigs(p, z).map((mig) => ({
      kind: 'compute#instanceGroup', id: mig.id, name: mig.name, zone: `${BASE}/projects/${p}/zones/${z}`, creationTimestamp: mig.creationTimestamp,
      size: cs.groups.listManagedInstances(p, z, String(mig.name)).length, network: `${BASE}/projects/${p}/global/networks/default`,
      fingerprint: '42WmSpB8rSM=', selfLink: String(mig.instanceGroup ?? `${BASE}/projects/${p}/zones/${z}/instanceGroups/${String(mig.name)}`),
    }));
  const op = (scope: 'zones' | 'regions' | 'global') => (m: string[], wait: boolean) => {
    const s = scope === 'zones' ? { zone: checkZone(m[0], m[1]) } : scope === 'regions' ? { region: checkRegion(m[0], m[1]) } : (checkProject(m[0]), {});
    const name = scope === 'global' ? m[1] : m[2];
    return wait ? cs.waitOperation(m[0], s, name, WAIT_MS) : cs.getOperation(m[0], s, name);
  };
  return [
    // What gcloud and the client libraries call for a list without a zone (gcloud compute instances list, …).
    {
      verb: 'GET', re: new RegExp(`${P}/aggregated/instances$`), rpc: 'compute.instances.aggregatedList',
      handle: (m, c) => aggregate('compute#instanceAggregatedList', 'instances', 'instances', zoneScopes(m[0]), (s) => cs.listInstances(m[0], s.slice(6)))(m, c),
    },
    {
      verb: 'GET', re: new RegExp(`${P}/aggregated/instanceTemplates$`), rpc: 'compute.instanceTemplates.aggregatedList',
      handle: (m, c) => aggregate('compute#instanceTemplateAggregatedList', 'instanceTemplates', 'instanceTemplates', ['global', ...regionScopes(m[0])], (s) => [...cs.groups.templates.values()].filter(under(m[0], s)))(m, c),
    },
    {
      verb: 'GET', re: new RegExp(`${P}/aggregated/instanceGroupManagers$`), rpc: 'compute.instanceGroupManagers.aggregatedList',
      handle: (m, c) => aggregate('compute#instanceGroupManagerAggregatedList', 'instanceGroupManagers', 'instanceGroupManagers', [...regionScopes(m[0]), ...zoneScopes(m[0])], (s) => (s.startsWith('zones/') ? cs.groups.listMigs(m[0], s.slice(6)) : []))(m, c),
    },
    {
      verb: 'GET', re: new RegExp(`${P}/aggregated/resourcePolicies$`), rpc: 'compute.resourcePolicies.aggregatedList',
      handle: (m, c) => aggregate('compute#resourcePolicyAggregatedList', 'resourcePolicies', 'resourcePolicies', regionScopes(m[0]), (s) => [...cs.groups.policies.values()].filter(under(m[0], s)))(m, c),
    },
    {
      verb: 'GET', re: new RegExp(`${P}/aggregated/operations$`), rpc: 'compute.globalOperations.aggregatedList',
      handle: (m, c) => aggregate('compute#operationAggregatedList', 'operations', 'operations', ['global', ...regionScopes(m[0]), ...zoneScopes(m[0])], (s) => ops(m[0], s))(m, c),
    },
    {
      verb: 'GET', re: new RegExp(`${P}/aggregated/machineTypes$`), rpc: 'compute.machineTypes.aggregatedList',
      handle: (m, c) => aggregate('compute#machineTypeAggregatedList', 'machineTypes', 'machineTypes', zoneScopes(m[0]), (s) => machineTypes(m[0], s.slice(6)))(m, c),
    },
    { verb: 'GET', re: new RegExp(`${P}$`), rpc: 'compute.projects.get', handle: (m) => cs.getProject(checkProject(m[0])) },
    { verb: 'POST', re: new RegExp(`${P}/setCommonInstanceMetadata$`), rpc: 'compute.projects.setCommonInstanceMetadata', handle: (m, c) => cs.setCommonInstanceMetadata(checkProject(m[0]), standardFingerprints(c.body)) },
    { verb: 'GET', re: new RegExp(`${P}/zones$`), rpc: 'compute.zones.list', handle: (m, c) => page(opts.zones.map((z) => zoneJson(checkProject(m[0]), z)), c.query, 'compute#zoneList') },
    { verb: 'GET', re: new RegExp(`${Z}$`), rpc: 'compute.zones.get', handle: (m) => zoneJson(m[0], checkZone(m[0], m[1])) },
    { verb: 'GET', re: new RegExp(`${Z}/machineTypes$`), rpc: 'compute.machineTypes.list', handle: (m, c) => page(machineTypes(m[0], checkZone(m[0], m[1])), c.query, 'compute#machineTypeList') },
    {
      verb: 'GET', re: new RegExp(`${Z}/machineTypes/${SEG}$`), rpc: 'compute.machineTypes.get',
      handle: (m) => {
        const hit = machineTypes(m[0], checkZone(m[0], m[1])).find((t) => t.name === m[2]);
        if (!hit) throw new ApiError('NOT_FOUND', `The resource 'projects/${m[0]}/zones/${m[1]}/machineTypes/${m[2]}' was not found`, { reason: 'notFound' });
        return hit;
      },
    },
    // Images are public in Google's image projects; the emulator serves its TPU VM image under any project name.
    { verb: 'GET', re: new RegExp(`${G}/images$`), rpc: 'compute.images.list', handle: (m, c) => page(images(m[0]), c.query, 'compute#imageList') },
    { verb: 'GET', re: new RegExp(`${G}/images/family/${SEG}$`), rpc: 'compute.images.getFromFamily', handle: (m) => findImage(m[0], (i) => i.family === m[1], `family/${m[1]}`) },
    { verb: 'GET', re: new RegExp(`${G}/images/${SEG}$`), rpc: 'compute.images.get', handle: (m) => findImage(m[0], (i) => i.name === m[1], m[1]) },

    { verb: 'GET', re: new RegExp(`${Z}/instances$`), rpc: 'compute.instances.list', handle: (m, c) => page(cs.listInstances(m[0], checkZone(m[0], m[1])), c.query, 'compute#instanceList') },
    { verb: 'POST', re: new RegExp(`${Z}/instances$`), rpc: 'compute.instances.insert', handle: (m, c) => cs.insertInstance(m[0], checkZone(m[0], m[1]), canonicalBody(m[0], c.body)) },
    { verb: 'GET', re: new RegExp(`${Z}/instances/${SEG}$`), rpc: 'compute.instances.get', handle: (m) => cs.getInstance(m[0], checkZone(m[0], m[1]), m[2]) },
    { verb: 'DELETE', re: new RegExp(`${Z}/instances/${SEG}$`), rpc: 'compute.instances.delete', handle: (m) => cs.deleteInstance(m[0], checkZone(m[0], m[1]), m[2]) },
    { verb: 'POST', re: new RegExp(`${Z}/instances/${SEG}/start$`), rpc: 'compute.instances.start', handle: (m) => cs.startInstance(m[0], checkZone(m[0], m[1]), m[2]) },
    { verb: 'POST', re: new RegExp(`${Z}/instances/${SEG}/stop$`), rpc: 'compute.instances.stop', handle: (m) => cs.stopInstance(m[0], checkZone(m[0], m[1]), m[2]) },
    { verb: 'POST', re: new RegExp(`${Z}/instances/${SEG}/setMetadata$`), rpc: 'compute.instances.setMetadata', handle: (m, c) => cs.setMetadata(m[0], checkZone(m[0], m[1]), m[2], standardFingerprints(c.body)) },
    { verb: 'POST', re: new RegExp(`${Z}/instances/${SEG}/setLabels$`), rpc: 'compute.instances.setLabels', handle: (m, c) => cs.setLabels(m[0], checkZone(m[0], m[1]), m[2], standardFingerprints(c.body)) },

    { verb: 'GET', re: new RegExp(`${G}/instanceTemplates$`), rpc: 'compute.instanceTemplates.list', handle: (m, c) => page([...cs.groups.templates.values()].filter((t) => String(t.selfLink).startsWith(`${BASE}/projects/${checkProject(m[0])}/`)), c.query, 'compute#instanceTemplateList') },
    { verb: 'POST', re: new RegExp(`${G}/instanceTemplates$`), rpc: 'compute.instanceTemplates.insert', handle: (m, c) => cs.groups.insertTemplate(checkProject(m[0]), canonicalBody(m[0], c.body)) },
    { verb: 'GET', re: new RegExp(`${G}/instanceTemplates/${SEG}$`), rpc: 'compute.instanceTemplates.get', handle: (m) => cs.groups.getTemplate(checkProject(m[0]), m[1]) },
    { verb: 'DELETE', re: new RegExp(`${G}/instanceTemplates/${SEG}$`), rpc: 'compute.instanceTemplates.delete', handle: (m) => cs.groups.deleteTemplate(checkProject(m[0]), m[1]) },

    { verb: 'GET', re: new RegExp(`${R}/resourcePolicies$`), rpc: 'compute.resourcePolicies.list', handle: (m, c) => page([...cs.groups.policies.values()].filter((p) => String(p.selfLink).includes(`/projects/${m[0]}/regions/${checkRegion(m[0], m[1])}/`)), c.query, 'compute#resourcePolicyList') },
    { verb: 'POST', re: new RegExp(`${R}/resourcePolicies$`), rpc: 'compute.resourcePolicies.insert', handle: (m, c) => cs.groups.insertPolicy(m[0], checkRegion(m[0], m[1]), c.body) },
    { verb: 'GET', re: new RegExp(`${R}/resourcePolicies/${SEG}$`), rpc: 'compute.resourcePolicies.get', handle: (m) => cs.groups.getPolicy(m[0], checkRegion(m[0], m[1]), m[2]) },
    { verb: 'DELETE', re: new RegExp(`${R}/resourcePolicies/${SEG}$`), rpc: 'compute.resourcePolicies.delete', handle: (m) => cs.groups.deletePolicy(m[0], checkRegion(m[0], m[1]), m[2]) },

    // A MIG's instance group (gcloud's `instance-groups managed list` reads its size there); no autoscalers.
    { verb: 'GET', re: new RegExp(`${Z}/instanceGroups$`), rpc: 'compute.instanceGroups.list', handle: (m, c) => page(instanceGroups(m[0], checkZone(m[0], m[1])), c.query, 'compute#instanceGroupList') },
    {
      verb: 'GET', re: new RegExp(`${Z}/instanceGroups/${SEG}$`), rpc: 'compute.instanceGroups.get',
      handle: (m) => {
        const hit = instanceGroups(m[0], checkZone(m[0], m[1])).find((g) => g.name === m[2]);
        if (!hit) throw new ApiError('NOT_FOUND', `The resource 'projects/${m[0]}/zones/${m[1]}/instanceGroups/${m[2]}' was not found`, { reason: 'notFound' });
        return hit;
      },
    },
    {
      verb: 'GET', re: new RegExp(`${P}/aggregated/instanceGroups$`), rpc: 'compute.instanceGroups.aggregatedList',
      handle: (m, c) => aggregate('compute#instanceGroupAggregatedList', 'instanceGroups', 'instanceGroups', [...regionScopes(m[0]), ...zoneScopes(m[0])], (s) => (s.startsWith('zones/') ? instanceGroups(m[0], s.slice(6)) : []))(m, c),
    },
    { verb: 'GET', re: new RegExp(`${Z}/autoscalers$`), rpc: 'compute.autoscalers.list', handle: (m, c) => page([], (checkZone(m[0], m[1]), c.query), 'compute#autoscalerList') },
    { verb: 'GET', re: new RegExp(`${R}/autoscalers$`), rpc: 'compute.regionAutoscalers.list', handle: (m, c) => page([], (checkRegion(m[0], m[1]), c.query), 'compute#regionAutoscalerList') },
    {
      verb: 'GET', re: new RegExp(`${P}/aggregated/autoscalers$`), rpc: 'compute.autoscalers.aggregatedList',
      handle: (m, c) => aggregate('compute#autoscalerAggregatedList', 'autoscalers', 'autoscalers', [...regionScopes(m[0]), ...zoneScopes(m[0])], () => [])(m, c),
    },
    { verb: 'GET', re: new RegExp(`${Z}/instanceGroupManagers$`), rpc: 'compute.instanceGroupManagers.list', handle: (m, c) => page(cs.groups.listMigs(m[0], checkZone(m[0], m[1])), c.query, 'compute#instanceGroupManagerList') },
    { verb: 'POST', re: new RegExp(`${Z}/instanceGroupManagers$`), rpc: 'compute.instanceGroupManagers.insert', handle: (m, c) => cs.groups.insertMig(m[0], checkZone(m[0], m[1]), canonicalBody(m[0], c.body)) },
    { verb: 'GET', re: new RegExp(`${Z}/instanceGroupManagers/${SEG}$`), rpc: 'compute.instanceGroupManagers.get', handle: (m) => cs.groups.getMig(m[0], checkZone(m[0], m[1]), m[2]) },
    { verb: 'DELETE', re: new RegExp(`${Z}/instanceGroupManagers/${SEG}$`), rpc: 'compute.instanceGroupManagers.delete', handle: (m) => cs.groups.deleteMig(m[0], checkZone(m[0], m[1]), m[2]) },
    {
      verb: 'POST', re: new RegExp(`${Z}/instanceGroupManagers/${SEG}/listManagedInstances$`), rpc: 'compute.instanceGroupManagers.listManagedInstances',
      handle: (m, c) => page(cs.groups.listManagedInstances(m[0], checkZone(m[0], m[1]), m[2]), c.query, undefined, 'managedInstances'),
    },
    {
      verb: 'POST', re: new RegExp(`${Z}/instanceGroupManagers/${SEG}/resize$`), rpc: 'compute.instanceGroupManagers.resize',
      handle: (m, c) => cs.groups.resizeMig(m[0], checkZone(m[0], m[1]), m[2], Number(c.query.get('size') ?? 'NaN')),
    },

    { verb: 'GET', re: new RegExp(`${Z}/operations$`), rpc: 'compute.zoneOperations.list', handle: (m, c) => page(ops(m[0], `zones/${checkZone(m[0], m[1])}`), c.query, 'compute#operationList') },
    { verb: 'GET', re: new RegExp(`${R}/operations$`), rpc: 'compute.regionOperations.list', handle: (m, c) => page(ops(m[0], `regions/${checkRegion(m[0], m[1])}`), c.query, 'compute#operationList') },
    { verb: 'GET', re: new RegExp(`${G}/operations$`), rpc: 'compute.globalOperations.list', handle: (m, c) => page(ops(checkProject(m[0]), 'global'), c.query, 'compute#operationList') },
    { verb: 'GET', re: new RegExp(`${Z}/operations/${SEG}$`), rpc: 'compute.zoneOperations.get', handle: (m) => op('zones')(m, false) },
    { verb: 'POST', re: new RegExp(`${Z}/operations/${SEG}/wait$`), rpc: 'compute.zoneOperations.wait', handle: (m) => op('zones')(m, true) },
    { verb: 'GET', re: new RegExp(`${R}/operations/${SEG}$`), rpc: 'compute.regionOperations.get', handle: (m) => op('regions')(m, false) },
    { verb: 'POST', re: new RegExp(`${R}/operations/${SEG}/wait$`), rpc: 'compute.regionOperations.wait', handle: (m) => op('regions')(m, true) },
    { verb: 'GET', re: new RegExp(`${G}/operations/${SEG}$`), rpc: 'compute.globalOperations.get', handle: (m) => op('global')(m, false) },
    { verb: 'POST', re: new RegExp(`${G}/operations/${SEG}/wait$`), rpc: 'compute.globalOperations.wait', handle: (m) => op('global')(m, true) },

    // Test-only: Compute Engine ends a spot or flex-start VM (its instanceTerminationAction decides what is left).
    {
      verb: 'POST', re: new RegExp(`^/emulator/v1/compute/projects/${SEG}/zones/${SEG}/instances/${SEG}:preempt$`), rpc: 'ComputePreempt',
      handle: (m) => cs.preempt(m[0], checkZone(m[0], m[1]), m[2]),
    },
  ];
}

/**
 * Fingerprints in the standard base64 alphabet: gcloud (apitools) sends a `bytes` field URL-safe encoded
 * (`-`, `_`), which Compute Engine takes as the same fingerprint.
 */
function standardFingerprints(body: Record<string, unknown>): Record<string, unknown> {
  const std = (v: unknown) => (typeof v === 'string' ? v.replace(/-/g, '+').replace(/_/g, '/') : v);
  return { ...body, ...(body.fingerprint !== undefined ? { fingerprint: std(body.fingerprint) } : {}), ...(body.labelFingerprint !== undefined ? { labelFingerprint: std(body.labelFingerprint) } : {}) };
}

/** An insert's links as Compute Engine keeps them (a network, a template, a workload policy in any form a client sends). */
function canonicalBody(project: string, body: Record<string, unknown>): Record<string, unknown> {
  const nics = (list: unknown) =>
    Array.isArray(list) ? list.map((n: Json) => ({ ...n, network: canonicalLink(project, n.network ?? 'global/networks/default'), ...(n.subnetwork ? { subnetwork: canonicalLink(project, n.subnetwork) } : {}) })) : list;
  const disks = (list: unknown) =>
    Array.isArray(list)
      ? list.map((d: Json) => {
          const init = d.initializeParams as Json | undefined;
          const disk = { type: 'PERSISTENT', mode: 'READ_WRITE', ...d };
          return init?.sourceImage ? { ...disk, initializeParams: { ...init, sourceImage: canonicalLink(project, init.sourceImage) } } : disk;
        })
      : list;
  // Compute Engine answers with its defaults filled in (no IP forwarding, read-write persistent disks).
  const vm = (x: Json): Json => ({ canIpForward: false, ...x, ...(x.networkInterfaces ? { networkInterfaces: nics(x.networkInterfaces) } : {}), ...(x.disks ? { disks: disks(x.disks) } : {}) });
  const out: Json = vm(body);
  if (body.properties && typeof body.properties === 'object') out.properties = vm(body.properties as Json);
  if (body.instanceTemplate) out.instanceTemplate = canonicalLink(project, body.instanceTemplate);
  const rp = body.resourcePolicies as Json | undefined;
  if (rp?.workloadPolicy) out.resourcePolicies = { ...rp, workloadPolicy: canonicalLink(project, rp.workloadPolicy) };
  if (Array.isArray(body.versions)) out.versions = body.versions.map((v: Json) => ({ ...v, ...(v.instanceTemplate ? { instanceTemplate: canonicalLink(project, v.instanceTemplate) } : {}) }));
  return out;
}

/** A zone's region: us-central1-a → us-central1. */
export function regionOf(zone: string): string {
  return zone.replace(/-[a-z]$/, '');
}
