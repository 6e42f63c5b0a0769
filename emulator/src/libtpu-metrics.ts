import * as grpc from '@grpc/grpc-js';
import {
  LIBTPU_METRICS,
  metricServiceCodec,
  RUNTIME_METRIC_PATHS,
  type LibtpuMetricName,
  type Metric,
  type MetricRequest,
  type MetricResponse,
} from '../../protocol/tpu-metric-service';
import { EXEC_BUCKETS, type ChipActivity, type ChipNow } from './chip-activity';

/**
 * An emulated worker's libtpu runtime metrics service: gRPC `tpu.monitoring.runtime.RuntimeMetricService` on the
 * worker's own address, port 8431, as libtpu serves it on a TPU VM's loopback, so Google's tpu-info (and the
 * product through SSH) reads it unchanged. The numbers come from the worker's ChipActivity. Faults (a service
 * that is down, slow, or answers bytes that are not a MetricResponse) are set per worker by tests.
 */

export type LibtpuFault = { kind: 'down' } | { kind: 'slow'; delayMs: number } | { kind: 'garbage' };

const DESCRIPTIONS: Record<LibtpuMetricName, string> = {
  [LIBTPU_METRICS.hbmTotal]: 'Total HBM memory per TensorCore, in bytes.',
  [LIBTPU_METRICS.hbmUsage]: 'HBM memory in use per TensorCore, in bytes.',
  [LIBTPU_METRICS.dutyCycle]: 'Share of the sampling window the TensorCore was busy, per chip, in percent.',
  [LIBTPU_METRICS.hbmBandwidth]: 'HBM bandwidth in use, in percent of the peak.',
  [LIBTPU_METRICS.idleDuration]: 'Time since the TensorCore last did work, in seconds.',
  [LIBTPU_METRICS.hloQueueSize]: 'HLO programs queued for execution.',
  [LIBTPU_METRICS.hloExecTiming]: 'HLO program execution time, in microseconds.',
};

function timestamp(ms: number): { seconds: number; nanos: number } {
  return { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 };
}

/** The kvlist attributes libtpu keys queue and timing entries by (tpu-info reads `device_ordinal`). */
function ordinalAttribute(chip: number): Metric['attribute'] {
  return {
    key: 'device',
    value: {
      kvlist_attr: {
        attributes: [
          { key: 'device_ordinal', value: { string_attr: String(chip) } },
          { key: 'core_type', value: { string_attr: 'TensorCore' } },
        ],
      },
    },
  };
}

function entries(name: LibtpuMetricName, chips: ChipNow[]): Metric[] {
  const at = { timestamp: timestamp(Date.now()) };
  const byDevice = (gauge: (c: ChipNow) => Metric['gauge']): Metric[] =>
    chips.map((c) => ({ attribute: { key: 'device-id', value: { int_attr: c.chip } }, ...at, gauge: gauge(c) }));
  switch (name) {
    case LIBTPU_METRICS.hbmTotal:
      return byDevice((c) => ({ as_int: c.hbmTotalBytes }));
    case LIBTPU_METRICS.hbmUsage:
      return byDevice((c) => ({ as_int: c.hbmUsedBytes }));
    case LIBTPU_METRICS.dutyCycle:
      return byDevice((c) => ({ as_double: c.dutyCyclePct }));
    case LIBTPU_METRICS.hbmBandwidth:
      return byDevice((c) => ({ as_double: c.hbmBandwidthPct }));
    case LIBTPU_METRICS.idleDuration:
      return byDevice((c) => ({ as_double: c.idleSeconds }));
    case LIBTPU_METRICS.hloQueueSize:
      return chips.map((c) => ({ attribute: ordinalAttribute(c.chip), ...at, gauge: { as_int: c.queueSize } }));
    case LIBTPU_METRICS.hloExecTiming:
      return chips.map((c) => ({
        attribute: ordinalAttribute(c.chip),
        ...at,
        distribution: {
          count: c.exec.count,
          mean: c.exec.mean,
          min: c.exec.min,
          max: c.exec.max,
          sum_of_squared_deviation: c.exec.sumOfSquaredDeviation,
          bucket_options: { exponential_buckets: { num_finite_buckets: EXEC_BUCKETS.numFiniteBuckets, growth_factor: EXEC_BUCKETS.growthFactor, scale: EXEC_BUCKETS.scale } },
          bucket_counts: c.exec.buckets,
        },
      }));
  }
}

const KNOWN = new Set<string>(Object.values(LIBTPU_METRICS));
/** Not a MetricResponse: field 31 with wire type 7, which no protobuf decoder accepts. */
const GARBAGE = Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f, 0x42]);

type Handler = (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => void;

export class LibtpuMetricsServer {
  private server: grpc.Server | undefined;
  private fault: LibtpuFault | undefined;

  private constructor(
    private readonly activity: ChipActivity,
    readonly address: string,
    readonly port: number,
    private readonly hostName: string,
    private readonly log: (msg: string) => void,
  ) {}

  /** Listens on `address:port`; resolves once it does (rejects when the port is taken). */
  static async start(activity: ChipActivity, address: string, port: number, hostName: string, log: (msg: string) => void = () => undefined): Promise<LibtpuMetricsServer> {
    const s = new LibtpuMetricsServer(activity, address, port, hostName, log);
    await s.listen();
    return s;
  }

  /** Whether it listens now (not while 'down', not after close()). */
  get listening(): boolean {
    return this.server !== undefined;
  }

  /** Sets (or with undefined, clears) a fault; 'down' closes the port until the fault is cleared. */
  async setFault(fault: LibtpuFault | undefined): Promise<void> {
    const wasDown = this.fault?.kind === 'down';
    this.fault = fault;
    if (fault?.kind === 'down' && !wasDown) await this.close();
    if (fault?.kind !== 'down' && wasDown) await this.listen();
  }

  close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return Promise.resolve();
    server.forceShutdown();
    return Promise.resolve();
  }

  private listen(): Promise<void> {
    const server = new grpc.Server();
    const codec = metricServiceCodec();
    const method = (path: string, request: Parameters<typeof codec.decode>[0], handle: (req: object) => Promise<Buffer>): [string, Handler] => [
      path,
      (call, callback) => {
        void (async () => {
          const fault = this.fault;
          if (fault?.kind === 'slow') await new Promise((r) => setTimeout(r, fault.delayMs));
          if (fault?.kind === 'garbage') return callback(null, GARBAGE);
          callback(null, await handle(codec.decode(request, call.request)));
        })().catch((e: unknown) => callback({ code: (e as { code?: number }).code ?? grpc.status.INTERNAL, details: (e as Error).message }));
      },
    ];
    const handlers = [
      method(RUNTIME_METRIC_PATHS.GetRuntimeMetric, 'MetricRequest', (req) => this.metric(req as MetricRequest)),
      method(RUNTIME_METRIC_PATHS.ListSupportedMetrics, 'ListSupportedMetricsRequest', () =>
        Promise.resolve(Buffer.from(codec.encode('ListSupportedMetricsResponse', { supported_metric: [...KNOWN].map((metric_name) => ({ metric_name })) }))),
      ),
      method(RUNTIME_METRIC_PATHS.GetTpuRuntimeStatus, 'GetTpuRuntimeStatusRequest', () => Promise.resolve(this.status())),
    ];
    const service: grpc.ServiceDefinition = {};
    const impl: grpc.UntypedServiceImplementation = {};
    for (const [path, handler] of handlers) {
      const name = path.slice(path.lastIndexOf('/') + 1);
      (service as Record<string, grpc.MethodDefinition<Buffer, Buffer>>)[name] = {
        path,
        requestStream: false,
        responseStream: false,
        requestDeserialize: (b) => b,
        requestSerialize: (b) => b,
        responseSerialize: (b) => b,
        responseDeserialize: (b) => b,
      };
      impl[name] = handler;
    }
    server.addService(service, impl);
    return new Promise((resolve, reject) => {
      server.bindAsync(`${this.address}:${this.port}`, grpc.ServerCredentials.createInsecure(), (err) => {
        if (err) {
          server.forceShutdown();
          reject(err);
          return;
        }
        this.server = server;
        this.log(`libtpu metrics service listening on ${this.address}:${this.port}`);
        resolve();
      });
    });
  }

  private async metric(req: MetricRequest): Promise<Buffer> {
    const name = req.metric_name ?? '';
    if (!KNOWN.has(name)) throw Object.assign(new Error(`metric ${name} not found`), { code: grpc.status.NOT_FOUND });
    const chips = await this.activity.read();
    const body: MetricResponse = { metric: { name, description: DESCRIPTIONS[name as LibtpuMetricName], metrics: entries(name as LibtpuMetricName, chips) } };
    return Buffer.from(metricServiceCodec().encode('MetricResponse', body));
  }

  /** One TensorCore per chip (every generation the emulator offers has one per chip, as tpu-info's table says). */
  private status(): Buffer {
    const core_states = Array.from({ length: this.activity.chips }, (_, chip) => ({
      key: chip,
      value: { core_id: { global_core_id: chip, chip_id: chip, core_on_chip: { type: 1, index: 0 } }, xdb_server_running: false },
    }));
    return Buffer.from(metricServiceCodec().encode('GetTpuRuntimeStatusResponse', { host_name: this.hostName, core_states }));
  }
}
