import * as fs from 'node:fs';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import type { KubeObject } from './kube-client';

/**
 * JobSet and Kueue as their own release manifests install them (`config/default` rendered by kustomize, which
 * is the `manifests.yaml` of each project's release and what xpk applies), with what a cluster without a pod
 * network needs changed: the webhook servers run beside the API server on loopback, so every `clientConfig` that
 * names a Service names its URL instead (https://127.0.0.1:<port><path>, with the cluster CA as caBundle); the
 * Deployments, Services and cert Secrets (the controllers run as processes of the emulator, with certificates
 * from the cluster CA) and Kueue's visibility APIService (aggregation needs routing to a Service) are left out.
 */

export interface Addon {
  /** The objects to apply, in order (namespaces and CRDs first). */
  objects: KubeObject[];
  /** The controller's own configuration from the release's ConfigMap (controller_manager_config.yaml). */
  config: Record<string, unknown>;
}

const SKIPPED_KINDS = new Set(['Deployment', 'Service', 'Secret', 'ConfigMap', 'APIService']);
const KIND_ORDER = ['Namespace', 'CustomResourceDefinition', 'ServiceAccount', 'ClusterRole', 'Role', 'ClusterRoleBinding', 'RoleBinding'];

export function loadAddon(manifestFile: string, webhookUrl: string, caBundle: string): Addon {
  const docs = parseAllDocuments(fs.readFileSync(manifestFile, 'utf8'))
    .map((d) => d.toJSON() as KubeObject | null)
    .filter((d): d is KubeObject => d !== null && typeof d === 'object' && typeof d.kind === 'string');
  let config: Record<string, unknown> = {};
  for (const d of docs) {
    const data = (d as { data?: Record<string, string> }).data;
    if (d.kind === 'ConfigMap' && data?.['controller_manager_config.yaml']) {
      config = parseYaml(data['controller_manager_config.yaml']) as Record<string, unknown>;
    }
  }
  const objects = docs
    .filter((d) => !SKIPPED_KINDS.has(d.kind ?? ''))
    .map((d) => pointWebhooksAt(d, webhookUrl, caBundle))
    .sort((a, b) => rank(a.kind) - rank(b.kind));
  return { objects, config };
}

function rank(kind: string | undefined): number {
  const i = KIND_ORDER.indexOf(kind ?? '');
  return i < 0 ? KIND_ORDER.length : i;
}

type ClientConfig = { service?: { path?: string }; url?: string; caBundle?: string };

/** Every `clientConfig` naming a Service, in webhook configurations and CRD conversion, names `base`+path. */
function pointWebhooksAt(obj: KubeObject, base: string, caBundle: string): KubeObject {
  const fix = (cc: ClientConfig | undefined): ClientConfig | undefined => {
    if (!cc?.service) return cc;
    return { url: `${base}${cc.service.path ?? '/'}`, caBundle };
  };
  if (obj.kind === 'MutatingWebhookConfiguration' || obj.kind === 'ValidatingWebhookConfiguration') {
    const hooks = (obj.webhooks as { clientConfig?: ClientConfig }[] | undefined) ?? [];
    return { ...obj, webhooks: hooks.map((h) => ({ ...h, clientConfig: fix(h.clientConfig) })) };
  }
  if (obj.kind === 'CustomResourceDefinition') {
    const spec = obj.spec as { conversion?: { strategy?: string; webhook?: { clientConfig?: ClientConfig } } };
    const wh = spec.conversion?.webhook;
    if (spec.conversion?.strategy === 'Webhook' && wh) {
      return { ...obj, spec: { ...spec, conversion: { ...spec.conversion, webhook: { ...wh, clientConfig: fix(wh.clientConfig) } } } };
    }
    // cert-manager's CA injection annotation means nothing here.
  }
  return obj;
}

/** The REST collection of an object, for the kinds the add-ons and the emulator create. */
export function collectionOf(obj: KubeObject): string {
  const ns = obj.metadata.namespace;
  const [group, version] = (obj.apiVersion ?? 'v1').includes('/') ? (obj.apiVersion ?? '').split('/') : ['', obj.apiVersion ?? 'v1'];
  const plural = PLURALS[obj.kind ?? ''];
  if (!plural) throw new Error(`the emulator does not know where a ${obj.kind} goes`);
  const base = group ? `/apis/${group}/${version}` : `/api/${version}`;
  return ns ? `${base}/namespaces/${ns}/${plural}` : `${base}/${plural}`;
}

const PLURALS: Record<string, string> = {
  Namespace: 'namespaces',
  CustomResourceDefinition: 'customresourcedefinitions',
  ServiceAccount: 'serviceaccounts',
  ClusterRole: 'clusterroles',
  Role: 'roles',
  ClusterRoleBinding: 'clusterrolebindings',
  RoleBinding: 'rolebindings',
  MutatingWebhookConfiguration: 'mutatingwebhookconfigurations',
  ValidatingWebhookConfiguration: 'validatingwebhookconfigurations',
  ConfigMap: 'configmaps',
  Secret: 'secrets',
  Node: 'nodes',
  PriorityClass: 'priorityclasses',
  ResourceFlavor: 'resourceflavors',
  ClusterQueue: 'clusterqueues',
  LocalQueue: 'localqueues',
};
