import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { TpwError } from '../errors';
import { emulatorDir } from '../paths';
import { Emulator, type EmulatorOptions } from './emulator';
import { readEmulatorEndpoint, type EmulatorEndpoint } from './endpoint';

/**
 * The emulator as a background process: `tpw emulator start` spawns `dist/cli.js emulator run-foreground`
 * detached (its output goes to `<dir>/emulator.log`) and returns once it answers; `tpw emulator stop` sends
 * SIGTERM. The options travel to the child in the TPW_EMULATOR_OPTIONS environment variable (JSON), so the
 * CLI's `run-foreground` command needs no flags of its own: it calls `runEmulatorForeground()`.
 */

export const EMULATOR_OPTIONS_ENV = 'TPW_EMULATOR_OPTIONS';

/** The options that can cross a process boundary (no callbacks). */
export type DaemonEmulatorOptions = Omit<EmulatorOptions, 'log' | 'workerPool'>;

export interface StartDaemonOptions extends DaemonEmulatorOptions {
  /** argv of the foreground process; default `[node, <dist/cli.js>, 'emulator', 'run-foreground']`. */
  command?: string[];
  /** How long to wait for the emulator to answer (default 30 s). */
  timeoutMs?: number;
}

export type EmulatorStatus =
  | { running: true; endpoint: EmulatorEndpoint; nodes: number }
  | { running: false; message: string };

export function emulatorLogFile(dir = emulatorDir()): string {
  return path.join(dir, 'emulator.log');
}

/** Starts the emulator in the background, or returns the one already running in `dir`. */
export async function startEmulatorDaemon(opts: StartDaemonOptions = {}): Promise<EmulatorEndpoint> {
  const { command, timeoutMs = 30_000, ...emu } = opts;
  const dir = path.resolve(emu.dir ?? emulatorDir());
  const running = readEmulatorEndpoint(dir);
  if (running && (await answers(running))) return running;

  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const logFile = emulatorLogFile(dir);
  const logFd = fs.openSync(logFile, 'a', 0o600);
  const logStart = fs.fstatSync(logFd).size;
  const argv = command ?? [process.execPath, defaultCliPath(), 'emulator', 'run-foreground'];
  let exited: string | undefined;
  try {
    const child = spawn(argv[0], argv.slice(1), {
      detached: true,
      stdio: ['ignore', logFd, logFd],
      env: { ...process.env, [EMULATOR_OPTIONS_ENV]: JSON.stringify({ ...emu, dir }) },
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
  throw new TpwError(
    'UNAVAILABLE',
    `The local emulator did not start${exited ? ` (exited with ${exited})` : ` within ${timeoutMs} ms`}; see ${logFile}.${tail ? `\n${tail}` : ''}`,
  );
}

/** Stops the background emulator; false if none was running. */
export async function stopEmulatorDaemon(opts: { dir?: string; timeoutMs?: number } = {}): Promise<boolean> {
  const dir = path.resolve(opts.dir ?? emulatorDir());
  const ep = readEmulatorEndpoint(dir);
  if (!ep) return false;
  process.kill(ep.pid, 'SIGTERM');
  const deadline = Date.now() + (opts.timeoutMs ?? 15_000);
  while (Date.now() < deadline) {
    if (!isAlive(ep.pid)) return true;
    await sleep(50);
  }
  // It did not stop cleanly; the next start settles its state anyway.
  process.kill(ep.pid, 'SIGKILL');
  return true;
}

export async function emulatorStatus(opts: { dir?: string } = {}): Promise<EmulatorStatus> {
  const dir = path.resolve(opts.dir ?? emulatorDir());
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
 * `emulator run-foreground`). Options from TPW_EMULATOR_OPTIONS are used where `opts` leaves them unset.
 * Resolves once the emulator has stopped.
 */
export async function runEmulatorForeground(opts: EmulatorOptions = {}): Promise<void> {
  const fromEnv = emulatorOptionsFromEnv();
  const log = opts.log ?? ((msg: string) => process.stdout.write(`${new Date().toISOString()} ${msg}\n`));
  const emulator = new Emulator({ ...fromEnv, ...stripUndefined(opts), log });
  await emulator.start();
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
    throw new TpwError('INVALID_ARGUMENT', `${EMULATOR_OPTIONS_ENV} is not valid JSON.`);
  }
}

/** dist/cli.js next to the bundle this code runs from, or in the repository when run from source. */
function defaultCliPath(): string {
  const candidates = [path.join(__dirname, 'cli.js'), path.resolve(__dirname, '../../../../dist/cli.js')];
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
    const req = http.get({ host: ep.host, port: ep.restPort, path: urlPath, agent: false, timeout: timeoutMs }, (res) => {
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

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
