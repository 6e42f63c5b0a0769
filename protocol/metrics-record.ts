/**
 * The trainer → extension metrics record (one line of metrics.jsonl). It is described once, in
 * metrics-record.schema.json: the TypeScript type is generated from it (metrics-record.generated.ts), the
 * extension checks each record against it here, and the trainer's tests check what it writes against it.
 *
 * The checker understands the few JSON Schema keywords the file uses and refuses any other, so a keyword
 * added to the schema cannot be silently ignored on this side.
 */
import schemaJson from './metrics-record.schema.json';
import type { MetricRecord } from './metrics-record.generated';

export type { MetricRecord } from './metrics-record.generated';

export type JsonType = 'integer' | 'number' | 'string' | 'boolean' | 'null';

export interface PropertySchema {
  description?: string;
  type: JsonType | JsonType[];
  enum?: (string | number)[];
  minimum?: number;
}

export interface RecordSchema {
  title: string;
  description?: string;
  required: string[];
  properties: Record<string, PropertySchema>;
}

const JSON_TYPES: readonly string[] = ['integer', 'number', 'string', 'boolean', 'null'];
const RECORD_KEYWORDS = new Set(['$schema', '$id', 'title', 'description', 'type', 'required', 'additionalProperties', 'properties']);
const PROPERTY_KEYWORDS = new Set(['description', 'type', 'enum', 'minimum']);

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The schema file as this checker reads it; throws naming the keyword or property it cannot honour. */
export function readRecordSchema(json: unknown): RecordSchema {
  const fail = (what: string): never => {
    throw new Error(`metrics-record.schema.json: ${what}`);
  };
  if (!isObject(json)) return fail('not a JSON object');
  for (const k of Object.keys(json)) if (!RECORD_KEYWORDS.has(k)) fail(`keyword "${k}" is not supported by protocol/metrics-record.ts`);
  if (json.type !== 'object') fail('the record must be "type": "object"');
  // Readers ignore properties they do not know: a newer trainer's records still chart.
  if (json.additionalProperties !== true) fail('"additionalProperties" must be true');
  const { title, description, required, properties } = json;
  if (typeof title !== 'string') return fail('"title" must be a string');
  if (!Array.isArray(required) || !required.every((r) => typeof r === 'string')) return fail('"required" must be a list of names');
  if (!isObject(properties)) return fail('"properties" must be an object');
  const props: Record<string, PropertySchema> = {};
  for (const [name, p] of Object.entries(properties)) {
    if (!isObject(p)) return fail(`property "${name}" is not an object`);
    for (const k of Object.keys(p)) if (!PROPERTY_KEYWORDS.has(k)) fail(`keyword "${k}" of property "${name}" is not supported by protocol/metrics-record.ts`);
    const types = Array.isArray(p.type) ? p.type : [p.type];
    if (types.length === 0 || !types.every((t) => typeof t === 'string' && JSON_TYPES.includes(t))) fail(`property "${name}" has an unsupported "type"`);
    if (p.enum !== undefined && (!Array.isArray(p.enum) || !p.enum.every((e) => typeof e === 'string' || typeof e === 'number'))) fail(`property "${name}": "enum" must list strings or numbers`);
    if (p.minimum !== undefined && typeof p.minimum !== 'number') fail(`property "${name}": "minimum" must be a number`);
    if (p.description !== undefined && typeof p.description !== 'string') fail(`property "${name}": "description" must be a string`);
    props[name] = {
      type: p.type as PropertySchema['type'],
      ...(p.description !== undefined && { description: p.description as string }),
      ...(p.enum !== undefined && { enum: p.enum as (string | number)[] }),
      ...(p.minimum !== undefined && { minimum: p.minimum as number }),
    };
  }
  for (const r of required) if (!(r in props)) fail(`required "${r}" is not among the properties`);
  return { title, ...(typeof description === 'string' && { description }), required, properties: props };
}

export const METRIC_RECORD_SCHEMA: RecordSchema = readRecordSchema(schemaJson);

function jsonTypeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

/** Why `value` does not fit `p`, or undefined when it does. */
function propertyProblem(value: unknown, p: PropertySchema): string | undefined {
  const allowed = Array.isArray(p.type) ? p.type : [p.type];
  const got = jsonTypeOf(value);
  // JSON Schema's "number" includes the integers.
  if (!allowed.includes(got as JsonType) && !(got === 'integer' && allowed.includes('number'))) {
    return `is ${got === 'integer' || got === 'number' ? `${got} ${String(value)}` : got === 'string' ? `the string ${JSON.stringify(value)}` : got}, expected ${allowed.join(' or ')}`;
  }
  if (p.enum && !p.enum.includes(value as string | number)) return `is ${JSON.stringify(value)}, expected one of ${p.enum.map((e) => JSON.stringify(e)).join(', ')}`;
  if (p.minimum !== undefined && typeof value === 'number' && value < p.minimum) return `is ${value}, expected at least ${p.minimum}`;
  return undefined;
}

export type MetricRecordCheck = { record: MetricRecord; problem?: undefined } | { record?: undefined; problem: string };

/** Checks a parsed metrics.jsonl line against the schema; a problem names the field at fault. */
export function checkMetricRecord(value: unknown, schema: RecordSchema = METRIC_RECORD_SCHEMA): MetricRecordCheck {
  if (!isObject(value)) return { problem: `not a JSON object but ${jsonTypeOf(value)}` };
  for (const name of schema.required) if (!(name in value)) return { problem: `no "${name}"` };
  for (const [name, p] of Object.entries(schema.properties)) {
    if (!(name in value)) continue;
    const why = propertyProblem(value[name], p);
    if (why) return { problem: `"${name}" ${why}` };
  }
  // Checked above against the schema the type is generated from.
  return { record: value as unknown as MetricRecord };
}
