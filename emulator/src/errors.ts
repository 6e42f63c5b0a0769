/**
 * The emulator's own error: a complete sentence naming the thing at fault, with a gRPC-style code. It is the
 * emulator's (a separate program from the product): the product sees these only as its CLI's stderr and exit code,
 * or as REST answers in Google's error shape.
 */
export type EmulatorErrorCode = 'INVALID_ARGUMENT' | 'ALREADY_EXISTS' | 'FAILED_PRECONDITION' | 'PERMISSION_DENIED' | 'UNAVAILABLE' | 'NOT_FOUND' | 'INTERNAL';

export class EmulatorError extends Error {
  constructor(
    readonly code: EmulatorErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'EmulatorError';
  }
}
