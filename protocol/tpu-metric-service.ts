/**
 * libtpu's runtime metrics service (gRPC `tpu.monitoring.runtime.RuntimeMetricService`, served by the process that
 * loaded libtpu on a TPU VM's loopback, port 8431), as PyPI tpu-info 0.14.2 ships its proto and reads it
 * (`tpu_info/metrics.py`). The emulator's workers serve it and the product reads it (the run view's Chips panel,
 * `tpw top`); both code the messages through this one description, generated from tpu-info's descriptor
 * (scripts/gen-tpu-metric-service.ts), so neither side can drift from the other or from libtpu.
 */
import * as protobuf from 'protobufjs';
import { TPU_METRIC_SERVICE_JSON } from './tpu-metric-service.generated';

/** Where libtpu serves it on a TPU VM (tpu-info's default `addr`). */
export const LIBTPU_METRICS_PORT = 8431;

export const RUNTIME_METRIC_SERVICE = 'tpu.monitoring.runtime.RuntimeMetricService';

/** The gRPC paths of the service's methods (`/package.Service/Method`). */
export const RUNTIME_METRIC_PATHS = {
  GetRuntimeMetric: `/${RUNTIME_METRIC_SERVICE}/GetRuntimeMetric`,
  ListSupportedMetrics: `/${RUNTIME_METRIC_SERVICE}/ListSupportedMetrics`,
  GetTpuRuntimeStatus: `/${RUNTIME_METRIC_SERVICE}/GetTpuRuntimeStatus`,
} as const;

/**
 * The metric names libtpu answers to, as tpu-info's `MetricName` lists the ones it shows per chip. Units are in the
 * names; what each metric's entries are keyed by is in `LibtpuMetricShape`.
 */
export const LIBTPU_METRICS = {
  /** Gauge as_int, bytes, one entry per device (TensorCore), keyed by attribute int_attr = device id. */
  hbmTotal: 'tpu.runtime.hbm.memory.total.bytes',
  hbmUsage: 'tpu.runtime.hbm.memory.usage.bytes',
  /** Gauge as_double, percent, one entry per chip, keyed by int_attr = chip id. */
  dutyCycle: 'tpu.runtime.tensorcore.dutycycle.percent',
  /** Gauge as_double, percent of HBM bandwidth, keyed by int_attr. */
  hbmBandwidth: 'tpu.runtime.hbm.utilization.percent',
  /** Gauge as_double, seconds the TensorCore has been idle, keyed by int_attr. */
  idleDuration: 'tpu.runtime.tensorcore.idle_duration.seconds',
  /** Gauge as_int, HLO programs queued, keyed by kvlist_attr's `device_ordinal` (string_attr; int_attr on older libtpu). */
  hloQueueSize: 'hlo.queue.size.gauge',
  /** Distribution (exponential buckets), microseconds per HLO execution, keyed like the queue size. */
  hloExecTiming: 'hlo.execution.timing.distribution.microseconds',
} as const;

export type LibtpuMetricKey = keyof typeof LIBTPU_METRICS;
export type LibtpuMetricName = (typeof LIBTPU_METRICS)[LibtpuMetricKey];

/** How a metric's entries name their device: a plain int attribute, or a key-value list with `device_ordinal`. */
export const LIBTPU_METRIC_KEYING: Record<LibtpuMetricKey, 'int_attr' | 'device_ordinal'> = {
  hbmTotal: 'int_attr',
  hbmUsage: 'int_attr',
  dutyCycle: 'int_attr',
  hbmBandwidth: 'int_attr',
  idleDuration: 'int_attr',
  hloQueueSize: 'device_ordinal',
  hloExecTiming: 'device_ordinal',
};

/**
 * Per chip generation: HBM per chip and devices (TensorCores libtpu reports memory for) per chip, as tpu-info's
 * `device.TpuChip` lists them. Duty cycle comes per chip, memory per device.
 */
export const TPU_CHIP_FACTS: Record<string, { name: string; hbmGiB: number; devicesPerChip: 1 | 2 }> = {
  V4: { name: 'TPU v4', hbmGiB: 32, devicesPerChip: 1 },
  V5LITE_POD: { name: 'TPU v5e', hbmGiB: 16, devicesPerChip: 1 },
  V5P: { name: 'TPU v5p', hbmGiB: 95, devicesPerChip: 1 },
  V6E: { name: 'TPU v6e', hbmGiB: 32, devicesPerChip: 1 },
};

// The decoded messages, as protobufjs's toObject gives them with LONG_AS_NUMBER (field names as in the proto).

export interface AttrValue {
  string_attr?: string;
  bool_attr?: boolean;
  int_attr?: number;
  double_attr?: number;
  kvlist_attr?: { attributes?: Attribute[] };
  array_attr?: { attrs?: AttrValue[] };
  bytes_attr?: Uint8Array;
}

export interface Attribute {
  key?: string;
  value?: AttrValue;
}

export interface Gauge {
  as_double?: number;
  as_int?: number;
  as_string?: string;
  as_bool?: boolean;
}

export interface Distribution {
  count?: number;
  mean?: number;
  min?: number;
  max?: number;
  sum_of_squared_deviation?: number;
  bucket_options?: { exponential_buckets?: { num_finite_buckets?: number; growth_factor?: number; scale?: number } };
  bucket_counts?: number[];
}

export interface Timestamp {
  seconds?: number;
  nanos?: number;
}

export interface Metric {
  attribute?: Attribute;
  timestamp?: Timestamp;
  start_timestamp?: Timestamp;
  gauge?: Gauge;
  distribution?: Distribution;
}

export interface MetricRequest {
  metric_name: string;
  skip_node_aggregation?: boolean;
}

export interface MetricResponse {
  metric?: { name?: string; description?: string; metrics?: Metric[] };
}

export interface ListSupportedMetricsResponse {
  supported_metric?: { metric_name?: string }[];
}

export interface GetTpuRuntimeStatusResponse {
  host_name?: string;
  core_states?: { key?: number; value?: { core_id?: { global_core_id?: number; chip_id?: number; core_on_chip?: { type?: number; index?: number } } } }[];
}

/** Encoders and decoders of the service's messages (protobufjs, from the generated description). */
export interface MetricServiceCodec {
  encode(type: MessageName, value: object): Uint8Array;
  /** Throws on bytes that are not the message (truncated, wrong wire types). */
  decode<T>(type: MessageName, bytes: Uint8Array): T;
}

export type MessageName =
  | 'MetricRequest'
  | 'MetricResponse'
  | 'ListSupportedMetricsRequest'
  | 'ListSupportedMetricsResponse'
  | 'GetTpuRuntimeStatusRequest'
  | 'GetTpuRuntimeStatusResponse';

let codec: MetricServiceCodec | undefined;

export function metricServiceCodec(): MetricServiceCodec {
  if (codec) return codec;
  const root = protobuf.Root.fromJSON(TPU_METRIC_SERVICE_JSON as protobuf.INamespace);
  const types = new Map<MessageName, protobuf.Type>();
  const type = (name: MessageName): protobuf.Type => {
    let t = types.get(name);
    if (!t) types.set(name, (t = root.lookupType(`tpu.monitoring.runtime.${name}`)));
    return t;
  };
  codec = {
    encode: (name, value) => {
      const t = type(name);
      return t.encode(t.fromObject(value)).finish();
    },
    decode: <T>(name: MessageName, bytes: Uint8Array): T => {
      const t = type(name);
      return t.toObject(t.decode(bytes), { longs: Number, defaults: false, oneofs: false }) as T;
    },
  };
  return codec;
}

/** The device an entry is about: its int attribute, or its key-value list's `device_ordinal` (as tpu-info reads it). */
export function deviceOf(m: Metric, keying: 'int_attr' | 'device_ordinal'): number | undefined {
  const value = m.attribute?.value;
  if (keying === 'int_attr') return typeof value?.int_attr === 'number' ? value.int_attr : 0;
  for (const a of value?.kvlist_attr?.attributes ?? []) {
    if (a.key !== 'device_ordinal') continue;
    if (typeof a.value?.string_attr === 'string') return /^\d+$/.test(a.value.string_attr) ? Number(a.value.string_attr) : undefined;
    if (typeof a.value?.int_attr === 'number') return a.value.int_attr;
  }
  return undefined;
}

/**
 * A percentile of an exponential-bucket distribution, the way tpu-info's `_get_percentile` interpolates it (so
 * `tpw top` prints what `tpu-info` would): walking down from the top bucket, then linearly within the bucket.
 */
export function distributionPercentile(d: Distribution, q: number): number {
  const count = d.count ?? 0;
  if (count === 0) return 1;
  const buckets = d.bucket_counts ?? [];
  const scale = d.bucket_options?.exponential_buckets?.scale ?? 1;
  const growth = d.bucket_options?.exponential_buckets?.growth_factor ?? 2;
  const target = Math.trunc(count * q);
  let remaining = count;
  for (let i = buckets.length - 1; i > 0; i--) {
    remaining -= buckets[i];
    if (remaining <= target) {
      const delta = target - remaining;
      const lower = scale * growth ** (i - 1);
      return lower * (1 + (delta / buckets[i]) * (growth - 1));
    }
  }
  return 1;
}
