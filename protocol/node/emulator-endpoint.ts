import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { z } from 'zod';

/**
 * The file a running emulator writes (`<TPW_HOME>/emulator/endpoint.json`, mode 0600 in a 0700 folder) so that
 * the CLI, the extension and tests can find it. It is the whole contract between the emulator (emulator/, which
 * writes it) and its clients (which read it): the REST endpoint and bearer token for Google's clients, how to
 * reach the workers over SSH, and who the emulator process is (so `tpw emulator stop` never signals a process
 * that merely reused its pid).
 */
export const EmulatorEndpointSchema = z.object({
  pid: z.number().int(),
  /** The process's start time in clock ticks since boot (/proc/<pid>/stat field 22); "" where there is no /proc. */
  procStart: z.string(),
  /** The process's argv as /proc/<pid>/cmdline had it; [] where there is no /proc. */
  cmdline: z.array(z.string()),
  /** REST API at http://{host}:{restPort} */
  host: z.string(),
  restPort: z.number().int(),
  /** Sent as `Authorization: Bearer <token>` on every REST call; made anew at each start. */
  token: z.string().min(16),
  /** Every worker's SSH server listens on this port, each on its own loopback address. */
  sshPort: z.number().int(),
  /** The project and zones the emulator serves. */
  project: z.string(),
  zones: z.array(z.string()),
  /** SSH login name on the workers. */
  username: z.string(),
  /**
   * The Google account the bearer token stands for (OS Login's `users/{account}`): always EMULATOR_ACCOUNT.
   * Absent in files of emulators that predate it.
   */
  account: z.string().optional(),
  /** Private key (OpenSSH format, 0600) that the workers accept. */
  clientKeyPath: z.string(),
  startedAt: z.string(),
});
export type EmulatorEndpoint = z.infer<typeof EmulatorEndpointSchema>;

/** The one Google account the emulator's bearer token stands for (OS Login's `users/{account}`). */
export const EMULATOR_ACCOUNT = 'tpw-emulator-user@example.com';

/**
 * Where TPU Workbench keeps its local state (known_hosts, the emulator's folder). `TPW_HOME` overrides it so
 * tests and parallel emulators never share state.
 */
export function tpwHome(env: NodeJS.ProcessEnv = process.env): string {
  return env.TPW_HOME && env.TPW_HOME.length > 0 ? path.resolve(env.TPW_HOME) : path.join(os.homedir(), '.tpw');
}

/** The emulator's own folder (state, keys, sandboxes, endpoint.json). */
export function emulatorDir(home = tpwHome()): string {
  return path.join(home, 'emulator');
}

export function endpointFile(dir = emulatorDir()): string {
  return path.join(dir, 'endpoint.json');
}

/**
 * Why an endpoint file cannot be trusted or used. `code` is the gRPC-style code the product's own error type
 * uses for it, so each side can wrap it in its own error without parsing text.
 */
export class EndpointFileError extends Error {
  constructor(
    readonly code: 'FAILED_PRECONDITION' | 'PERMISSION_DENIED',
    message: string,
  ) {
    super(message);
    this.name = 'EndpointFileError';
  }
}

/** What the endpoint file says about the emulator in `dir`. */
export type EndpointInspection =
  | { kind: 'none' }
  | { kind: 'running'; endpoint: EmulatorEndpoint }
  /** The file names a process that is gone, or a live process that is not the emulator that wrote it. */
  | { kind: 'stale'; endpoint: EmulatorEndpoint; reason: string }
  /** The file cannot be read or is not an endpoint file; `reason` says what is wrong with it. */
  | { kind: 'corrupt'; reason: string };

export function inspectEmulatorEndpoint(dir = emulatorDir()): EndpointInspection {
  const file = endpointFile(dir);
  let raw: string;
  try {
    raw = fs.readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? { kind: 'none' } : { kind: 'corrupt', reason: `it cannot be read (${code ?? (e as Error).message})` };
  }
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { kind: 'corrupt', reason: raw.trim() === '' ? 'it is empty' : 'it is not valid JSON' };
  }
  const parsed = EmulatorEndpointSchema.safeParse(json);
  if (!parsed.success) {
    const fields = [...new Set(parsed.error.issues.map((i) => i.path.join('.') || '(top level)'))];
    return { kind: 'corrupt', reason: `it is not an endpoint file of this version (bad or missing: ${fields.join(', ')})` };
  }
  const ep = parsed.data;
  const same = isSameProcess(ep.pid, ep.procStart, ep.cmdline);
  if (same === 'gone') return { kind: 'stale', endpoint: ep, reason: `its process ${ep.pid} is gone` };
  if (same === 'other') return { kind: 'stale', endpoint: ep, reason: `pid ${ep.pid} now belongs to another process` };
  return { kind: 'running', endpoint: ep };
}

/**
 * The running emulator's endpoint, or undefined when none runs. A file that cannot be understood, or that other
 * users could have written or read, is an EndpointFileError naming it and the fix: clients must not trust or
 * leak its token.
 */
export function readEmulatorEndpoint(dir = emulatorDir()): EmulatorEndpoint | undefined {
  const found = inspectEmulatorEndpoint(dir);
  if (found.kind === 'corrupt') {
    throw new EndpointFileError(
      'FAILED_PRECONDITION',
      `The local emulator's endpoint file ${endpointFile(dir)} is unusable: ${found.reason}. Run \`tpw emulator start\`, which replaces it (or \`tpw emulator stop\` to remove it).`,
    );
  }
  if (found.kind !== 'running') return undefined;
  checkPrivate(endpointFile(dir));
  return found.endpoint;
}

/**
 * Throws an EndpointFileError (PERMISSION_DENIED) unless `file` is ours and no one else can read or write it,
 * nor replace it through its folder. No-op where there are no POSIX owners (Windows).
 */
export function checkPrivate(file: string): void {
  const uid = process.getuid?.();
  if (uid === undefined) return;
  const dir = path.dirname(file);
  const f = fs.statSync(file);
  const d = fs.statSync(dir);
  const mode = (m: number) => `0${(m & 0o777).toString(8)}`;
  if (f.uid !== uid || (f.mode & 0o077) !== 0) {
    throw new EndpointFileError('PERMISSION_DENIED', `${file} must belong to you with mode 0600 (it is uid ${f.uid}, mode ${mode(f.mode)}): other users could read its token. Restart the emulator (\`tpw emulator stop\`, then \`tpw emulator start\`) to write a new one.`);
  }
  if (d.uid !== uid || (d.mode & 0o022) !== 0) {
    throw new EndpointFileError('PERMISSION_DENIED', `The folder ${dir} must belong to you and not be writable by others (it is uid ${d.uid}, mode ${mode(d.mode)}): run \`chmod 700 ${dir}\`.`);
  }
}

/** Start time and argv of a live process, from /proc; undefined if it is gone or there is no /proc. */
export function processIdentity(pid: number): { procStart: string; cmdline: string[] } | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 2 (comm) is parenthesised and may hold spaces or ")"; the fields after the last ")" start at 3.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((a, i, all) => a !== '' || i < all.length - 1);
    return { procStart: fields[22 - 3], cmdline };
  } catch {
    return undefined;
  }
}

/** This process's identity, as an endpoint or lock file records it. */
export function ownIdentity(): { procStart: string; cmdline: string[] } {
  return processIdentity(process.pid) ?? { procStart: '', cmdline: [] };
}

/**
 * Whether `pid` is still the process that recorded `procStart` and `cmdline`. Where /proc cannot say (another
 * OS), a live pid counts as the same process; where it can, a blank start time counts as another.
 */
export function isSameProcess(pid: number, procStart: string, cmdline: string[]): 'same' | 'other' | 'gone' {
  if (!isAlive(pid)) return 'gone';
  // Only a machine without /proc records no start time; on one with /proc a blank one cannot be checked, and a
  // pid that cannot be checked is never taken for the emulator (stop would signal whatever has it now).
  if (procStart === '') return fs.existsSync('/proc/self/stat') ? 'other' : 'same';
  const now = processIdentity(pid);
  if (!now) return fs.existsSync('/proc/self/stat') ? 'gone' : 'same';
  const sameArgv = now.cmdline.length === cmdline.length && now.cmdline.every((a, i) => a === cmdline[i]);
  return now.procStart === procStart && sameArgv ? 'same' : 'other';
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
