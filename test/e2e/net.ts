import * as http from 'node:http';
import * as net from 'node:net';
import { delay } from './processes';

/** A TCP port that was free a moment ago on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function httpStatus(url: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get(url, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.setTimeout(2000, () => {
      req.destroy();
      resolve(0);
    });
  });
}

/** Waits until `url` answers with a status below 500, or until `isDead()` says the server gave up. */
export async function waitForHttp(url: string, timeoutMs: number, isDead: () => boolean = () => false): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (isDead()) throw new Error(`server for ${url} exited before answering`);
    const status = await httpStatus(url);
    if (status > 0 && status < 500) return;
    await delay(250);
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms`);
}
