import * as http from 'node:http';
import * as net from 'node:net';
import type { ConnectionManager } from '../../extension/src/core/ssh/connection';
import { execCollect } from '../../extension/src/core/ssh/exec';
import { bashCommand, shQuote } from '../../extension/src/core/ssh/quote';
import type { SshTarget } from '../../extension/src/core/ssh/types';

/** A TCP port free on this machine's loopback now (an emulated worker's loopback is this machine's). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/**
 * Starts a program on a worker in a session of its own, so it outlives the SSH channel (and a dropped
 * connection) as a server started with nohup does on a VM. Returns its pid on the worker.
 */
export async function startOnWorker(conns: ConnectionManager, target: SshTarget, script: string, logName: string): Promise<number> {
  const r = await execCollect(await conns.get(target), bashCommand(`setsid nohup bash -c ${shQuote(script)} > ${logName} 2>&1 < /dev/null & echo $!`));
  const pid = Number(r.stdout.trim());
  if (r.code !== 0 || !Number.isInteger(pid)) throw new Error(`starting ${script} on the worker failed: ${r.stderr}`);
  return pid;
}

/** Waits until something accepts TCP connections on the worker's 127.0.0.1:`port` (asked on the worker). */
export async function waitForPortOnWorker(conns: ConnectionManager, target: SshTarget, port: number, timeoutS = 30): Promise<void> {
  const script = `for i in $(seq ${timeoutS * 10}); do (exec 3<>/dev/tcp/127.0.0.1/${port}) 2>/dev/null && exit 0; sleep 0.1; done; exit 1`;
  const r = await execCollect(await conns.get(target), bashCommand(script));
  if (r.code !== 0) throw new Error(`nothing listened on port ${port} of the worker within ${timeoutS}s`);
}

export async function stopOnWorker(conns: ConnectionManager, target: SshTarget, pid: number): Promise<void> {
  await execCollect(await conns.get(target), bashCommand(`kill ${pid} 2>/dev/null; true`));
}

/** GET on a fresh TCP connection (no keep-alive: each request goes through the forward anew). */
export function httpGet(url: string, timeoutMs = 10_000): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
  });
}
