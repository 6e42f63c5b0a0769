/**
 * Every message between the extension host and the run view (a webview), as one typed union per direction.
 * Both sides import this file, so a change to a message is a compile error on both. What a capture's analysis
 * gives the view is declared once, in the analysis's Rust (native/profile/src/output/types.rs), and generated
 * into profile-summary.generated.ts.
 */
import type { WorkerChips } from './chip-readings';
import type { MetricRecord } from './metrics-record';
import type { ProfileHosts, ProfileSummary } from './profile-summary.generated';
import type { RunStatus, WorkerStatus } from './run-status';

export type * from './profile-summary.generated';

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
  /** Workers per slice of a multislice run (or a GKE run): worker i is labelled s⌊i/n⌋w(i mod n), as `[sNwM]` in logs. */
  workersPerSlice?: number;
}

/** A worker's label: `w5`, or `s1w1` when the run has slices of `perSlice` workers (the `[sNwM]` of the logs). */
export function workerLabel(worker: number, perSlice?: number): string {
  return perSlice && perSlice > 0 ? `s${Math.floor(worker / perSlice)}w${worker % perSlice}` : `w${worker}`;
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

/** Several hosts' captures side by side (ProfileHosts: each host's steps and idle share, the slowest, the ops of all). */
export interface ProfileHostsMessage extends ProfileHosts {
  type: 'profileHosts';
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
