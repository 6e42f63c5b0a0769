/**
 * Every message between the extension host and the run view (a webview), as one typed union per direction.
 * Both sides import this file, so a change to a message is a compile error on both. The profile summaries that
 * core/profiles produces for the view are here too.
 */
import type { WorkerChips } from './chip-readings';
import type { MetricRecord } from './metrics-record';
import type { RunStatus, WorkerStatus } from './run-status';

export interface LogLinesMessage {
  type: 'logLines';
  worker: number;
  lines: string[];
}

export interface RunStateMessage {
  type: 'runState';
  runId: string;
  state: RunStatus;
  summary?: string;
  /** Number of workers, so every worker gets a status chip before it prints anything. */
  workers?: number;
}

export interface WorkerStatusMessage {
  type: 'workerStatus';
  worker: number;
  state: WorkerStatus;
  exitCode?: number | null;
  detail?: string;
}

/** Records of the trainer's metrics.jsonl (checked against its schema) or parsed from its console step lines. */
export interface MetricsMessage {
  type: 'metrics';
  records: MetricRecord[];
}

export interface ProfileCapture {
  /** Opaque id the webview echoes back in requests. */
  id: string;
  label: string;
  worker?: number;
  /** Where the file is, for display. */
  location: string;
  /** Analyzed in the background already: opening it shows the result at once. */
  ready?: boolean;
}

export interface ProfileListMessage {
  type: 'profiles';
  captures: ProfileCapture[];
}

export interface StepBreakdown {
  /** 1-based index of the step within the capture. */
  index: number;
  startUs: number;
  totalUs: number;
  compileUs: number;
  executeUs: number;
  transferUs: number;
  /** Host work in torch_xla that is none of the above (lazy tracing, graph building). */
  hostUs: number;
  /** The rest of the step: the Python thread outside torch_xla (data loading, logging, idle). */
  otherUs: number;
}

export interface OpRow {
  /** The XLA program's id (exact decimal digits; '' when the capture names none). */
  program: string;
  name: string;
  category: string;
  module: string;
  count: number;
  selfUs: number;
  totalUs: number;
  flops: number;
  bytes: number;
  /** FLOPs per byte of memory traffic (0 when the capture gives no bytes), and what bounds it on this chip. */
  intensity: number;
  /** As xprof's bound_by ('Unknown': the op has neither FLOPs nor bytes); '' where there is no roofline (no TPU). */
  boundBy: '' | 'Compute' | 'HBM' | 'Unknown';
}

/** What ran where: the devices of the capture and how busy they were. */
export interface ProfileOverview {
  hardware: 'TPU' | 'GPU' | 'CPU';
  /** As xprof's overview names it ('TPU v6 Lite', 'Nvidia GPU (Hopper)', 'AMD GPU - gfx942'); '' on CPU. */
  deviceType: string;
  deviceCount: number;
  hostCount: number;
  /** Peak dense TFLOP/s and HBM GB/s of one chip (the capture's figures, else core/profiles/chips.ts); 0: unknown. */
  peakTflops: number;
  hbmGBs: number;
  /** Summed over devices: time an op ran, and the span from each device's first op to its last. */
  busyUs: number;
  activeUs: number;
  /** 100 × (1 − busy ÷ active); 0 when nothing ran. */
  idlePercent: number;
  /**
   * Where the steps came from: a device's Steps line, the device work that step annotations group (xprof's step
   * grouping: jax.profiler.StepTraceAnnotation), the host's XLA dispatches, or none.
   */
  stepSource: 'device' | 'annotations' | 'host' | 'none';
}

export interface TimelineLine {
  plane: string;
  name: string;
  /** Events sorted by start; times in µs from the capture's first event. */
  start: Float64Array;
  dur: Float64Array;
  /** Index into ProfileSummary.timeline.names. */
  name_: Int32Array;
  /** Nesting depth (0 = outermost), for drawing nested events as rows. */
  depth: Uint8Array;
}

/**
 * Device kernels that named an HLO op their program's HLO does not hold, left out of the op table as xprof leaves
 * them out: XLA names the CUDA command buffer (`command_buffer_1`) on every kernel it ran inside one.
 */
export interface UnattributedKernels {
  count: number;
  selfUs: number;
  /** The op names they gave, with the number of kernels under each. */
  names: Record<string, number>;
}

export interface ProfileSummary {
  hosts: string[];
  planes: { name: string; lines: number; events: number }[];
  eventCount: number;
  spanUs: number;
  steps: StepBreakdown[];
  ops: OpRow[];
  unattributedKernels: UnattributedKernels;
  overview: ProfileOverview;
  timeline: { names: string[]; lines: TimelineLine[] };
  warnings: string[];
}

export interface ProfileMessage {
  type: 'profile';
  id: string;
  summary: ProfileSummary;
  /** The analysis was made (or under way) before the capture was opened: the click started no parse. */
  prefetched: boolean;
}

export interface ProfileErrorMessage {
  type: 'profileError';
  id: string;
  message: string;
}

export interface HealthFinding {
  severity: 'ok' | 'info' | 'warning';
  title: string;
  detail: string;
}

export interface HealthMessage {
  type: 'health';
  worker?: number;
  /**
   * What the findings come from: the trainer's torch_xla metrics report (the default), or the chips' libtpu
   * metrics. Each source's findings of a worker replace that source's earlier ones only.
   */
  source?: 'xla-metrics' | 'chips';
  findings: HealthFinding[];
}

/** The latest reading of some workers' chips (libtpu's metrics service on each), for the Chips tab and the charts. */
export interface ChipsMessage {
  type: 'chips';
  workers: WorkerChips[];
}

export type HostToWebview =
  | LogLinesMessage
  | RunStateMessage
  | WorkerStatusMessage
  | MetricsMessage
  | ProfileListMessage
  | ProfileMessage
  | ProfileErrorMessage
  | ProfileHostsMessage
  | HealthMessage
  | ChipsMessage;

/** Several hosts' captures side by side: each host's steps and idle share, the slowest, the ops of all combined. */
export interface ProfileHostsMessage {
  type: 'profileHosts';
  hosts: { host: string; location: string; steps: number; avgStepUs: number; idlePercent: number; busyUs: number }[];
  /** The host with the longest average step (when more than one has steps). */
  slowest: string | undefined;
  ops: OpRow[];
  /** Captures that could not be read, each with why. */
  errors: string[];
}

export interface ReadyMessage {
  type: 'ready';
}

export interface CancelRunMessage {
  type: 'cancelRun';
  runId: string;
}

export interface OpenProfileMessage {
  type: 'openProfile';
  id: string;
}

export interface ExportTraceMessage {
  type: 'exportTrace';
  id: string;
}

/** Opens a local .xplane.pb (or a run's output folder) chosen in a file dialog. */
export interface BrowseMessage {
  type: 'browse';
}

export interface CopyMessage {
  type: 'copy';
  text: string;
}

export interface SaveLogsMessage {
  type: 'saveLogs';
  text: string;
}

/** Opens these captures (one per host of a run) side by side. */
export interface CompareProfilesMessage {
  type: 'compareProfiles';
  ids: string[];
}

export type WebviewToHost = ReadyMessage | CancelRunMessage | OpenProfileMessage | ExportTraceMessage | BrowseMessage | CopyMessage | SaveLogsMessage | CompareProfilesMessage;
