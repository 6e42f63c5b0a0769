import type * as http from 'node:http';
import { ApiError } from './types';

/**
 * The JSON bodies of the emulator's HTTP server: a request's, read with Google's size limit, and the answer's.
 */

const MAX_BODY = 1 << 20;
/** A body past MAX_BODY is read to its end (and dropped) up to this, so the client gets the 400; beyond, the socket is cut. */
const MAX_DRAINED = 64 << 20;

/** Google's answer to an oversized body (400); the connection is closed after it. */
export class PayloadTooLarge extends ApiError {
  constructor() {
    super('INVALID_ARGUMENT', `Request payload size exceeds the limit: ${MAX_BODY} bytes.`);
  }
}

/** A request's body, with Google's size limit. */
export function readBody(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      // Too large: keep reading (dropping it) so the answer reaches a client still sending, then close.
      if (size > MAX_DRAINED) {
        reject(new PayloadTooLarge());
        req.destroy();
      } else if (size <= MAX_BODY) chunks.push(c);
    });
    req.on('error', reject);
    req.on('end', () => (size > MAX_BODY ? reject(new PayloadTooLarge()) : resolve(Buffer.concat(chunks))));
  });
}

/** A JSON request body as an object ({} when empty). */
export function parseJsonBody(raw: string): Record<string, unknown> {
  const text = raw.trim();
  if (!text) return {};
  try {
    const parsed: unknown = JSON.parse(text);
    // @google-cloud/compute sends a body-less POST (operations.wait, listManagedInstances) as the JSON string "".
    if (parsed === '') return {};
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
    return parsed as Record<string, unknown>;
  } catch {
    throw new ApiError('INVALID_ARGUMENT', `Invalid JSON payload received: ${text.slice(0, 80)}`);
  }
}

export async function readJson(req: http.IncomingMessage): Promise<Record<string, unknown>> {
  return parseJsonBody((await readBody(req)).toString('utf8'));
}

export function send(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

