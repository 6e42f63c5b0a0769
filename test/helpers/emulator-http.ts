import * as http from 'node:http';
import type { EmulatorEndpoint } from '../../protocol/node/emulator-endpoint';

/** What a test needs of the endpoint file to call the emulator's REST API itself. */
export type EmulatorAddress = Pick<EmulatorEndpoint, 'host' | 'restPort' | 'token'>;

export interface EmulatorReply {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The JSON body ({} when empty). */
  body: Record<string, unknown>;
}

/** The headers every call to the emulator needs: its bearer token (and a JSON content type for a body). */
export function emulatorHeaders(ep: Pick<EmulatorEndpoint, 'token'>, withBody = false): Record<string, string> {
  return { authorization: `Bearer ${ep.token}`, ...(withBody ? { 'content-type': 'application/json' } : {}) };
}

/**
 * One raw HTTP call to the emulator's REST server with its token, no keep-alive. `body` is sent as JSON (a string
 * as it is); `headers` are added to or replace the defaults (a test of the checks passes its own).
 */
export function emulatorRequest(
  ep: EmulatorAddress,
  method: string,
  urlPath: string,
  body?: unknown,
  headers: Record<string, string | undefined> = {},
): Promise<EmulatorReply> {
  const text = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  const merged: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...emulatorHeaders(ep, text !== undefined), ...headers })) if (v !== undefined) merged[k] = v;
  return new Promise((resolve, reject) => {
    const req = http.request({ host: ep.host, port: ep.restPort, method, path: urlPath, agent: false, headers: merged }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        try {
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: raw ? (JSON.parse(raw) as Record<string, unknown>) : {} });
        } catch (e) {
          reject(new Error(`${method} ${urlPath}: HTTP ${res.statusCode} with a body that is not JSON: ${raw.slice(0, 200)}`, { cause: e }));
        }
      });
    });
    req.on('error', reject);
    req.end(text);
  });
}
