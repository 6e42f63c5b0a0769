/**
 * Every message between the extension host and the run view, as one typed union per direction.
 * Both sides import this file, so a change to a message is a compile error on both.
 */
export interface LogLinesMessage {
  type: 'logLines';
  worker: number;
  lines: string[];
}

export interface RunStateMessage {
  type: 'runState';
  runId: string;
  state: 'starting' | 'running' | 'succeeded' | 'failed' | 'cancelled';
  summary?: string;
}

export type HostToWebview = LogLinesMessage | RunStateMessage;

export interface ReadyMessage {
  type: 'ready';
}

export interface CancelRunMessage {
  type: 'cancelRun';
  runId: string;
}

export type WebviewToHost = ReadyMessage | CancelRunMessage;
