import * as crypto from 'node:crypto';
import { ApiError, type NodeJson, type OperationJson } from './types';

/**
 * Pieces of Cloud TPU v2 that rest.ts routes but that are not node or queued-resource state: query-parameter
 * parsing as Google's front end does it, the operations filter, guest attributes and the service identity.
 */

/** A bool query parameter as Google's front end reads it: true/True/1 and false/False/0; else 400. */
export function boolParam(q: URLSearchParams, name: string): boolean {
  const v = q.get(name);
  if (v === null || v === '') return false;
  if (v === 'true' || v === 'True' || v === '1') return true;
  if (v === 'false' || v === 'False' || v === '0') return false;
  throw new ApiError('INVALID_ARGUMENT', `Invalid value at '${name}' (TYPE_BOOL), "${v}"`);
}

/** A path segment with its %-escapes decoded; a malformed escape is the client's error, not the server's. */
export function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new ApiError('INVALID_ARGUMENT', `Invalid URL: "${segment}" has a malformed %-escape.`);
  }
}

/** Cloud TPU refuses to stop a multi-host slice (only single-host TPU VMs can be stopped). */
export function checkStoppable(node: NodeJson): void {
  if (node.networkEndpoints.length > 1) {
    throw new ApiError(
      'FAILED_PRECONDITION',
      `Cloud TPU received a bad request: stopping is not supported for multi-host TPU slices; node '${node.name}' ` +
        `(${node.acceleratorType}) has ${node.networkEndpoints.length} workers. Delete it instead, or use a single-host accelerator type.`,
    );
  }
}

type OpField = 'name' | 'done' | 'metadata.verb' | 'metadata.target';
const OP_FIELDS: Record<OpField, (o: OperationJson) => string> = {
  name: (o) => o.name,
  done: (o) => String(o.done),
  'metadata.verb': (o) => o.metadata.verb,
  'metadata.target': (o) => o.metadata.target,
};

/**
 * ListOperations' filter: AIP-160 comparisons `field = value` / `field != value` joined by AND, on the fields
 * clients filter operations by (done, name, metadata.verb, metadata.target). Anything else is refused by name.
 */
export function operationFilter(filter: string): (o: OperationJson) => boolean {
  const text = filter.trim();
  if (!text) return () => true;
  const terms = text.split(/\s+AND\s+/).map((t) => {
    const m = /^([a-zA-Z.]+)\s*(!=|=)\s*(?:"([^"]*)"|([^\s"]+))$/.exec(t.trim());
    const field = m?.[1] as OpField | undefined;
    if (!m || !field || !(field in OP_FIELDS)) {
      throw new ApiError(
        'INVALID_ARGUMENT',
        `Invalid filter "${filter}": expected comparisons like done = false AND metadata.verb = "create", on ${Object.keys(OP_FIELDS).join(', ')}.`,
      );
    }
    const value = m[3] ?? m[4];
    const get = OP_FIELDS[field];
    return m[2] === '=' ? (o: OperationJson) => get(o) === value : (o: OperationJson) => get(o) !== value;
  });
  return (o) => terms.every((t) => t(o));
}

/** google.cloud.tpu.v2.GuestAttributes of one worker. */
export interface GuestAttributesJson {
  queryPath: string;
  queryValue: { items: { namespace: string; key: string; value: string }[] };
}

/**
 * GetGuestAttributes: one entry per worker (all, or those `workerIds` names), in worker order. A TPU VM's
 * guest agent publishes its SSH host keys under the `hostkeys` namespace (key: the key type, value: the
 * base64 blob), which is how gcloud learns a worker's host key; the emulator's workers share one host key.
 */
export function guestAttributes(node: NodeJson, hostPublicKey: string | undefined, queryPath: string, workerIds: string[]): GuestAttributesJson[] {
  const workers = node.networkEndpoints.map((_, i) => i);
  for (const w of workerIds) {
    if (!/^\d+$/.test(w) || Number(w) >= workers.length) {
      throw new ApiError('INVALID_ARGUMENT', `Invalid worker id "${w}": node '${node.name}' has workers 0-${workers.length - 1}.`);
    }
  }
  if (node.state !== 'READY') {
    throw new ApiError('FAILED_PRECONDITION', `Guest attributes of node '${node.name}' are available only while it is READY (it is ${node.state}).`);
  }
  const [keyType, blob] = (hostPublicKey ?? '').trim().split(/\s+/);
  const all = keyType && blob ? [{ namespace: 'hostkeys', key: keyType, value: blob }] : [];
  // "", "/", "ns/", "/ns/" or "/ns/key".
  const [ns, key] = queryPath.replace(/^\/+/, '').split('/');
  const items = all.filter((i) => (!ns || i.namespace === ns) && (!key || i.key === key));
  const chosen = workerIds.length > 0 ? workerIds.map(Number) : workers;
  return chosen.map(() => ({ queryPath, queryValue: { items: items.map((i) => ({ ...i })) } }));
}

/**
 * GenerateServiceIdentity: Cloud TPU's service agent of the project, `service-<project number>@cloud-tpu…`.
 * The emulator's projects have no numbers, so one is derived from the id (stable across runs).
 */
export function serviceIdentity(project: string): { identity: { email: string } } {
  const digits = BigInt(`0x${crypto.createHash('sha256').update(project).digest('hex').slice(0, 12)}`) % 10n ** 12n;
  const number = (digits + 10n ** 11n).toString().slice(0, 12);
  return { identity: { email: `service-${number}@cloud-tpu.iam.gserviceaccount.com` } };
}
