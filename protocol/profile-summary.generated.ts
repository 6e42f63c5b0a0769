// Generated from native/profile/src/output/types.rs (the analysis's output, declared once, in Rust): do not
// edit. Regenerate: TPW_WRITE_TYPES=1 npm run test:native -- output::types

export type Hardware = 'CPU' | 'TPU' | 'GPU';
export type StepSource = 'none' | 'device' | 'annotations' | 'host' | 'profiler';
export type BoundBy = '' | 'Compute' | 'HBM' | 'Unknown';

/** One step of the capture, and where its time went. */
export interface StepBreakdown {
  /** 1-based index of the step within the capture. */
  index: number;
  /** µs from the capture's first event. */
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

/** One HLO op of one program, over the capture (a row of xprof's hlo_stats). */
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
  /** FLOPs per byte of memory traffic (0 when the capture gives no bytes). */
  intensity: number;
  boundBy: BoundBy;
}

/** What ran where: the devices of the capture and how busy they were. */
export interface ProfileOverview {
  hardware: Hardware;
  /** As xprof's overview names it ('TPU v6 Lite', 'Nvidia GPU (Hopper)', 'AMD GPU - gfx942'); '' on CPU. */
  deviceType: string;
  deviceCount: number;
  hostCount: number;
  /** Peak dense TFLOP/s of one chip (the capture's figure, else the chip table's); 0: unknown. */
  peakTflops: number;
  /** HBM GB/s of one chip, likewise. */
  hbmGBs: number;
  /** Summed over devices: time an op ran. */
  busyUs: number;
  /** Summed over devices: the span from each device's first op to its last. */
  activeUs: number;
  /** 100 × (1 − busy ÷ active); 0 when nothing ran. */
  idlePercent: number;
  stepSource: StepSource;
}

/**
 * Device kernels that named an HLO op their program's HLO does not hold, left out of the op table as xprof
 * leaves them out: XLA names the CUDA command buffer (`command_buffer_1`) on every kernel it ran inside one.
 */
export interface UnattributedKernels {
  count: number;
  selfUs: number;
  /** The op names they gave, with the number of kernels under each. */
  names: Record<string, number>;
}

/** A plane of the capture. */
export interface PlaneSummary {
  name: string;
  lines: number;
  events: number;
}

/** The sentences the run view and `tpw profile` both show about the capture. */
export interface ProfileNotes {
  /** Where the steps came from, as a phrase ("the devices' Steps lines"); when there are none, why. */
  steps: string;
  /** What became of kernels no op was charged for, and how to see them per op; '' when there were none. */
  unattributed: string;
}

/** One line of the timeline: its events, sorted by start, as columns. */
export interface TimelineLine {
  plane: string;
  name: string;
  /** µs from the capture's first event. */
  start: Float64Array;
  dur: Float64Array;
  /** Index into ProfileSummary.timeline.names. */
  name_: Int32Array;
  /** Nesting depth (0 = outermost), for drawing nested events as rows. */
  depth: Uint8Array;
}

/** A capture's analysis, as the run view shows it. */
export interface ProfileSummary {
  hosts: string[];
  planes: PlaneSummary[];
  eventCount: number;
  spanUs: number;
  steps: StepBreakdown[];
  ops: OpRow[];
  unattributedKernels: UnattributedKernels;
  overview: ProfileOverview;
  notes: ProfileNotes;
  timeline: { names: string[]; lines: TimelineLine[] };
  warnings: string[];
}

/** One host of a run, beside the others. */
export interface HostRow {
  host: string;
  /** Where its capture is, for display. */
  location: string;
  steps: number;
  avgStepUs: number;
  idlePercent: number;
  busyUs: number;
}

/** Several hosts' captures side by side: each host's steps and idle share, the slowest, the ops of all combined. */
export interface ProfileHosts {
  hosts: HostRow[];
  /** The host with the longest average step (when more than one has steps). */
  slowest: string | null;
  /** The 200 ops with the most self time, rows of the same program and op summed over the hosts. */
  ops: OpRow[];
  /** Captures that could not be read, each with why. */
  errors: string[];
}
