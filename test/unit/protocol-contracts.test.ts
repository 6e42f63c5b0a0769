/**
 * The contracts in protocol/ hold on the TypeScript side: the metrics record's type is the one generated from
 * its schema, the extension's readers and the webview's step-line parser produce records that fit the schema,
 * the fields the charts draw are in the schema as numbers, and the checker rejects records that do not fit.
 * (The trainer side is test/trainer/test_metrics_schema.py, against the same schema file.)
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { parseMetricsLines } from '../../extension/src/core/profiles/metrics-tail';
import { readMetricsJsonl } from '../../extension/src/vscode/run-view/local';
import { checkMetricRecord, METRIC_RECORD_SCHEMA, readRecordSchema } from '../../protocol/metrics-record';
import { GENERATED_FILE, generatedText, SCHEMA_FILE } from '../../scripts/gen-protocol-types';
import { CHARTED_METRICS } from '../../webview/src/charted-metrics';
import { parseStepLine } from '../../webview/src/stepline';

const schemaJson = JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')) as { properties: Record<string, { type: string | string[] }> };
const typesOf = (name: string): string[] => {
  const t = schemaJson.properties[name]?.type;
  return t === undefined ? [] : Array.isArray(t) ? t : [t];
};

/** A record as the trainer writes it on plain CPU (every property of the schema). */
const TRAINER_RECORD = {
  step: 5, loss: 4.8125, lr: 0.005, step_time_s: 0.081, tokens_per_s: 12640.5, mfu: null, mem_bytes: 912345088, mem_kind: 'host_rss',
  grad_norm: 2.15, tokens: 2560, worker: 3, device: 'cpu', compiles: null, time: 1764000000.25,
};

describe('metrics record: one schema', () => {
  it('the TypeScript type is the one generated from the schema', () => {
    assert.equal(readFileSync(GENERATED_FILE, 'utf8'), generatedText(), 'protocol/metrics-record.generated.ts is stale: run `node --import tsx scripts/gen-protocol-types.ts`');
  });

  it('the sample trainer record covers the schema, and fits it', () => {
    assert.deepEqual(Object.keys(TRAINER_RECORD).sort(), Object.keys(schemaJson.properties).sort());
    assert.deepEqual(checkMetricRecord(TRAINER_RECORD), { record: TRAINER_RECORD });
  });

  it('every field the charts draw is in the schema as a number', () => {
    for (const key of CHARTED_METRICS) {
      const types = typesOf(key);
      assert.ok(types.includes('number') || types.includes('integer'), `charted "${key}" is ${JSON.stringify(types)} in the schema`);
      assert.ok(types.every((t) => t === 'number' || t === 'integer' || t === 'null'), `charted "${key}" may be ${JSON.stringify(types)}`);
    }
    // The charts key their series by step and worker.
    assert.deepEqual(METRIC_RECORD_SCHEMA.required, ['step']);
    assert.deepEqual(typesOf('step'), ['integer']);
    assert.deepEqual(typesOf('worker'), ['integer']);
  });

  it('a record parsed from the trainer\'s console step line fits the schema', () => {
    const line = 'step 10 loss 5.3177 lr 3.000e-04 grad_norm 2.155 step_time_s 0.0805 tokens_per_s 12727 mfu - mem 924.5MiB';
    const rec = parseStepLine(line, 3);
    assert.ok(rec);
    assert.equal(checkMetricRecord(rec).problem, undefined);
    // `-` and values that are not numbers: null where the schema allows it, else left out.
    const odd = parseStepLine('step 7 loss nan lr 1e-3 grad_norm - step_time_s - tokens_per_s 10 mfu 0.5 mem 1.3KiB', 0);
    assert.deepEqual(odd, { step: 7, worker: 0, lr: 1e-3, grad_norm: null, tokens_per_s: 10, mfu: 0.5, mem_bytes: 1331 });
    assert.equal(checkMetricRecord(odd).problem, undefined);
  });
});

describe('metrics record: the checker', () => {
  const bad: [string, unknown, RegExp][] = [
    ['an array', [1], /not a JSON object but array/],
    ['no step', { loss: 1 }, /no "step"/],
    ['step 0', { step: 0 }, /"step" is 0, expected at least 1/],
    ['a fractional step', { step: 1.5 }, /"step" is number 1.5, expected integer/],
    ['a string loss', { step: 1, loss: '2.5' }, /"loss" is the string "2.5", expected number/],
    ['a null loss', { step: 1, loss: null }, /"loss" is null, expected number/],
    ['an unknown mem_kind', { step: 1, mem_kind: 'hbm' }, /"mem_kind" is "hbm", expected one of "device", "host_rss"/],
    ['a fractional compile count', { step: 1, compiles: 2.5 }, /"compiles" is number 2.5, expected integer or null/],
  ];
  for (const [what, value, message] of bad) {
    it(`rejects ${what}, naming the field`, () => assert.match(checkMetricRecord(value).problem ?? '(accepted)', message));
  }

  it('accepts nulls where the schema allows them, and properties it does not know', () => {
    assert.equal(checkMetricRecord({ step: 1, mfu: null, grad_norm: null, compiles: null, eval_loss: 3 }).problem, undefined);
  });

  it('refuses a schema keyword it would otherwise ignore', () => {
    const withPattern = structuredClone(schemaJson) as { properties: Record<string, Record<string, unknown>> };
    withPattern.properties.device.pattern = '^xla:';
    assert.throws(() => readRecordSchema(withPattern), /keyword "pattern" of property "device" is not supported/);
    assert.throws(() => readRecordSchema({ ...schemaJson, additionalProperties: false }), /"additionalProperties" must be true/);
  });
});

describe('metrics record: the extension\'s readers', () => {
  it('keep the records that fit, tag the worker, and skip the rest', () => {
    const text = [
      JSON.stringify(TRAINER_RECORD),
      '{"step":6,"loss":4.5}',
      '{"step":7,"loss":NaN}', // a diverged step, as Python writes it: not JSON
      '{"step":8,"loss":"high"}',
      '{"loss":1}',
      'not json',
      '',
    ].join('\n');
    assert.deepEqual(parseMetricsLines(text, 1), [TRAINER_RECORD, { step: 6, loss: 4.5, worker: 1 }]);
    const dir = mkdtempSync(path.join(tmpdir(), 'tpw-contract-'));
    writeFileSync(path.join(dir, 'metrics.jsonl'), text);
    assert.deepEqual(readMetricsJsonl(path.join(dir, 'metrics.jsonl')), [TRAINER_RECORD, { step: 6, loss: 4.5 }]);
  });
});
