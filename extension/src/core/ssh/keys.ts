import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { tpwHome } from '../paths';
import { generateEd25519KeyPair, parsesAsPublicKey } from '../../../../protocol/node/ssh-keys';

export { generateEd25519KeyPair, parsesAsPublicKey } from '../../../../protocol/node/ssh-keys';

/**
 * TPU Workbench's own SSH identity: an ed25519 key pair under TPW_HOME, created on first use (0600), so a
 * fresh VM works without gcloud: "Add my key to this VM" puts the public half into the node's metadata
 * `ssh-keys`, which the TPU VM's guest agent installs for that user on every worker.
 */

export interface KeyPair {
  privateKeyPath: string;
  privateKey: string;
  /** `ssh-ed25519 AAAA… tpu-workbench@host` */
  publicKey: string;
}

export function extensionKeyPath(home = tpwHome()): string {
  return path.join(home, 'id_ed25519');
}

/** The key pair, created if it does not exist yet. */
export function ensureExtensionKey(home = tpwHome()): KeyPair {
  const file = extensionKeyPath(home);
  setAsideIfMalformed(file);
  if (!fs.existsSync(file)) {
    const pair = generateEd25519KeyPair(`tpu-workbench@${os.hostname()}`);
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    // wx: two first uses at once must not overwrite each other's key.
    try {
      fs.writeFileSync(file, pair.private, { mode: 0o600, flag: 'wx' });
      fs.writeFileSync(`${file}.pub`, `${pair.public}\n`, { mode: 0o644 });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }
  return { privateKeyPath: file, privateKey: fs.readFileSync(file, 'utf8'), publicKey: fs.readFileSync(`${file}.pub`, 'utf8').trim() };
}

/**
 * A key pair written by an earlier version with ssh2's malformed public half (see generateEd25519KeyPair) can
 * never have worked: no server parses it. It is renamed to `id_ed25519.malformed-<time>` (kept, not deleted)
 * so a good one is made in its place.
 */
function setAsideIfMalformed(file: string): void {
  let pub: string;
  try {
    pub = fs.readFileSync(`${file}.pub`, 'utf8');
  } catch {
    return;
  }
  if (!fs.existsSync(file) || parsesAsPublicKey(pub)) return;
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  fs.renameSync(file, `${file}.malformed-${stamp}`);
  fs.renameSync(`${file}.pub`, `${file}.pub.malformed-${stamp}`);
}
