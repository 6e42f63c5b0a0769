/** One SSH-reachable host: a TPU worker (real OpenSSH) or an emulated worker. */
export interface SshTarget {
  host: string;
  port: number;
  username: string;
  /** OpenSSH-format private key contents (never a path in logs, never in argv). */
  privateKey: string | Buffer;
  /** Name under which the host key is recorded in known_hosts; defaults to `[host]:port` / `host`. */
  hostKeyAlias?: string;
}

/**
 * What to do with a host key we have not seen before. A key that *changed* is always refused:
 * that is the one check that must never be silently skipped.
 */
export type HostKeyPolicy = 'accept-new' | 'strict';

/** A TPU worker as the run layer sees it. */
export interface WorkerTarget extends SshTarget {
  /** 0-based worker index (TPU_WORKER_ID on the VM). */
  index: number;
}
