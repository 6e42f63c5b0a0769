import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  EndpointFileError,
  readEmulatorEndpoint as readEndpointFile,
  type EmulatorEndpoint,
} from '../../../protocol/node/emulator-endpoint';
import { TpwError } from './errors';
import { emulatorDir } from './paths';

/**
 * The product's one door to the local emulator, which is a separate program (emulator/, bundled as
 * dist/emulator.js): the product finds a running one through its endpoint file (protocol/node) and talks to it as
 * to Google (REST, SSH); it starts and stops it by running the emulator's own command line, as a user would run
 * `gcloud emulators … start`.
 */

export type { EmulatorEndpoint } from '../../../protocol/node/emulator-endpoint';

/** The running emulator's endpoint, or undefined; an unusable or unsafe endpoint file is a TpwError naming it. */
export function readEmulatorEndpoint(dir = emulatorDir()): EmulatorEndpoint | undefined {
  try {
    return readEndpointFile(dir);
  } catch (e) {
    if (e instanceof EndpointFileError) throw new TpwError(e.code, e.message);
    throw e;
  }
}

/** dist/emulator.js beside the bundle this code runs from (dist/cli.js, dist/extension.js), or the repository's build. */
export function emulatorMainPath(bundleDir = __dirname): string {
  const candidates = [path.join(bundleDir, 'emulator.js'), path.resolve(bundleDir, '../../../dist/emulator.js')];
  return candidates.find((c) => fs.existsSync(c)) ?? candidates[0];
}

export interface EmulatorCommandOptions {
  /** Each chunk of the command's stdout and stderr, as it comes. */
  out?: (text: string) => void;
  err?: (text: string) => void;
  /** Hand the terminal to the emulator (for `run` in the foreground); SIGINT and SIGTERM are passed on. */
  inheritStdio?: boolean;
  /** The node that runs it (default this process's: Electron with ELECTRON_RUN_AS_NODE in desktop VS Code). */
  node?: string;
  main?: string;
}

/**
 * Runs `node dist/emulator.js <args>` (start | run | stop | status, see emulator/src/main.ts) and resolves with its
 * exit code; its messages are already user-facing sentences.
 */
export function runEmulatorCommand(args: string[], opts: EmulatorCommandOptions = {}): Promise<number> {
  const main = opts.main ?? emulatorMainPath();
  if (!fs.existsSync(main)) {
    return Promise.reject(new TpwError('FAILED_PRECONDITION', `The local emulator's program ${main} is missing: build it with \`npm run build\`.`));
  }
  return new Promise((resolve, reject) => {
    const child = spawn(opts.node ?? process.execPath, [main, ...args], { stdio: opts.inheritStdio ? 'inherit' : ['ignore', 'pipe', 'pipe'] });
    child.stdout?.setEncoding('utf8').on('data', (t: string) => opts.out?.(t));
    child.stderr?.setEncoding('utf8').on('data', (t: string) => opts.err?.(t));
    const forward = (signal: NodeJS.Signals) => child.kill(signal);
    if (opts.inheritStdio) {
      process.on('SIGINT', forward);
      process.on('SIGTERM', forward);
    }
    const done = () => {
      process.off('SIGINT', forward);
      process.off('SIGTERM', forward);
    };
    child.on('error', (e) => {
      done();
      reject(new TpwError('UNAVAILABLE', `Could not run the local emulator (${main}): ${e.message}`, { cause: e }));
    });
    child.on('close', (code, signal) => {
      done();
      resolve(code ?? (signal === 'SIGINT' || signal === 'SIGTERM' ? 0 : 1));
    });
  });
}
