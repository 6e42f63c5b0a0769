/**
 * libtpu's metrics service as protocol/ describes it: the generated description is what tpu-info's descriptor says
 * (regenerating changes nothing), and it names the service, methods and fields tpu-info's client calls.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { generate, GENERATED_FILE } from '../../scripts/gen-tpu-metric-service';
import { LIBTPU_METRICS, metricServiceCodec, RUNTIME_METRIC_PATHS, type MetricResponse } from '../../protocol/tpu-metric-service';

test('protocol/tpu-metric-service.generated.ts is what the tpu-info descriptor generates', () => {
  assert.equal(readFileSync(GENERATED_FILE, 'utf8'), generate(), 'stale: run `node --import tsx scripts/gen-tpu-metric-service.ts`');
});

test("the method paths and messages are tpu-info's", () => {
  // As tpu_metric_service_pb2_grpc.py's stub calls them.
  assert.equal(RUNTIME_METRIC_PATHS.GetRuntimeMetric, '/tpu.monitoring.runtime.RuntimeMetricService/GetRuntimeMetric');
  const codec = metricServiceCodec();
  // MetricRequest.metric_name is field 1 (a string): 0x0a, the length, the bytes.
  const name = LIBTPU_METRICS.dutyCycle;
  assert.deepEqual([...codec.encode('MetricRequest', { metric_name: name })], [0x0a, name.length, ...Buffer.from(name)]);
  const reply: MetricResponse = { metric: { name, metrics: [{ attribute: { key: 'device-id', value: { int_attr: 3 } }, gauge: { as_double: 42.5 } }] } };
  assert.deepEqual(codec.decode<MetricResponse>('MetricResponse', codec.encode('MetricResponse', reply)), reply);
  assert.throws(() => codec.decode('MetricResponse', Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0x0f, 0x42])));
});
