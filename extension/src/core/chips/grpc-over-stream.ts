import * as http2 from 'node:http2';
import type { Duplex } from 'node:stream';

/**
 * Unary gRPC calls (the HTTP/2 mapping of gRPC's PROTOCOL-HTTP2.md: a POST with `application/grpc`, each message
 * as a 5-byte prefix and its bytes, the status in the trailers) on an HTTP/2 session over any byte stream. Here the
 * stream is an SSH `direct-tcpip` channel to a worker's localhost:8431: nothing listens on this machine, so no
 * other local user can reach the worker's service through us, and grpc-js's client (which opens its own TCP
 * connections) is not needed.
 */

export type GrpcFailure = 'timeout' | 'status' | 'protocol' | 'closed';

export class GrpcCallError extends Error {
  constructor(
    readonly failure: GrpcFailure,
    message: string,
    /** The gRPC status code, for failure 'status'. */
    readonly code?: number,
  ) {
    super(message);
    this.name = 'GrpcCallError';
  }
}

/** gRPC status codes this file names. */
export const GRPC_STATUS = { OK: 0, NOT_FOUND: 5, UNIMPLEMENTED: 12 } as const;

/** The most one reply may be: libtpu's answers are a few KiB per metric. */
const MAX_MESSAGE_BYTES = 4 << 20;

export class GrpcStreamSession {
  private closed = false;

  private constructor(private readonly session: http2.ClientHttp2Session) {
    session.on('error', () => undefined); // surfaced through the calls in flight
    session.on('close', () => (this.closed = true));
  }

  /** An HTTP/2 session on `stream`; `authority` is what the server is told it was reached as (host:port). */
  static open(stream: Duplex, authority: string): GrpcStreamSession {
    const session = http2.connect(`http://${authority}`, { createConnection: () => stream });
    return new GrpcStreamSession(session);
  }

  get isClosed(): boolean {
    return this.closed || this.session.closed || this.session.destroyed;
  }

  close(): void {
    this.closed = true;
    this.session.destroy();
  }

  /** One unary call: `path` is `/package.Service/Method`; resolves with the reply message's bytes. */
  unary(path: string, request: Uint8Array, deadlineMs: number): Promise<Uint8Array> {
    return new Promise<Uint8Array>((resolve, reject) => {
      if (this.isClosed) return reject(new GrpcCallError('closed', 'the connection to the service is closed'));
      let settled = false;
      const settle = (fn: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        fn();
      };
      let req: http2.ClientHttp2Stream;
      try {
        req = this.session.request({
          ':method': 'POST',
          ':path': path,
          'content-type': 'application/grpc+proto',
          te: 'trailers',
          'grpc-timeout': `${Math.max(1, Math.ceil(deadlineMs))}m`,
        });
      } catch (e) {
        return reject(new GrpcCallError('closed', `the connection to the service is closed (${(e as Error).message})`));
      }
      const timer = setTimeout(() => {
        settle(() => reject(new GrpcCallError('timeout', `no answer within ${(deadlineMs / 1000).toFixed(1)} s`)));
        req.close(http2.constants.NGHTTP2_CANCEL);
      }, deadlineMs);
      const chunks: Buffer[] = [];
      let bytes = 0;
      let headers: http2.IncomingHttpHeaders = {};
      req.on('response', (h) => (headers = h));
      req.on('data', (c: Buffer) => {
        bytes += c.length;
        if (bytes > MAX_MESSAGE_BYTES + 5) {
          settle(() => reject(new GrpcCallError('protocol', `a reply larger than ${MAX_MESSAGE_BYTES} bytes`)));
          req.close(http2.constants.NGHTTP2_CANCEL);
        } else chunks.push(c);
      });
      req.on('trailers', (t) => (headers = { ...headers, ...t }));
      req.on('error', (e: Error) => settle(() => reject(new GrpcCallError(this.isClosed ? 'closed' : 'protocol', e.message))));
      req.on('close', () => settle(() => {
        try {
          resolve(replyOf(headers, Buffer.concat(chunks)));
        } catch (e) {
          reject(e);
        }
      }));
      req.end(frame(request));
    });
  }
}

function frame(message: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt8(0, 0);
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

/** The one message of a finished unary call, or why there is none. */
function replyOf(headers: http2.IncomingHttpHeaders, body: Buffer): Uint8Array {
  const httpStatus = Number(headers[':status'] ?? 0);
  if (httpStatus !== 200) throw new GrpcCallError('protocol', httpStatus ? `HTTP status ${httpStatus} instead of a gRPC reply` : 'the stream ended without a reply');
  const contentType = String(headers['content-type'] ?? '');
  if (!contentType.startsWith('application/grpc')) throw new GrpcCallError('protocol', `content type "${contentType}" instead of application/grpc`);
  const status = headers['grpc-status'];
  if (status === undefined) throw new GrpcCallError('protocol', 'the reply has no grpc-status');
  if (Number(status) !== GRPC_STATUS.OK) {
    const message = decodeURIComponent(String(headers['grpc-message'] ?? ''));
    throw new GrpcCallError('status', `gRPC status ${String(status)}${message ? `: ${message}` : ''}`, Number(status));
  }
  if (body.length < 5) throw new GrpcCallError('protocol', 'the reply has no message');
  if (body.readUInt8(0) !== 0) throw new GrpcCallError('protocol', 'the reply is compressed, which was not asked for');
  const length = body.readUInt32BE(1);
  if (body.length !== 5 + length) throw new GrpcCallError('protocol', `the reply's message is ${body.length - 5} bytes where its prefix says ${length}`);
  return body.subarray(5);
}
