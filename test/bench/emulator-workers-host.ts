/**
 * Hosts the emulator's SshWorkerPool in a process of its own for the benchmarks, as `tpw emulator start` does,
 * so the servers do not share an event loop (and a CPU) with the client being measured.
 *
 *   node --import tsx test/bench/emulator-workers-host.ts '<json HostConfig>'
 *
 * Prints `ready` once every worker listens; closes the pool (killing whatever it started) on SIGTERM/SIGINT
 * or when its stdin closes (the parent went away).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { SshWorkerPool } from '../../emulator/src/ssh-workers';

export interface HostConfig {
  port: number;
  hostKeyFile: string;
  authorizedKeyFile: string;
  username: string;
  addresses: string[];
  sandboxRoot: string;
}

async function main(): Promise<void> {
  const cfg = JSON.parse(process.argv[2] ?? '') as HostConfig;
  const pool = new SshWorkerPool({
    port: cfg.port,
    hostKey: fs.readFileSync(cfg.hostKeyFile, 'utf8'),
    authorizedKey: fs.readFileSync(cfg.authorizedKeyFile, 'utf8').trim(),
    username: cfg.username,
  });
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= pool.close().finally(() => process.exit(0));
  };
  process.once('SIGTERM', close);
  process.once('SIGINT', close);
  process.stdin.on('close', close).resume();
  for (const [index, address] of cfg.addresses.entries()) {
    await pool.addWorker({ nodeId: 'bench', index, address, hostnames: cfg.addresses, sandboxDir: path.join(cfg.sandboxRoot, `w${index}`), acceleratorType: 'v4-32' });
  }
  process.stdout.write('ready\n');
}

main().catch((e: unknown) => {
  process.stderr.write(`emulator-workers-host: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
