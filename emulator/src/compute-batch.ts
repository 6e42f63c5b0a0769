import * as crypto from 'node:crypto';
import { ApiError } from './types';

/**
 * Compute Engine's batch endpoint (`POST /batch/compute/v1`), which gcloud uses whenever one command makes several
 * calls (`instances list --zones=a,b`, `instances delete x y`, `describe` of several): a multipart/mixed body whose
 * parts are `application/http` requests, answered by a multipart/mixed body of `application/http` responses in the
 * same order, each carrying its request's Content-ID as `response-<id>`. The parts run as separate calls of the
 * same API, under the outer request's credentials.
 */

export interface BatchRequest {
  contentId: string;
  method: string;
  /** Path and query, as on the request line. */
  target: string;
  body: string;
}

export interface BatchResponse {
  contentId: string;
  status: number;
  body: unknown;
}

/** Google's limit on the calls in one batch. */
const MAX_PARTS = 1000;

export function parseBatch(contentType: string, raw: Buffer): BatchRequest[] {
  const boundary = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  if (!boundary) throw new ApiError('INVALID_ARGUMENT', 'A batch request needs a multipart/mixed body with a boundary.');
  const delimiter = `--${boundary[1] ?? boundary[2]}`;
  const text = raw.toString('utf8');
  const chunks = text.split(delimiter).slice(1);
  const out: BatchRequest[] = [];
  for (const chunk of chunks) {
    if (chunk.startsWith('--')) break;
    const [partHead, request] = splitHead(chunk.replace(/^\r?\n/, ''));
    const contentId = /^content-id:\s*<?([^>\r\n]*)>?\s*$/im.exec(partHead)?.[1] ?? String(out.length);
    const [reqHead, body] = splitHead(request);
    const line = /^([A-Z]+)\s+(\S+)(?:\s+HTTP\/\d(?:\.\d)?)?\s*$/m.exec(reqHead.split(/\r?\n/)[0] ?? '');
    if (!line) throw new ApiError('INVALID_ARGUMENT', `Part ${out.length} of the batch is not an HTTP request.`);
    out.push({ contentId, method: line[1], target: line[2], body: body.replace(/\r?\n$/, '') });
    if (out.length > MAX_PARTS) throw new ApiError('INVALID_ARGUMENT', `A batch holds at most ${MAX_PARTS} calls.`);
  }
  if (out.length === 0) throw new ApiError('INVALID_ARGUMENT', 'The batch request has no parts.');
  return out;
}

/** Headers and what follows the first blank line. */
function splitHead(s: string): [string, string] {
  const m = /\r?\n\r?\n/.exec(s);
  return m ? [s.slice(0, m.index), s.slice(m.index + m[0].length)] : [s, ''];
}

const REASON: Record<number, string> = { 200: 'OK', 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 409: 'Conflict', 412: 'Precondition Failed', 429: 'Too Many Requests', 500: 'Internal Server Error', 503: 'Service Unavailable' };

export function formatBatch(responses: BatchResponse[]): { contentType: string; body: string } {
  const boundary = `batch_${crypto.randomBytes(12).toString('hex')}`;
  const parts = responses.map((r) => {
    const json = JSON.stringify(r.body);
    return [
      `--${boundary}`,
      'Content-Type: application/http',
      `Content-ID: <response-${r.contentId}>`,
      '',
      `HTTP/1.1 ${r.status} ${REASON[r.status] ?? 'Error'}`,
      'Content-Type: application/json; charset=UTF-8',
      `Content-Length: ${Buffer.byteLength(json)}`,
      '',
      json,
      '',
    ].join('\r\n');
  });
  return { contentType: `multipart/mixed; boundary=${boundary}`, body: `${parts.join('')}--${boundary}--\r\n` };
}
