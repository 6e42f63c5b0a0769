/**
 * One error type for everything the user can cause or fix. `message` is a complete sentence that names the
 * thing at fault (the VM, the file, the worker), so the CLI prints it as-is and the extension shows it with a
 * "Show log" action. `code` lets callers branch without parsing text.
 */
export type TpwErrorCode =
  | 'NOT_FOUND'
  | 'ALREADY_EXISTS'
  | 'INVALID_ARGUMENT'
  | 'EMULATOR_NOT_RUNNING'
  | 'UNAVAILABLE'
  | 'PERMISSION_DENIED'
  /** Quota or capacity exhausted (HTTP 429, gRPC 8): retry elsewhere (see zonesOffering) or queue it. */
  | 'RESOURCE_EXHAUSTED'
  /** The Cloud TPU API (or another) is not enabled in the project; the message carries the activation URL. */
  | 'API_DISABLED'
  /** No usable Google credentials (Application Default Credentials missing, unreadable or expired). */
  | 'UNAUTHENTICATED'
  | 'SSH_CONNECT'
  | 'SSH_HOST_KEY'
  | 'RECIPE'
  | 'CANCELLED'
  | 'FAILED_PRECONDITION'
  | 'INTERNAL';

export class TpwError extends Error {
  constructor(
    readonly code: TpwErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'TpwError';
  }
}

export function isTpwError(e: unknown, code?: TpwErrorCode): e is TpwError {
  return e instanceof TpwError && (code === undefined || e.code === code);
}

/** A one-line description of any thrown value, for the CLI's stderr and for log lines. */
export function describeError(e: unknown): string {
  if (e instanceof Error) return e.message.split('\n')[0] || e.name;
  return String(e);
}
