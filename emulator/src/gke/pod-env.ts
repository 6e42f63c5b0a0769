/**
 * A container's environment as the kubelet makes it: `envFrom` sources in order, then `env` in order, each value
 * with `$(VAR)` expanded against what is defined before it (`$$` is a literal `$`; an unknown reference stays as
 * written), `valueFrom` resolved against the pod, its node, and the Secrets and ConfigMaps of its namespace.
 * Pure: the kubelet stand-in fetches the Secrets and ConfigMaps and hands them in.
 */

export interface EnvVarSpec {
  name: string;
  value?: string;
  valueFrom?: {
    fieldRef?: { fieldPath: string };
    resourceFieldRef?: { containerName?: string; resource: string; divisor?: string };
    secretKeyRef?: { name: string; key: string; optional?: boolean };
    configMapKeyRef?: { name: string; key: string; optional?: boolean };
  };
}
export interface EnvFromSpec {
  prefix?: string;
  secretRef?: { name: string; optional?: boolean };
  configMapRef?: { name: string; optional?: boolean };
}
export interface ContainerSpec {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  env?: EnvVarSpec[];
  envFrom?: EnvFromSpec[];
  resources?: { limits?: Record<string, string | number>; requests?: Record<string, string | number> };
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean; subPath?: string }[];
}
export interface PodView {
  metadata: { name: string; namespace: string; uid: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: { nodeName?: string; serviceAccountName?: string; hostname?: string; subdomain?: string };
  status?: { podIP?: string; hostIP?: string };
}
/** Keys → values (Secrets' already decoded). */
export type DataSource = (kind: 'Secret' | 'ConfigMap', name: string) => Record<string, string> | undefined;

export class EnvError extends Error {}

export function containerEnv(pod: PodView, c: ContainerSpec, sources: DataSource): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of c.envFrom ?? []) {
    const kind = from.secretRef ? 'Secret' : 'ConfigMap';
    const ref = from.secretRef ?? from.configMapRef;
    if (!ref) continue;
    const data = sources(kind, ref.name);
    if (!data) {
      if (ref.optional) continue;
      throw new EnvError(`${kind} "${ref.name}" not found`);
    }
    for (const [k, v] of Object.entries(data)) env[`${from.prefix ?? ''}${k}`] = v;
  }
  for (const e of c.env ?? []) {
    if (e.valueFrom) {
      const v = valueFrom(pod, c, e, sources);
      if (v !== undefined) env[e.name] = v;
    } else {
      env[e.name] = expand(e.value ?? '', env);
    }
  }
  return env;
}

/** `$(NAME)` → its value where defined; `$$` → `$`. */
export function expand(text: string, env: Record<string, string>): string {
  return text.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (m, name: string | undefined) => {
    if (m === '$$') return '$';
    return name !== undefined && name in env ? env[name] : m;
  });
}

function valueFrom(pod: PodView, c: ContainerSpec, e: EnvVarSpec, sources: DataSource): string | undefined {
  const vf = e.valueFrom ?? {};
  if (vf.fieldRef) return fieldValue(pod, vf.fieldRef.fieldPath);
  const keyRef = vf.secretKeyRef ?? vf.configMapKeyRef;
  if (keyRef) {
    const kind = vf.secretKeyRef ? 'Secret' : 'ConfigMap';
    const data = sources(kind, keyRef.name);
    const v = data?.[keyRef.key];
    if (v === undefined && !keyRef.optional) throw new EnvError(`${kind} "${keyRef.name}" has no key "${keyRef.key}" (for ${e.name})`);
    return v;
  }
  if (vf.resourceFieldRef) return resourceValue(c, vf.resourceFieldRef.resource, vf.resourceFieldRef.divisor);
  return undefined;
}

/** The downward API's field paths (fieldRef and downwardAPI volumes). */
export function fieldValue(pod: PodView, fieldPath: string): string {
  const m = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(fieldPath);
  if (m) return (m[1] === 'labels' ? pod.metadata.labels : pod.metadata.annotations)?.[m[2]] ?? '';
  const map = (o: Record<string, string> | undefined) => Object.entries(o ?? {}).map(([k, v]) => `${k}="${v}"`).join('\n');
  switch (fieldPath) {
    case 'metadata.name':
      return pod.metadata.name;
    case 'metadata.namespace':
      return pod.metadata.namespace;
    case 'metadata.uid':
      return pod.metadata.uid;
    case 'metadata.labels':
      return map(pod.metadata.labels);
    case 'metadata.annotations':
      return map(pod.metadata.annotations);
    case 'spec.nodeName':
      return pod.spec.nodeName ?? '';
    case 'spec.serviceAccountName':
      return pod.spec.serviceAccountName ?? '';
    case 'status.hostIP':
    case 'status.hostIPs':
      return pod.status?.hostIP ?? '';
    case 'status.podIP':
    case 'status.podIPs':
      return pod.status?.podIP ?? '';
    default:
      throw new EnvError(`unsupported fieldPath "${fieldPath}"`);
  }
}

/** limits.cpu / requests.memory …, in units of the divisor (default 1), rounded up as the kubelet does. */
function resourceValue(c: ContainerSpec, resource: string, divisor = '1'): string {
  const [kind, name] = resource.split('.');
  const q = (kind === 'limits' ? c.resources?.limits : c.resources?.requests)?.[name] ?? (kind === 'requests' ? c.resources?.limits?.[name] : undefined);
  if (q === undefined) return '0';
  return String(Math.ceil(quantity(String(q)) / quantity(divisor)));
}

const SUFFIX: Record<string, number> = {
  m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4, Pi: 1024 ** 5,
};

/** A Kubernetes quantity ("500m", "4Gi", "2") as a number. */
export function quantity(q: string): number {
  const m = /^([0-9.]+)([a-zA-Z]*)$/.exec(q.trim());
  if (!m) return Number.NaN;
  return Number(m[1]) * (m[2] ? (SUFFIX[m[2]] ?? Number.NaN) : 1);
}
