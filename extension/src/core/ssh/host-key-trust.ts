import type { ServerHostKeyAlgorithm } from 'ssh2';
import { TpwError, describeError } from '../errors';
import { checkHostKey, recordHostKey, UnknownHostKeyError, type HostKeyCheck } from './known-hosts';
// Used only inside functions, so connection.ts may import this file in turn.
import { targetLabel, type ConnectionManagerOptions } from './connection';
import type { SshTarget } from './types';

/**
 * How a connection decides to trust a host key: the policy by backend, the question asked on first contact
 * (VS Code's modal), and the order of host key algorithms that keeps a recorded key from looking changed.
 * The check itself (known_hosts) is known-hosts.ts.
 */

/**
 * Host keys by backend: the emulator's workers present keys it generated on this machine, so first contact
 * is recorded silently; a real VM's first contact is refused (with the fingerprint) unless the user accepted
 * new keys (`--accept-new-host-keys`) or a `confirmHostKey` prompt is given (VS Code). A changed key is
 * always refused.
 */
export function hostKeyOptionsFor(kind: 'emulator' | 'cloud', acceptNew: boolean): Pick<ConnectionManagerOptions, 'hostKeyPolicy'> {
  return { hostKeyPolicy: kind === 'emulator' || acceptNew ? 'accept-new' : 'strict' };
}

export interface HostKeyQuestion {
  /** `worker 3 (10.0.0.4:22)` */
  label: string;
  keyType: string;
  /** SHA256:… as `ssh-keygen -l` prints it. */
  fingerprint: string;
}

/** ssh2's asynchronous hostVerifier form: checks, and on an unknown key asks before recording it. */
export function askingHostVerifier(
  check: HostKeyCheck,
  target: SshTarget,
  confirm: (q: HostKeyQuestion) => Promise<boolean>,
  onReject: (e: TpwError) => void,
  log: (msg: string) => void,
): (key: Buffer, verify: (ok: boolean) => void) => void {
  return (key, verify) => {
    try {
      checkHostKey({ ...check, policy: 'strict' }, key);
      verify(true);
    } catch (e) {
      if (!(e instanceof UnknownHostKeyError)) {
        onReject(e instanceof TpwError ? e : new TpwError('SSH_HOST_KEY', describeError(e)));
        verify(false);
        return;
      }
      const { name, keyType, fingerprint, file } = e.key;
      confirm({ label: targetLabel(target), keyType, fingerprint }).then(
        (ok) => {
          if (ok) {
            recordHostKey(file, name, keyType, key);
            log(`recorded new host key ${keyType} ${fingerprint} for ${name} (confirmed)`);
          } else onReject(new TpwError('SSH_HOST_KEY', `${targetLabel(target)}: the host key ${keyType} ${fingerprint} was not accepted; not connecting.`));
          verify(ok);
        },
        (err: unknown) => {
          onReject(new TpwError('SSH_HOST_KEY', `${targetLabel(target)}: host key confirmation failed: ${describeError(err)}`));
          verify(false);
        },
      );
    }
  };
}

const DEFAULT_HOST_KEY_ALGOS: ServerHostKeyAlgorithm[] = ['ssh-ed25519', 'ecdsa-sha2-nistp256', 'ecdsa-sha2-nistp384', 'ecdsa-sha2-nistp521', 'rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'];

/**
 * Host key algorithms with those of already-recorded keys first: a server that has ed25519 and ecdsa keys
 * must show us the one we recorded, or a mere change of preference would look like a changed key.
 */
export function hostKeyAlgorithmsFor(knownTypes: string[]): ServerHostKeyAlgorithm[] {
  const first: ServerHostKeyAlgorithm[] = [];
  for (const t of knownTypes) {
    if (t === 'ssh-rsa') first.push('rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa');
    else {
      const known = DEFAULT_HOST_KEY_ALGOS.find((a) => a === t);
      if (known) first.push(known);
    }
  }
  return [...new Set([...first, ...DEFAULT_HOST_KEY_ALGOS])];
}
