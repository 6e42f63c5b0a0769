/**
 * Writes protocol/metrics-record.generated.ts, the TypeScript type of the trainer's metrics record, from
 * protocol/metrics-record.schema.json, so the record is described in one place. Run it after editing the schema:
 *
 *   node --import tsx scripts/gen-protocol-types.ts
 *
 * test/unit/protocol-contracts.test.ts fails while the generated file is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { readRecordSchema, type PropertySchema, type RecordSchema } from '../protocol/metrics-record';

export const SCHEMA_FILE = path.join(__dirname, '../protocol/metrics-record.schema.json');
export const GENERATED_FILE = path.join(__dirname, '../protocol/metrics-record.generated.ts');

const WIDTH = 116;

/** A JSDoc comment at `indent`, its text wrapped at the repository's line width. */
function doc(text: string, indent: string): string[] {
  const one = `${indent}/** ${text} */`;
  if (one.length <= WIDTH) return [one];
  const lines = [`${indent}/**`];
  let line = `${indent} *`;
  for (const word of text.split(/\s+/)) {
    if (line.length + 1 + word.length > WIDTH && line !== `${indent} *`) {
      lines.push(line);
      line = `${indent} *`;
    }
    line += ` ${word}`;
  }
  lines.push(line, `${indent} */`);
  return lines;
}

function tsType(p: PropertySchema): string {
  if (p.enum) return p.enum.map((e) => (typeof e === 'string' ? `'${e}'` : String(e))).join(' | ');
  const types = Array.isArray(p.type) ? p.type : [p.type];
  const ts = types.map((t) => (t === 'integer' ? 'number' : t));
  return [...new Set(ts)].join(' | ');
}

/** The generated file's text. Properties outside `required` are optional: readers take records from any trainer version. */
export function renderMetricRecordType(schema: RecordSchema): string {
  const out = [
    '// Generated from metrics-record.schema.json by scripts/gen-protocol-types.ts: edit the schema, not this file.',
    '',
    ...doc(schema.description ?? schema.title, ''),
    `export interface ${schema.title} {`,
  ];
  for (const [name, p] of Object.entries(schema.properties)) {
    const integer = (Array.isArray(p.type) ? p.type : [p.type]).includes('integer') ? ' An integer.' : '';
    if (p.description) out.push(...doc(p.description + integer, '  '));
    out.push(`  ${name}${schema.required.includes(name) ? '' : '?'}: ${tsType(p)};`);
  }
  out.push('}', '');
  return out.join('\n');
}

export function generatedText(): string {
  return renderMetricRecordType(readRecordSchema(JSON.parse(readFileSync(SCHEMA_FILE, 'utf8'))));
}

if (require.main === module) {
  writeFileSync(GENERATED_FILE, generatedText());
  console.log(`[gen] ${path.relative(process.cwd(), GENERATED_FILE)}`);
}
