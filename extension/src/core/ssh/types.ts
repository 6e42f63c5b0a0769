/** One SSH-reachable host: a TPU worker (real OpenSSH) or an emulated worker. */
export interface SshTarget {
  host: string;
  port: number;
  username: string;
  /** OpenSSH-format private key contents (never a path in logs, never in argv). */
  privateKey: string | Buffer;
  /** Name under which the host key is recorded in known_hosts; defaults to `[host]:port` / `host`. */
  hostKeyAlias?: string;
  /**
   * Reach the host through another SSH host (OpenSSH's ProxyJump: a bastion, or the VM's public worker).
   * Its connection is shared like any other; the host key of each hop is checked on its own.
   */
  proxyJump?: SshTarget;
  /**
   * Reach the host through a program's stdin/stdout (OpenSSH's ProxyCommand, e.g. IAP:
   * ['gcloud', 'compute', 'start-iap-tunnel', VM, '22', '--listen-on-stdin', '--zone', Z]). An argv, never a
   * shell string; `%h` and `%p` in it become the host and port.
   */
  proxyCommand?: string[];
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

/** Which of a remote command's output streams a line came from. */
export type OutputStream = 'stdout' | 'stderr';
