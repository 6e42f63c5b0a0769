import * as crypto from 'node:crypto';
import type * as http from 'node:http';
import { ApiError } from './types';

/**
 * Who may call the emulator's REST API: only a client that read the bearer token from the 0600 endpoint file,
 * talking to it by a loopback name, and not a web browser. The emulator can put SSH keys on its workers (shells
 * as its own user), so the checks run before routing, on every path (/v1, /v2, /emulator/v1, unknown ones).
 *  - Host must be a loopback name with the emulator's port: a DNS-rebinding page reaches 127.0.0.1 under its
 *    own host name, which this refuses (403).
 *  - Any `Origin` or `Sec-Fetch-*` header means a browser sent it (403); a page cannot remove them. The one
 *    exception is a lone `Sec-Fetch-Mode: cors`, which Node's fetch sends (browsers add Site and Dest too).
 *  - `Authorization: Bearer <token>`, compared in constant time, else 401 (the token is 256 random bits).
 *  - A body must be `application/json`: the content types a page may send without a preflight
 *    (text/plain, form encodings) are refused (415), whatever the other checks say. Compute Engine's batch path
 *    also takes multipart/mixed, which is not one of those (a page would need a preflight for it).
 */
export interface RestGuardOptions {
  token: string;
  /** The port the server listens on (the Host header must name it). */
  port: () => number;
  /** The address it listens on, accepted as a Host name as well as the loopback names. */
  host: string;
}

export function guardRequest(req: http.IncomingMessage, opts: RestGuardOptions, allow: { multipartMixed?: boolean } = {}): ApiError | undefined {
  const host = req.headers.host ?? '';
  if (!isLoopbackHost(host, opts.port(), opts.host)) {
    return new ApiError('PERMISSION_DENIED', `The local emulator answers only to a loopback Host (127.0.0.1, localhost or [::1] with port ${opts.port()}), not "${host.slice(0, 100)}".`);
  }
  const fetchHeaders = Object.keys(req.headers).filter((h) => h.startsWith('sec-fetch-'));
  const nodeFetch = fetchHeaders.length === 1 && fetchHeaders[0] === 'sec-fetch-mode' && req.headers['sec-fetch-mode'] === 'cors';
  const browserHeader = req.headers.origin !== undefined ? 'origin' : nodeFetch ? undefined : fetchHeaders[0];
  if (browserHeader) {
    return new ApiError('PERMISSION_DENIED', `The local emulator does not answer web browsers (the request carries a "${browserHeader}" header).`);
  }
  if (!tokenMatches(req.headers.authorization, opts.token)) {
    const why = req.headers.authorization ? 'The bearer token does not match' : 'The request has no bearer token';
    return new ApiError(
      'UNAUTHENTICATED',
      `${why}: the local emulator requires "Authorization: Bearer <token>" with the token from its endpoint file (<TPW_HOME>/emulator/endpoint.json).`,
    );
  }
  const multipart = allow.multipartMixed === true && /^multipart\/mixed\s*;/i.test(req.headers['content-type'] ?? '');
  if (hasBody(req) && !isJson(req.headers['content-type']) && !multipart) {
    return new ApiError('INVALID_ARGUMENT', `The request body must be application/json, not "${(req.headers['content-type'] ?? 'none').slice(0, 100)}".`, { http: 415 });
  }
  return undefined;
}

function isLoopbackHost(header: string, port: number, listenHost: string): boolean {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::(\d+))?$/.exec(header);
  if (!m || Number(m[2]) !== port) return false;
  const name = m[1].toLowerCase();
  return name === 'localhost' || name === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name) || name === listenHost.toLowerCase();
}

function tokenMatches(header: string | undefined, token: string): boolean {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  // Hashing first makes the comparison constant-time whatever the lengths.
  const digest = (s: string) => crypto.createHash('sha256').update(s).digest();
  return crypto.timingSafeEqual(digest(m ? m[1] : ''), digest(token)) && m !== null;
}

function hasBody(req: http.IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

function isJson(contentType: string | undefined): boolean {
  return /^application\/json\s*(;|$)/i.test(contentType ?? '');
}
