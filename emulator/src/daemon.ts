import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { EmulatorError } from './errors';
import { emulatorDir } from '../../protocol/node/emulator-endpoint';
import { Emulator, lockFile, lockOwner, type EmulatorOptions } from './emulator';
import { checkPrivate, endpointFile, inspectEmulatorEndpoint, isAlive, isSameProcess, processIdentity, readEmulatorEndpoint, type EmulatorEndpoint } from '../../protocol/node/emulator-endpoint';
import { readStateFile, type StateRecovery } from './state-file';

/**
 * The emulator as a background process: `emulator.js start` (what `tpw emulator start` runs) spawns
 * `dist/emulator.js run` detached (its output goes to `<dir>/emulator.log`) and returns once it answers;
 * `emulator.js stop` sends SIGTERM, to the emulator's own process only (pid, start time and argv as the endpoint
 * file recorded them). The options travel to the child in the TPW_EMULATOR_OPTIONS environment variable (JSON),
 * so `run` needs no flags of its own: it calls `runEmulatorForeground()`.
 */

export const EMULATOR_OPTIONS_ENV = 'TPW_EMULATOR_OPTIONS';

/** The options that can cross a process boundary (no callbacks). */
export type DaemonEmulatorOptions = Omit<EmulatorOptions, 'log' | 'workerPool'>;

export interface StartDaemonOptions extends DaemonEmulatorOptions {
  /** argv of the foreground process; default `[node, <dist/emulator.js>, 'run']`. */
  command?: string[];
  /** How long to wait for the emulator to answer (default 30 s). */
  timeoutMs?: number;
  /** `--restore-previous` or `--reset-state`: done before the emulator starts (refused while one runs). */
  recovery?: StateRecovery;
  /** Told what was done along the way (a stale endpoint file replaced, the state restored). */
  notice?: (msg: string) => void;
}

export type EmulatorStatus =
  | { running: true; endpoint: EmulatorEndpoint; nodes: number }
  | { running: false; message: string };

export function emulatorLogFile(dir = emulatorDir()): string {
  return path.join(dir, 'emulator.log');
}

/** Starts the emulator in the background, or returns the one already running in `dir`. */
export async function startEmulatorDaemon(opts: StartDaemonOptions = {}): Promise<EmulatorEndpoint> {
  const { command, timeoutMs = 30_000, recovery, notice = () => undefined, ...emu } = opts;
  const dir = path.resolve(emu.dir ?? emulatorDir());
  const found = inspectEmulatorEndpoint(dir);
  if (found.kind === 'running') {
    checkPrivate(endpointFile(dir));
    if (await answers(found.endpoint)) {
      if (recovery) throw new EmulatorError('FAILED_PRECONDITION', `The local emulator is running (pid ${found.endpoint.pid}): stop it with \`tpw emulator stop\` before --${recovery}.`);
      return found.endpoint;
    }
  } else if (found.kind === 'corrupt' && lockOwner(lockFile(dir)) === undefined) {
    // No live emulator holds the folder, so the file is stale whatever it says; the new emulator writes its own.
    fs.rmSync(endpointFile(dir), { force: true });
    notice(`Removed the unusable endpoint file ${endpointFile(dir)} (${found.reason}); no emulator was running.`);
  }

  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const logFile = emulatorLogFile(dir);
  if (recovery) notice(Emulator.recoverState(dir, recovery));
  try {
    // Checked here too, so the refusal (which names the file and the fix) is the error, not "see the log".
    readStateFile(dir);
  } catch (e) {
    fs.appendFileSync(logFile, `${new Date().toISOString()} not starting: ${(e as Error).message}\n`, { mode: 0o600 });
    throw e;
  }
  const logFd = fs.openSync(logFile, 'a', 0o600);
  const logStart = fs.fstatSync(logFd).size;
  const argv = command ?? [process.execPath, defaultMainPath(), 'run'];
  let exited: string | undefined;
  try {
    const child = spawn(argv[0], argv.slice(1), {
      detached: true,
      stdio: ['ignore', logFd, logFd],
      // Options this process was given in the environment go on too, as `run` takes them (a test's own
      // addresses, for one: the daemon VS Code's "Start Local Emulator" starts is started this way).
      env: { ...process.env, [EMULATOR_OPTIONS_ENV]: JSON.stringify({ ...emulatorOptionsFromEnv(), ...stripUndefined(emu), dir }) },
    });
    child.on('exit', (code, signal) => (exited = signal ? `signal ${signal}` : `code ${code}`));
    child.on('error', (e) => (exited = e.message));
    child.unref();
  } finally {
    fs.closeSync(logFd);
  }

  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ep = readEmulatorEndpoint(dir);
    if (ep && (await answers(ep))) return ep;
    if (exited !== undefined) break;
    await sleep(100);
  }
  const tail = readTail(logFile, logStart);
  throw new EmulatorError(
    'UNAVAILABLE',
    `The local emulator did not start${exited ? ` (exited with ${exited})` : ` within ${timeoutMs} ms`}; see ${logFile}.${tail ? `\n${tail}` : ''}`,
  );
}

/**
 * Stops the background emulator; false if none was running. Only a process that is the emulator (its pid, start
 * time and argv match what the endpoint or lock file recorded) is signalled; a stale endpoint file is removed.
 */
export async function stopEmulatorDaemon(opts: { dir?: string; timeoutMs?: number; notice?: (msg: string) => void } = {}): Promise<boolean> {
  const dir = path.resolve(opts.dir ?? emulatorDir());
  const notice = opts.notice ?? (() => undefined);
  const found = inspectEmulatorEndpoint(dir);
  let pid = found.kind === 'running' ? found.endpoint.pid : undefined;
  if (found.kind === 'stale' || found.kind === 'corrupt') {
    fs.rmSync(endpointFile(dir), { force: true });
    notice(`Removed the ${found.kind === 'stale' ? 'stale' : 'unusable'} endpoint file ${endpointFile(dir)} (${found.reason}); no process was signalled for it.`);
  }
  // An emulator still starting (or one whose endpoint file was damaged) holds the lock; only a lock that
  // records the owner's start time is trusted enough to signal its pid.
  pid ??= lockOwner(lockFile(dir), true);
  if (pid === undefined) return false;
  const identity = processIdentity(pid);
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + (opts.timeoutMs ?? 15_000);
  const same = () => (identity ? isSameProcess(pid, identity.procStart, identity.cmdline) === 'same' : isAlive(pid));
  while (Date.now() < deadline) {
    if (!same()) return true;
    await sleep(50);
  }
  // It did not stop cleanly; the next start settles its state anyway.
  if (same()) process.kill(pid, 'SIGKILL');
  return true;
}

export async function emulatorStatus(opts: { dir?: string } = {}): Promise<EmulatorStatus> {
  const dir = path.resolve(opts.dir ?? emulatorDir());
  const found = inspectEmulatorEndpoint(dir);
  if (found.kind === 'corrupt') {
    return { running: false, message: `The local emulator's endpoint file ${endpointFile(dir)} is unusable (${found.reason}); \`tpw emulator start\` replaces it.` };
  }
  const ep = readEmulatorEndpoint(dir);
  if (!ep) return { running: false, message: 'The local emulator is not running; start it with `tpw emulator start`.' };
  try {
    const s = (await getJson(ep, '/emulator/v1/status')) as { nodes?: number };
    return { running: true, endpoint: ep, nodes: s.nodes ?? 0 };
  } catch (e) {
    return { running: false, message: `The local emulator (pid ${ep.pid}) does not answer at http://${ep.host}:${ep.restPort}: ${(e as Error).message}` };
  }
}

/**
 * Runs the emulator in this process until SIGTERM or SIGINT, then stops it cleanly (the CLI's
 * `emulator.js run`). Options from TPW_EMULATOR_OPTIONS are used where `opts` leaves them unset.
 * Resolves once the emulator has stopped.
 */
export async function runEmulatorForeground(opts: EmulatorOptions = {}): Promise<void> {
  const fromEnv = emulatorOptionsFromEnv();
  const log = opts.log ?? ((msg: string) => process.stdout.write(`${new Date().toISOString()} ${msg}\n`));
  const emulator = new Emulator({ ...fromEnv, ...stripUndefined(opts), log });
  try {
    await emulator.start();
  } catch (e) {
    log(`not starting: ${(e as Error).message}`);
    throw e;
  }
  log(`emulator started (pid ${process.pid})`);
  await new Promise<void>((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      log(`received ${signal}, stopping`);
      emulator.stop().then(
        () => resolve(),
        (e: Error) => {
          log(`stop failed: ${e.message}`);
          resolve();
        },
      );
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
  log('emulator stopped');
}

export function emulatorOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): DaemonEmulatorOptions {
  const raw = env[EMULATOR_OPTIONS_ENV];
  if (!raw) return {};
  try {
    const parsed: unknown = JSON.parse(raw);
    return parsed && typeof parsed === 'object' ? (parsed as DaemonEmulatorOptions) : {};
  } catch {
    throw new EmulatorError('INVALID_ARGUMENT', `${EMULATOR_OPTIONS_ENV} is not valid JSON.`);
  }
}

/** dist/emulator.js: this bundle itself, or the repository's build when run from source (emulator/src). */
function defaultMainPath(): string {
  const candidates = [path.join(__dirname, 'emulator.js'), path.resolve(__dirname, '../../dist/emulator.js')];
  return candidates.find((c) => fs.existsSync(c)) ?? candidates[0];
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

async function answers(ep: EmulatorEndpoint): Promise<boolean> {
  try {
    await getJson(ep, '/emulator/v1/status');
    return true;
  } catch {
    return false;
  }
}

/** A one-shot GET without keep-alive, so no socket outlives the call. */
function getJson(ep: EmulatorEndpoint, urlPath: string, timeoutMs = 2000): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const headers = { authorization: `Bearer ${ep.token}` };
    const req = http.get({ host: ep.host, port: ep.restPort, path: urlPath, headers, agent: false, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`HTTP ${res.statusCode}`));
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        } catch (e) {
          reject(e as Error);
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}

function readTail(file: string, from: number): string {
  try {
    const text = fs.readFileSync(file, 'utf8').slice(from);
    return text.trim().split('\n').slice(-10).join('\n');
  } catch {
    return '';
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
