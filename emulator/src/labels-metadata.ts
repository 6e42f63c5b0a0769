import { ApiError } from './types';

/**
 * Labels and metadata as Google's APIs check them (Compute Engine's and Cloud TPU's alike), so that a client
 * sending something the real API refuses is refused here too, by field, instead of having it kept silently:
 * - a label key is 1–63 characters: lowercase letters, digits, `_` and `-`, starting with a lowercase letter; a
 *   value is 0–63 of the same characters; at most 64 labels
 *   (https://cloud.google.com/compute/docs/labeling-resources#requirements);
 * - a metadata key is 1–128 characters of letters, digits, `_` and `-`; a value is a string of at most 256 KB;
 *   all of a resource's metadata at most 512 KB (https://cloud.google.com/compute/docs/metadata/setting-custom-metadata#limitations).
 */

const LABEL_KEY = /^[a-z][a-z0-9_-]{0,62}$/;
const LABEL_VALUE = /^[a-z0-9_-]{0,63}$/;
const MAX_LABELS = 64;
const METADATA_KEY = /^[a-zA-Z0-9_-]{1,128}$/;
const MAX_VALUE_BYTES = 256 * 1024;
const MAX_TOTAL_BYTES = 512 * 1024;

function invalid(field: string, message: string): ApiError {
  return new ApiError('INVALID_ARGUMENT', `Invalid value for field '${field}': ${message}`, { reason: 'invalid' });
}

/** A labels map (absent: none), or 400 naming the field and the label at fault. */
export function checkLabels(v: unknown, field: string): Record<string, string> {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw invalid(field, 'labels must be a map of strings to strings.');
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length > MAX_LABELS) throw invalid(field, `${entries.length} labels; at most ${MAX_LABELS} are allowed.`);
  for (const [key, value] of entries) {
    if (!LABEL_KEY.test(key)) throw invalid(field, `label key '${key.slice(0, 80)}' must start with a lowercase letter and hold 1-63 lowercase letters, digits, '_' or '-'.`);
    if (typeof value !== 'string' || !LABEL_VALUE.test(value)) {
      throw invalid(field, `the value of label '${key}' must be a string of 0-63 lowercase letters, digits, '_' or '-' (got ${JSON.stringify(value)?.slice(0, 80)}).`);
    }
  }
  return Object.fromEntries(entries) as Record<string, string>;
}

/** Compute Engine's metadata items (`[{key, value}]`), or 400 naming the item at fault. */
export function checkMetadataItems(v: unknown, field: string): { key: string; value: string }[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw invalid(field, 'metadata items must be a list of {key, value}.');
  const items = v.map((x: unknown, i) => {
    const item = (x && typeof x === 'object' ? x : {}) as { key?: unknown; value?: unknown };
    if (typeof item.key !== 'string') throw invalid(`${field}[${i}].key`, 'every metadata item needs a string key.');
    if (item.value !== undefined && typeof item.value !== 'string') throw invalid(`${field}[${i}].value`, `the value of metadata '${item.key}' must be a string.`);
    return { key: item.key, value: item.value ?? '' };
  });
  checkMetadataSizes(items, field);
  const seen = new Set<string>();
  for (const { key } of items) {
    if (seen.has(key)) throw invalid(field, `metadata key '${key}' appears twice.`);
    seen.add(key);
  }
  return items;
}

/** Cloud TPU's node metadata (a map of strings), or 400 naming the key at fault. */
export function checkMetadataMap(v: unknown, field: string): Record<string, string> {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw invalid(field, 'metadata must be a map of strings to strings.');
  const entries = Object.entries(v as Record<string, unknown>);
  for (const [key, value] of entries) if (typeof value !== 'string') throw invalid(field, `the value of metadata '${key.slice(0, 80)}' must be a string.`);
  checkMetadataSizes(entries.map(([key, value]) => ({ key, value: value as string })), field);
  return Object.fromEntries(entries) as Record<string, string>;
}

function checkMetadataSizes(items: { key: string; value: string }[], field: string): void {
  let total = 0;
  for (const { key, value } of items) {
    if (!METADATA_KEY.test(key)) throw invalid(field, `metadata key '${key.slice(0, 80)}' must be 1-128 letters, digits, '_' or '-'.`);
    const bytes = Buffer.byteLength(value);
    if (bytes > MAX_VALUE_BYTES) throw invalid(field, `the value of metadata '${key}' is ${bytes} bytes; at most ${MAX_VALUE_BYTES} are allowed.`);
    total += bytes + Buffer.byteLength(key);
  }
  if (total > MAX_TOTAL_BYTES) throw invalid(field, `the metadata is ${total} bytes in all; at most ${MAX_TOTAL_BYTES} are allowed.`);
}
