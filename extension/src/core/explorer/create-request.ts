import type { CreateNodeRequest, CreateQueuedResourceRequest } from '../tpu/api';
import { NODE_ID_PATTERN } from '../tpu/models';
import type { ProvisioningModel } from './node-status';
import { parseValidUntil as parseValidUntilTime } from '../tpu/valid-until';

/**
 * The create wizard's answers and their validation, without any UI: the VS Code wizard asks, this checks and
 * turns the answers into the API request (and, through gcloud-command.ts, the equivalent gcloud line).
 */
export interface CreateAnswers {
  name: string;
  zone: string;
  acceleratorType: string;
  runtimeVersion: string;
  provisioning: ProvisioningModel;
  /** Contents of the startup script file, if one was picked. */
  startupScript?: string;
  labels: Record<string, string>;
  /** Persistent disk resource name (projects/p/zones/z/disks/d). */
  dataDisk?: string;
  /** Create through a queued resource instead of directly. */
  queued?: { tier: 'spot' | 'guaranteed'; validUntil?: string };
}

/** Why `value` is not a valid new node ID, or undefined if it is; the reason is shown as the user types. */
export function validateNodeId(value: string, taken: ReadonlySet<string> = new Set()): string | undefined {
  if (value.length === 0) return 'Enter a name for the TPU VM.';
  if (value.length > 63) return `The name is ${value.length} characters long; at most 63 are allowed.`;
  if (!/^[a-z]/.test(value)) return 'Use lowercase letters, digits and hyphens; the name must start with a lowercase letter.';
  if (value.endsWith('-')) return 'Use lowercase letters, digits and hyphens; the name must not end with a hyphen.';
  if (!NODE_ID_PATTERN.test(value)) {
    const bad = [...value].find((c) => !/[-a-z0-9]/.test(c)) ?? '';
    return `Use lowercase letters, digits and hyphens only ("${bad}" is not allowed), e.g. "my-tpu-1".`;
  }
  if (taken.has(value)) return `A TPU VM named "${value}" already exists in this zone.`;
  return undefined;
}

/** Suggests `tpu-vm-N` with the first N not taken. */
export function suggestNodeId(taken: ReadonlySet<string>, base = 'tpu-vm'): string {
  for (let i = 1; ; i++) if (!taken.has(`${base}-${i}`)) return `${base}-${i}`;
}

/**
 * The runtime Google's docs use for each generation (cloud.google.com/tpu/docs/runtimes): the one the wizard
 * preselects. undefined for types it does not know.
 */
export function recommendedRuntime(acceleratorType: string): string | undefined {
  if (acceleratorType.startsWith('v6e')) return 'v2-alpha-tpuv6e';
  if (acceleratorType.startsWith('v5litepod') || acceleratorType.startsWith('v5e')) return 'v2-alpha-tpuv5-lite';
  if (acceleratorType.startsWith('v5p')) return 'v2-alpha-tpuv5';
  if (acceleratorType.startsWith('v4')) return 'tpu-ubuntu2204-base';
  return undefined;
}

/** Sorts v5litepod-8 before v5litepod-16: by family, then by the size as a number. */
export function compareAcceleratorTypes(a: string, b: string): number {
  const pa = /^(.*?)-(\d+)$/.exec(a);
  const pb = /^(.*?)-(\d+)$/.exec(b);
  if (pa && pb && pa[1] === pb[1]) return Number(pa[2]) - Number(pb[2]);
  return a.localeCompare(b);
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

/** Label keys and values as GCP allows them: lowercase letters, digits, `_` and `-`, at most 63; keys start with a letter. */
const LABEL_KEY = /^[a-z][a-z0-9_-]{0,62}$/;
const LABEL_VALUE = /^[a-z0-9_-]{0,63}$/;

/** "team=ml, env=dev" → {team: 'ml', env: 'dev'}; empty text → {}. */
export function parseLabels(text: string): Parsed<Record<string, string>> {
  const labels: Record<string, string> = {};
  const parts = text
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p.length > 0);
  for (const p of parts) {
    const eq = p.indexOf('=');
    if (eq <= 0) return { ok: false, error: `"${p}" is not key=value.` };
    const key = p.slice(0, eq).trim();
    const value = p.slice(eq + 1).trim();
    if (!LABEL_KEY.test(key)) return { ok: false, error: `Label key "${key}": use lowercase letters, digits, "_" and "-", starting with a letter.` };
    if (!LABEL_VALUE.test(value)) return { ok: false, error: `Label value "${value}" (of ${key}): use lowercase letters, digits, "_" and "-".` };
    if (key in labels) return { ok: false, error: `Label "${key}" is given twice.` };
    labels[key] = value;
  }
  if (Object.keys(labels).length > 64) return { ok: false, error: 'At most 64 labels are allowed.' };
  return { ok: true, value: labels };
}

export function formatLabels(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/**
 * The wizard's valid-until field: empty means no limit; otherwise the core parser's rules (a duration such as
 * 6h / 1d12h / 90m, or an RFC 3339 time), its message shown as the validation error.
 */
export function parseValidUntil(text: string, now: Date = new Date()): Parsed<string | undefined> {
  if (text.trim() === '') return { ok: true, value: undefined };
  try {
    return { ok: true, value: parseValidUntilTime(text, now) };
  } catch (e) {
    return { ok: false, error: e instanceof Error ? e.message : String(e) };
  }
}

/** A disk name ("my-data") in the VM's project and zone, or a full projects/…/zones/…/disks/… name. */
export function parseDataDisk(text: string, project: string, zone: string): Parsed<string | undefined> {
  const t = text.trim();
  if (t === '') return { ok: true, value: undefined };
  if (/^projects\/[^/\s]+\/zones\/[^/\s]+\/disks\/[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/.test(t)) return { ok: true, value: t };
  if (NODE_ID_PATTERN.test(t)) return { ok: true, value: `projects/${project}/zones/${zone}/disks/${t}` };
  return { ok: false, error: 'Enter a persistent disk name (e.g. "my-data") or projects/PROJECT/zones/ZONE/disks/DISK.' };
}

/** The CreateNode request for the answers (also the node spec of a queued resource). */
export function createNodeRequest(project: string, a: CreateAnswers): CreateNodeRequest {
  const req: CreateNodeRequest = { project, zone: a.zone, nodeId: a.name, acceleratorType: a.acceleratorType, runtimeVersion: a.runtimeVersion };
  if (a.provisioning === 'spot') req.spot = true;
  if (a.provisioning === 'reserved') req.reserved = true;
  if (a.startupScript !== undefined) req.startupScript = a.startupScript;
  if (Object.keys(a.labels).length > 0) req.labels = { ...a.labels };
  if (a.dataDisk) req.dataDisks = [{ sourceDisk: a.dataDisk, mode: 'READ_WRITE' }];
  return req;
}

/** The CreateQueuedResource request; the queued resource is named after the node it creates. */
export function createQueuedRequest(project: string, a: CreateAnswers): CreateQueuedResourceRequest {
  const tier = a.queued?.tier ?? 'guaranteed';
  // spot is expressed by the tier; project and zone belong to the queued resource.
  const { project: _p, zone: _z, spot: _s, ...node } = createNodeRequest(project, { ...a, provisioning: a.provisioning === 'spot' ? 'on-demand' : a.provisioning });
  const req: CreateQueuedResourceRequest = { project, zone: a.zone, queuedResourceId: a.name, node, tier };
  if (a.queued?.validUntil) req.validUntil = a.queued.validUntil;
  return req;
}
