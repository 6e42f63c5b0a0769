import * as fs from 'node:fs';
import * as path from 'node:path';
import { shQuote } from '../ssh/quote';

/**
 * "Open Worker in Remote-SSH": Remote-SSH connects to hosts named in the user's OpenSSH config. We keep our
 * entries in a file of our own (so we never rewrite the user's hand-written config) and the user's
 * ~/.ssh/config includes it once. Each VM's entries sit between BEGIN/END markers, so refreshing one VM
 * (new IPs after a restart) replaces just its block.
 */

export interface SshHostEntry {
  /** `tpu-<vm>-w<N>`: what Remote-SSH shows and connects to. */
  alias: string;
  hostName: string;
  port: number;
  user: string;
  identityFile: string;
  /** `user@host[:port]` of a bastion. */
  proxyJump?: string;
  /** argv of a proxy program; %h and %p stay for OpenSSH to substitute. */
  proxyCommand?: string[];
  /** Where host keys are recorded (our own known_hosts for the emulator, whose keys change per start). */
  userKnownHostsFile?: string;
  strictHostKeyChecking?: 'yes' | 'accept-new' | 'no';
  /** A comment line above the entry, e.g. "worker 2 of my-vm (v5litepod-16, us-west4-a)". */
  comment?: string;
}

/** OpenSSH host alias for worker `index` of `vm`. */
export function workerHostAlias(vm: string, index: number): string {
  return `tpu-${vm}-w${index}`;
}

/** OpenSSH config values with spaces must be quoted with double quotes; `"` itself cannot appear in them. */
function configValue(v: string): string {
  if (/["\n\r]/.test(v)) throw new Error(`cannot write ${JSON.stringify(v)} into an ssh config file`);
  return /[\s#]/.test(v) ? `"${v}"` : v;
}

export function renderHostEntry(e: SshHostEntry): string {
  const lines: string[] = [];
  if (e.comment) lines.push(`# ${e.comment.replace(/[\r\n]+/g, ' ')}`);
  lines.push(`Host ${configValue(e.alias)}`);
  lines.push(`  HostName ${configValue(e.hostName)}`);
  if (e.port !== 22) lines.push(`  Port ${e.port}`);
  lines.push(`  User ${configValue(e.user)}`);
  lines.push(`  IdentityFile ${configValue(e.identityFile)}`);
  lines.push('  IdentitiesOnly yes');
  if (e.proxyJump) lines.push(`  ProxyJump ${configValue(e.proxyJump)}`);
  // ProxyCommand is run by the user's shell: quote each word, but leave %h/%p for ssh to expand.
  if (e.proxyCommand && e.proxyCommand.length > 0) lines.push(`  ProxyCommand ${e.proxyCommand.map((a) => (/^%[hp]$/.test(a) ? a : shQuote(a))).join(' ')}`);
  if (e.userKnownHostsFile) lines.push(`  UserKnownHostsFile ${configValue(e.userKnownHostsFile)}`);
  if (e.strictHostKeyChecking) lines.push(`  StrictHostKeyChecking ${e.strictHostKeyChecking}`);
  return lines.join('\n');
}

const HEADER = '# Written by TPU Workbench ("Open Worker in Remote-SSH"). Edits between BEGIN/END lines are replaced.';

function markers(key: string): { begin: string; end: string } {
  return { begin: `# BEGIN tpu-workbench ${key}`, end: `# END tpu-workbench ${key}` };
}

/**
 * `existing` with the block for `key` (a VM's resource name) replaced by `entries`, or appended when absent.
 * No entries removes the block (the VM was deleted).
 */
export function upsertManagedBlock(existing: string, key: string, entries: readonly SshHostEntry[]): string {
  const { begin, end } = markers(key);
  const lines = existing.replace(/\r\n/g, '\n').split('\n');
  const out: string[] = [];
  let inBlock = false;
  for (const line of lines) {
    if (line === begin) inBlock = true;
    else if (inBlock && line === end) inBlock = false;
    else if (!inBlock) out.push(line);
  }
  while (out.length > 0 && out[out.length - 1].trim() === '') out.pop();
  if (out.length === 0 || out[0] !== HEADER) out.unshift(HEADER);
  if (entries.length > 0) out.push('', begin, entries.map(renderHostEntry).join('\n\n'), end);
  return `${out.join('\n')}\n`;
}

/** True if the user's config already includes `includePath` (as written by us, or by hand). */
export function hasInclude(userConfig: string, includePath: string, home: string): boolean {
  const wanted = path.resolve(includePath);
  for (const raw of userConfig.split(/\r?\n/)) {
    const m = /^\s*Include\s+(.+?)\s*$/i.exec(raw);
    if (!m) continue;
    for (const word of m[1].match(/"[^"]*"|\S+/g) ?? []) {
      const p = word.replace(/^"|"$/g, '');
      const abs = p.startsWith('~/') ? path.join(home, p.slice(2)) : path.isAbsolute(p) ? p : path.join(home, '.ssh', p);
      if (path.resolve(abs) === wanted) return true;
    }
  }
  return false;
}

/**
 * The user's config with `Include <ours>` as its first line. It must come before any Host/Match block: an
 * Include inside a block would only apply to that block's hosts.
 */
export function withInclude(userConfig: string, includePath: string): string {
  const line = `Include ${configValue(includePath)}`;
  const note = '# Added by TPU Workbench: its TPU worker hosts (tpu-<vm>-w<N>).';
  return userConfig.length > 0 ? `${note}\n${line}\n\n${userConfig}` : `${note}\n${line}\n`;
}

/** Writes `text` to `file` atomically with mode 0600 (an ssh config must not be writable by others). */
export function writeConfigFile(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.tpw-${process.pid}.tmp`;
  fs.writeFileSync(tmp, text, { mode: 0o600 });
  fs.renameSync(tmp, file);
}

export function readIfExists(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw e;
  }
}
