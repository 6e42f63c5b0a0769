import * as dns from 'node:dns/promises';
import * as net from 'node:net';
import * as os from 'node:os';
import type { Duplex } from 'node:stream';
import type { Connection } from 'ssh2';

/**
 * Port forwarding for one connection to an emulated worker, as OpenSSH's sshd does it on a TPU VM:
 * - `direct-tcpip` channels (`ssh -L`, `ssh -D`, `ssh -W`, VS Code Remote-SSH's tunnels): the worker connects
 *   to the named host and port and the channel carries the bytes;
 * - `direct-streamlocal@openssh.com` channels (`ssh -L port:/path/to.sock`): the same to a unix socket;
 * - `tcpip-forward` / `cancel-tcpip-forward` global requests (`ssh -R`): the worker listens, and each
 *   connection it accepts goes back to the client as a `forwarded-tcpip` channel.
 */

export interface ForwardingContext {
  /** The worker's own address: stands in for the VM's loopback, so two workers can forward the same port. */
  workerAddress: string;
  /**
   * Whether the emulator itself serves `port` on the worker's address as a VM's own service on its loopback
   * (libtpu's metrics, 8431): 'serving', 'down' (this worker's is not listening now), or undefined (not such a
   * port). A forward to the loopback at such a port reaches this worker's service; while it is down, nothing, as on
   * a VM, even if another emulator's worker on the same address listens there.
   */
  ownLoopbackService?: (port: number) => 'serving' | 'down' | undefined;
  /** True once the worker is shutting down: nothing new may start. */
  closing(): boolean;
  log(msg: string): void;
}

export function serveForwarding(conn: Connection, ctx: ForwardingContext): void {
  const sockets = new Set<net.Socket>();
  const listeners = new Map<string, net.Server>(); // key: `${bindAddr as the client named it}:${bound port}`
  const track = (sock: net.Socket): void => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
  };

  conn.on('tcpip', (accept, reject, info) => {
    if (ctx.closing()) return reject();
    void localTarget(info.destIP).then((address) => {
      if (!address) {
        // A real TPU VM reaches anything its VPC does; an emulated worker's network is this machine, so only
        // its own addresses (loopback, where the worker's programs listen, and its interfaces) are reachable.
        // Anything else would leave the emulation: refused as an unreachable host is.
        ctx.log(`direct-tcpip to ${info.destIP}:${info.destPort} refused: not an address of this machine`);
        return reject();
      }
      const own = isLoopback(address) ? ctx.ownLoopbackService?.(info.destPort) : undefined;
      if (own === 'down') {
        ctx.log(`direct-tcpip to ${info.destIP}:${info.destPort} refused: the worker's service there is down`);
        return reject();
      }
      const sock = net.connect({ host: own ? ctx.workerAddress : address, port: info.destPort });
      track(sock);
      sock.once('error', (e: Error) => {
        ctx.log(`direct-tcpip to ${info.destIP}:${info.destPort}: ${e.message}`);
        reject(); // no-op once accepted
      });
      sock.once('connect', () => splice(sock, accept()));
    });
  });

  conn.on('openssh.streamlocal', (accept, reject, info) => {
    if (ctx.closing()) return reject();
    const sock = net.connect({ path: info.socketPath });
    track(sock);
    sock.once('error', (e: Error) => {
      ctx.log(`direct-streamlocal to ${info.socketPath}: ${e.message}`);
      reject();
    });
    sock.once('connect', () => splice(sock, accept()));
  });

  conn.on('request', (accept, reject, name, info) => {
    if (name === 'tcpip-forward' && !ctx.closing()) {
      // sshd without GatewayPorts binds the VM's loopback whatever address the client named ("localhost",
      // "", "0.0.0.0"); the worker's own address is its loopback here.
      const server = net.createServer((sock) => {
        track(sock);
        sock.on('error', () => undefined);
        const bound = (server.address() as net.AddressInfo).port;
        conn.forwardOut(info.bindAddr, bound, sock.remoteAddress ?? '', sock.remotePort ?? 0, (err, channel) => {
          if (err) sock.destroy();
          else splice(sock, channel);
        });
      });
      server.once('error', (e: Error) => {
        ctx.log(`tcpip-forward ${info.bindAddr}:${info.bindPort}: ${e.message}`);
        reject?.();
      });
      server.listen(info.bindPort, ctx.workerAddress, () => {
        const bound = (server.address() as net.AddressInfo).port;
        listeners.set(`${info.bindAddr}:${bound}`, server);
        accept?.(bound);
      });
    } else if (name === 'cancel-tcpip-forward') {
      const key = `${info.bindAddr}:${info.bindPort}`;
      const server = listeners.get(key);
      if (!server) return reject?.();
      listeners.delete(key);
      server.close();
      accept?.();
    } else {
      reject?.(); // streamlocal-forward (ssh -R to a unix socket): not offered
    }
  });

  conn.on('close', () => {
    for (const s of listeners.values()) s.close();
    listeners.clear();
    for (const s of sockets) s.destroy();
  });
}

/** Both directions, half-closes passed on, and either side's end or failure tears the other down. */
function splice(sock: net.Socket, channel: Duplex): void {
  sock.pipe(channel);
  channel.pipe(sock);
  const teardown = () => {
    sock.destroy();
    channel.destroy();
  };
  sock.on('error', teardown);
  channel.on('error', teardown);
  sock.on('close', () => channel.end());
  channel.on('close', () => sock.destroy());
}

/** The address to connect to when `host` is this machine (loopback or one of its interfaces), else undefined. */
async function localTarget(host: string): Promise<string | undefined> {
  let candidates: string[];
  try {
    candidates = net.isIP(host) ? [host] : (await dns.lookup(host, { all: true })).map((a) => a.address);
  } catch {
    return undefined;
  }
  const own = new Set(Object.values(os.networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address)));
  return candidates.find((a) => isLoopback(a) || own.has(a));
}

function isLoopback(address: string): boolean {
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return (net.isIPv4(v4) && v4.startsWith('127.')) || address === '::1';
}
