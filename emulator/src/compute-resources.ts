import * as crypto from 'node:crypto';
import { familyInfo, machineTypeInfo } from '../../protocol/tpu-machine-types';
import { checkLabels, checkMetadataItems } from './labels-metadata';
import { RESOURCE_ID_PATTERN } from './names';
import { ApiError } from './types';

/**
 * Compute Engine's resources as the emulator holds them (compute/v1 REST JSON), and the checks and small values
 * compute-state.ts and compute-groups.ts share: names, machine types, labels and metadata, ids, times.
 */

export type InstanceStatus = 'PROVISIONING' | 'STAGING' | 'RUNNING' | 'STOPPING' | 'TERMINATED';
export type Json = Record<string, unknown>;

export interface InstanceJson extends Json {
  kind: 'compute#instance';
  id: string;
  name: string;
  zone: string;
  machineType: string;
  status: InstanceStatus;
  selfLink: string;
  creationTimestamp: string;
  networkInterfaces: ({ name: string; network: string; networkIP: string } & Json)[];
  metadata: { kind: 'compute#metadata'; fingerprint: string; items: { key: string; value: string }[] };
  scheduling: Json;
  labels: Record<string, string>;
}

export interface OperationJson extends Json {
  kind: 'compute#operation';
  id: string;
  name: string;
  operationType: string;
  targetLink: string;
  status: 'PENDING' | 'RUNNING' | 'DONE';
  progress: number;
  insertTime: string;
  selfLink: string;
  zone?: string;
  region?: string;
  endTime?: string;
  error?: { errors: { code: string; message: string }[] };
  httpErrorStatusCode?: number;
  httpErrorMessage?: string;
}

/** Where a worker of an instance sits in its slice (the SSH pool's view). */
export interface InstanceWorker {
  /** Key of the instance's SSH worker and sandbox: `compute/<project>/<zone>/<instance>` (names.ts); "ce-<instance>" in states of older versions. */
  key: string;
  index: number;
  address: string;
  /** Every worker address of the slice, in worker order. */
  hostnames: string[];
  acceleratorType: string;
}

export type MetadataJson = InstanceJson['metadata'];

export const BASE = 'https://compute.googleapis.com/compute/v1';

/** An operation the previous emulator left running on an instance: done, saying it may be half done. */
export function interrupted(o: OperationJson): Partial<OperationJson> {
  const message = `The local emulator stopped before this ${o.operationType} operation finished; it may be half done: look at the instance and repeat the request.`;
  return { status: 'DONE', progress: 100, endTime: now(), error: { errors: [{ code: 'ABORTED', message }] }, httpErrorStatusCode: 409, httpErrorMessage: 'CONFLICT' };
}

export function instanceParts(selfLink: string): { project: string; zone: string } {
  const m = /\/projects\/([^/]+)\/zones\/([^/]+)\/instances\//.exec(selfLink);
  return { project: m?.[1] ?? '', zone: m?.[2] ?? '' };
}

export function scopePath(scope: { zone?: string; region?: string }): string {
  if (scope.zone) return `zones/${scope.zone}`;
  if (scope.region) return `regions/${scope.region}`;
  return 'global';
}

export function checkName(v: unknown, what: string): string {
  const name = typeof v === 'string' ? v : '';
  if (!name) throw new ApiError('INVALID_ARGUMENT', `Required field 'resource.name' not specified (${what}).`, { reason: 'required' });
  if (!RESOURCE_ID_PATTERN.test(name)) throw new ApiError('INVALID_ARGUMENT', `Invalid value for field 'resource.name': '${name}'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'`, { reason: 'invalid' });
  return name;
}

/** A machine type URL, partial URL or name → a TPU machine type the emulator serves; 400 otherwise. */
export function tpuMachineType(v: unknown): { name: string; family: string; chips: number } {
  const raw = typeof v === 'string' ? v : '';
  const name = raw.slice(raw.lastIndexOf('/') + 1);
  const mt = machineTypeInfo(name);
  if (!mt) throw new ApiError('INVALID_ARGUMENT', `Invalid value for field 'resource.machineType': '${raw}'. Machine type with name '${name}' does not exist in zone (the local emulator serves TPU machine types only).`, { reason: 'invalid' });
  return mt;
}

/** The accelerator type of one VM of `machineType` (tpu7x-standard-4t → tpu7x-8). */
export function singleHostType(machineType: string): string {
  const mt = machineTypeInfo(machineType);
  const f = mt ? familyInfo(mt.family) : undefined;
  return mt && f ? `${f.family}-${mt.chips * f.suffixPerChip}` : machineType;
}

/** The labels and metadata of an instance (or a template's instance properties), checked as Compute Engine does. */
export function checkInstanceBody(body: Json, prefix = 'resource'): void {
  checkLabels(body.labels, `${prefix}.labels`);
  checkMetadataItems((body.metadata as Json | undefined)?.items, `${prefix}.metadata.items`);
}

export function metadataItems(v: unknown): { key: string; value: string }[] {
  if (!Array.isArray(v)) return [];
  return v.filter((x): x is { key: string; value: string } => !!x && typeof (x as Json).key === 'string').map((x) => ({ key: x.key, value: String(x.value ?? '') }));
}

export function notFound(resource: string): ApiError {
  return new ApiError('NOT_FOUND', `The resource '${resource}' was not found`, { reason: 'notFound' });
}

export function newId(): string {
  return (BigInt.asUintN(63, crypto.randomBytes(8).readBigUInt64BE()) || 1n).toString();
}

export function fingerprint(): string {
  return crypto.randomBytes(8).toString('base64');
}

export function now(): string {
  return new Date().toISOString();
}
