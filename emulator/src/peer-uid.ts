import * as fs from 'node:fs';
import type * as net from 'node:net';

/**
 * The user id owning the other end of a loopback TCP connection, as Linux's /proc/net/tcp tells it: the row
 * whose local address is the peer's and whose remote address is ours carries the uid of the process that made
 * that socket. Loopback ports are open to every local user, so a server that must answer only its own user's
 * processes (the emulated VMs' metadata server) asks this. Undefined when it cannot tell (no /proc, IPv6, the
 * connection already gone): callers refuse then.
 */
export function peerUid(sock: net.Socket): number | undefined {
  const peer = hexEndpoint(sock.remoteAddress, sock.remotePort);
  const self = hexEndpoint(sock.localAddress, sock.localPort);
  if (!peer || !self) return undefined;
  let table: string;
  try {
    table = fs.readFileSync('/proc/net/tcp', 'utf8');
  } catch {
    return undefined;
  }
  for (const line of table.split('\n')) {
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid …
    const f = line.trim().split(/\s+/);
    if (f[1] === peer && f[2] === self) return Number(f[7]);
  }
  return undefined;
}

/** `127.0.0.1`, 5000 → `0100007F:1388`: /proc/net/tcp's form (the address as a little-endian word). */
function hexEndpoint(address: string | undefined, port: number | undefined): string | undefined {
  const v4 = address?.startsWith('::ffff:') ? address.slice(7) : address;
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(v4 ?? '');
  if (!m || port === undefined) return undefined;
  const hex = (n: string) => Number(n).toString(16).toUpperCase().padStart(2, '0');
  return `${hex(m[4])}${hex(m[3])}${hex(m[2])}${hex(m[1])}:${port.toString(16).toUpperCase().padStart(4, '0')}`;
}
