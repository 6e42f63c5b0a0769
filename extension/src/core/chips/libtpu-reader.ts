import type { ChipReading } from '../../../../protocol/chip-readings';
import {
  deviceOf,
  distributionPercentile,
  LIBTPU_METRIC_KEYING,
  LIBTPU_METRICS,
  metricServiceCodec,
  RUNTIME_METRIC_PATHS,
  type LibtpuMetricKey,
  type Metric,
  type MetricResponse,
} from '../../../../protocol/tpu-metric-service';
import { GRPC_STATUS, GrpcCallError, type GrpcStreamSession } from './grpc-over-stream';

/**
 * One reading of every chip a worker's libtpu serves, as tpu-info reads them: usage and total HBM per device (one
 * device per chip, or two for two-TensorCore chips), duty cycle per chip, and the HLO queue and execution times per
 * device ordinal. HBM and duty cycle are what a reading cannot do without; the others are null where a libtpu does
 * not serve them (older ones lack idle duration and the HLO metrics).
 */

const REQUIRED: LibtpuMetricKey[] = ['hbmTotal', 'hbmUsage', 'dutyCycle'];
const OPTIONAL: LibtpuMetricKey[] = ['hbmBandwidth', 'idleDuration', 'hloQueueSize', 'hloExecTiming'];

/** A reply that is not what libtpu answers (it decodes, but cannot be read as chips). */
export class BadReplyError extends Error {
  override name = 'BadReplyError';
}

async function fetchMetric(session: GrpcStreamSession, key: LibtpuMetricKey, deadlineMs: number): Promise<Metric[]> {
  const codec = metricServiceCodec();
  const reply = await session.unary(RUNTIME_METRIC_PATHS.GetRuntimeMetric, codec.encode('MetricRequest', { metric_name: LIBTPU_METRICS[key] }), deadlineMs);
  let decoded: MetricResponse;
  try {
    decoded = codec.decode<MetricResponse>('MetricResponse', reply);
  } catch (e) {
    throw new BadReplyError(`the reply to ${LIBTPU_METRICS[key]} is not a MetricResponse (${(e as Error).message})`);
  }
  return decoded.metric?.metrics ?? [];
}

/** Entries by device, in device order; an entry without a device it names is a bad reply. */
function byDevice(key: LibtpuMetricKey, metrics: Metric[]): Map<number, Metric> {
  const out = new Map<number, Metric>();
  for (const m of metrics) {
    const d = deviceOf(m, LIBTPU_METRIC_KEYING[key]);
    if (d === undefined) throw new BadReplyError(`an entry of ${LIBTPU_METRICS[key]} names no device`);
    out.set(d, m);
  }
  return out;
}

function num(v: number | undefined): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

export async function readChips(session: GrpcStreamSession, deadlineMs: number): Promise<ChipReading[]> {
  const ask = (key: LibtpuMetricKey) => fetchMetric(session, key, deadlineMs);
  // An optional metric this libtpu does not know is a null column, not a failed reading.
  const optional = (key: LibtpuMetricKey) =>
    ask(key).catch((e: unknown) => {
      if (e instanceof GrpcCallError && e.failure === 'status' && (e.code === GRPC_STATUS.NOT_FOUND || e.code === GRPC_STATUS.UNIMPLEMENTED)) return undefined;
      throw e;
    });
  const [[total, usage, duty], rest] = await Promise.all([Promise.all(REQUIRED.map(ask)), Promise.all(OPTIONAL.map(optional))]);
  const totals = byDevice('hbmTotal', total);
  const usages = byDevice('hbmUsage', usage);
  const duties = byDevice('dutyCycle', duty);
  if (duties.size === 0) throw new BadReplyError(`${LIBTPU_METRICS.dutyCycle} lists no chip`);
  if (totals.size !== usages.size) throw new BadReplyError(`HBM usage lists ${usages.size} devices and HBM total ${totals.size}`);
  if (totals.size % duties.size !== 0) throw new BadReplyError(`${totals.size} devices with HBM do not divide among ${duties.size} chips`);
  const perChip = totals.size / duties.size;
  const [bandwidth, idle, queue, timing] = OPTIONAL.map((key, i) => (rest[i] ? byDevice(key, rest[i]) : undefined));
  const devices = [...totals.keys()].sort((a, b) => a - b);
  const chips = [...duties.keys()].sort((a, b) => a - b);
  return chips.map((chip, i) => {
    const mine = devices.slice(i * perChip, (i + 1) * perChip);
    const sum = (m: Map<number, Metric>) => mine.reduce((a, d) => a + num(m.get(d)?.gauge?.as_int), 0);
    const first = mine[0];
    const dist = timing?.get(first)?.distribution;
    const gauge = (m: Map<number, Metric> | undefined, d: number, field: 'as_double' | 'as_int') => (m?.has(d) ? num(m.get(d)?.gauge?.[field]) : null);
    return {
      chip,
      dutyCyclePct: num(duties.get(chip)?.gauge?.as_double),
      hbmUsedBytes: sum(usages),
      hbmTotalBytes: sum(totals),
      hbmBandwidthPct: gauge(bandwidth, chip, 'as_double'),
      idleSeconds: gauge(idle, chip, 'as_double'),
      queueSize: gauge(queue, first, 'as_int'),
      execMeanUs: dist ? num(dist.mean) : null,
      execP50Us: dist ? distributionPercentile(dist, 0.5) : null,
      execP90Us: dist ? distributionPercentile(dist, 0.9) : null,
    };
  });
}
