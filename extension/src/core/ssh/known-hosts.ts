import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { TpwError } from '../errors';
import { knownHostsFile } from '../paths';
import type { HostKeyPolicy } from './types';

/**
 * Host key verification against an OpenSSH-format known_hosts file (our own, `<TPW_HOME>/known_hosts`, so
 * that emulator VMs that come and go on reused loopback addresses never touch ~/.ssh/known_hosts).
 * The file stays readable by OpenSSH: `ssh -o UserKnownHostsFile=<it>` works against the same entries.
 */

/** The name OpenSSH records a host under: `host` on port 22, `[host]:port` otherwise. */
export function knownHostsName(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`;
}

/** `SHA256:<base64 without padding>` of the raw key blob, exactly as `ssh-keygen -l` prints it. */
export function fingerprintSha256(keyBlob: Buffer): string {
  return `SHA256:${crypto.createHash('sha256').update(keyBlob).digest('base64').replace(/=+$/, '')}`;
}

/** The key type named inside an SSH wire-format public key blob (its first length-prefixed string). */
export function sshKeyType(keyBlob: Buffer): string {
  if (keyBlob.length < 4) return 'unknown';
  const len = keyBlob.readUInt32BE(0);
  if (len <= 0 || len > 64 || 4 + len > keyBlob.length) return 'unknown';
  return keyBlob.subarray(4, 4 + len).toString('latin1');
}

export interface KnownHostEntry {
  /** 1-based line number, for "remove line N" advice. */
  line: number;
  marker?: '@revoked' | '@cert-authority';
  hostPatterns: string;
  keyType: string;
  key: Buffer;
}

export function parseKnownHosts(text: string): KnownHostEntry[] {
  const entries: KnownHostEntry[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i].replace(/\r$/, '').trim();
    if (raw === '' || raw.startsWith('#')) continue;
    const fields = raw.split(/\s+/);
    let marker: KnownHostEntry['marker'];
    if (fields[0] === '@revoked' || fields[0] === '@cert-authority') marker = fields.shift() as KnownHostEntry['marker'];
    if (fields.length < 3) continue; // malformed: OpenSSH skips it too
    const [hostPatterns, keyType, b64] = fields;
    const key = Buffer.from(b64, 'base64');
    if (key.length === 0) continue;
    entries.push({ line: i + 1, marker, hostPatterns, keyType, key });
  }
  return entries;
}

/** OpenSSH's matching of one host field: comma-separated patterns with `*`/`?`, `!` negation, or `|1|` hashes. */
export function hostFieldMatches(field: string, name: string): boolean {
  if (field.startsWith('|1|')) {
    const [, , salt, hash] = field.split('|');
    if (!salt || !hash) return false;
    const mac = crypto.createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest();
    const want = Buffer.from(hash, 'base64');
    return want.length === mac.length && crypto.timingSafeEqual(mac, want);
  }
  let matched = false;
  for (const pattern of field.split(',')) {
    const negated = pattern.startsWith('!');
    const p = negated ? pattern.slice(1) : pattern;
    if (!globMatch(p.toLowerCase(), name.toLowerCase())) continue;
    if (negated) return false; // a matching negation vetoes the whole line, as in OpenSSH
    matched = true;
  }
  return matched;
}

function globMatch(pattern: string, s: string): boolean {
  const re = new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`);
  return re.test(s);
}

export interface HostKeyCheck {
  host: string;
  port: number;
  /** Overrides the known_hosts name (SshTarget.hostKeyAlias). */
  alias?: string;
  policy: HostKeyPolicy;
  /** Defaults to knownHostsFile() under TPW_HOME. */
  file?: string;
}

export type HostKeyVerdict = 'known' | 'recorded';

/** First contact under the strict policy: nothing recorded for this host. A caller may ask the user, then record. */
export class UnknownHostKeyError extends TpwError {
  constructor(
    message: string,
    readonly key: { name: string; keyType: string; fingerprint: string; file: string },
  ) {
    super('SSH_HOST_KEY', message);
  }
}

function readEntries(file: string): KnownHostEntry[] {
  try {
    return parseKnownHosts(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new TpwError('SSH_HOST_KEY', `Cannot read the known hosts file ${file}: ${(e as Error).message}.`, { cause: e });
  }
}

/** Key types already recorded for a host, so the connection can ask the server for one of those first. */
export function knownKeyTypes(check: Omit<HostKeyCheck, 'policy'>): string[] {
  const file = check.file ?? knownHostsFile();
  const name = check.alias ?? knownHostsName(check.host, check.port);
  const types = readEntries(file)
    .filter((e) => e.marker === undefined && hostFieldMatches(e.hostPatterns, name))
    .map((e) => e.keyType);
  return [...new Set(types)];
}

/**
 * Checks the key a server presented. Returns 'known' or 'recorded' (accept-new, first contact); throws
 * TpwError('SSH_HOST_KEY') for a changed, revoked or (under 'strict') unknown key.
 */
export function checkHostKey(check: HostKeyCheck, keyBlob: Buffer): HostKeyVerdict {
  const file = check.file ?? knownHostsFile();
  const name = check.alias ?? knownHostsName(check.host, check.port);
  const where = `${check.host} port ${check.port}`;
  const type = sshKeyType(keyBlob);
  const fp = fingerprintSha256(keyBlob);
  const entries = readEntries(file).filter((e) => hostFieldMatches(e.hostPatterns, name));

  const revoked = entries.find((e) => e.marker === '@revoked' && e.key.equals(keyBlob));
  if (revoked) {
    throw new TpwError('SSH_HOST_KEY', `The SSH host key of ${where} (${type} ${fp}) is marked @revoked in ${file} line ${revoked.line}; refusing to connect.`);
  }
  const plain = entries.filter((e) => e.marker === undefined);
  if (plain.some((e) => e.key.equals(keyBlob))) return 'known';

  if (plain.length > 0) {
    // A key of the same type is the one OpenSSH would compare against; fall back to any recorded key.
    const old = plain.find((e) => e.keyType === type) ?? plain[0];
    const lines = plain.map((e) => e.line).join(', ');
    throw new TpwError(
      'SSH_HOST_KEY',
      `The SSH host key of ${where} has CHANGED: ${file} line ${old.line} records ${old.keyType} ` +
        `${fingerprintSha256(old.key)}, but the server now presents ${type} ${fp}. ` +
        `Someone may be intercepting the connection, or the VM was recreated with a new key. ` +
        `If you trust the new key, remove ${plain.length > 1 ? 'lines' : 'line'} ${lines} from ${file} ` +
        `(or run: ssh-keygen -R '${name}' -f '${file}') and connect again.`,
    );
  }

  if (check.policy === 'strict') {
    throw new UnknownHostKeyError(
      `The SSH host key of ${where} (${type} ${fp}) is not in ${file} and the host key policy is strict; ` +
        `check the fingerprint, then accept it (tpw: --accept-new-host-keys; VS Code asks) or add it to that file (line: ${name} ${type} <base64>).`,
      { name, keyType: type, fingerprint: fp, file },
    );
  }
  recordHostKey(file, name, type, keyBlob);
  return 'recorded';
}

/** Appends `name type base64` to the file, creating it (and its folder) private to the user. */
export function recordHostKey(file: string, name: string, type: string, keyBlob: Buffer): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  let prefix = '';
  try {
    const st = fs.statSync(file);
    if (st.size > 0) {
      // Never glue our line onto a last line that lacks its newline.
      const fd = fs.openSync(file, 'r');
      const last = Buffer.alloc(1);
      fs.readSync(fd, last, 0, 1, st.size - 1);
      fs.closeSync(fd);
      if (last[0] !== 0x0a) prefix = '\n';
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  // O_APPEND keeps concurrent first contacts (many workers at once) from overwriting each other.
  fs.appendFileSync(file, `${prefix}${name} ${type} ${keyBlob.toString('base64')}\n`, { mode: 0o600 });
  fs.chmodSync(file, 0o600);
}

/**
 * An ssh2 `hostVerifier` (synchronous form: ssh2 hands it the raw key blob when no `hostHash` is set).
 * ssh2 only reports "Host denied (verification failed)", so the real reason is handed to `onReject`
 * for the connection to throw instead.
 */
export function makeHostVerifier(check: HostKeyCheck, onReject: (err: TpwError) => void, onRecord?: (msg: string) => void): (key: Buffer) => boolean {
  return (key: Buffer) => {
    try {
      const verdict = checkHostKey(check, key);
      if (verdict === 'recorded') {
        onRecord?.(`recorded new host key ${sshKeyType(key)} ${fingerprintSha256(key)} for ${knownHostsName(check.host, check.port)}`);
      }
      return true;
    } catch (e) {
      onReject(e instanceof TpwError ? e : new TpwError('SSH_HOST_KEY', `Host key check for ${check.host} port ${check.port} failed: ${(e as Error).message}`, { cause: e }));
      return false;
    }
  };
}
