import * as net from 'node:net';

/**
 * A TCP port free on `host` a moment ago, for a listener bound soon after (the SSH workers on their own addresses,
 * a cluster's control plane on its own: gke/processes.ts). Between the two another program may take it; binding
 * an address of one's own keeps that window to programs that listen on every address.
 */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, host, () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}
