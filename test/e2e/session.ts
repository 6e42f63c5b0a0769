/**
 * What every e2e file that drives one VS Code window needs around its steps: a step runner (steps share the
 * window, so after a failed step the rest fail at once (not skipped: nothing unrun may pass for run) unless it
 * said it leaves the window usable; a failure leaves a
 * screenshot) and the teardown (browser, code-server, the emulator daemon and anything else left with the test's
 * TPW_HOME; on failure the logs are kept under test-artifacts/e2e/).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import type { Browser } from 'playwright-core';
import type { CodeServer } from './code-server';
import { REPO } from './code-server';
import { sweep, type ProcessTracker } from './processes';

export const ARTIFACTS = path.join(REPO, 'test-artifacts', 'e2e');
const CLI = path.join(REPO, 'dist', 'cli.js');

export interface StepOptions {
  timeout?: number;
  /** false: a failure here leaves the window usable, so later steps still run. */
  blocking?: boolean;
}

export interface Stepper {
  step(name: string, fn: () => Promise<void>, opts?: StepOptions): void;
  /** Whether any step failed (the teardown keeps the logs then). */
  readonly failed: boolean;
}

/** `prefix` names the failure screenshots (`failure-<prefix>-<step>.png`). */
export function stepper(prefix: string, shot: (file: string) => Promise<unknown>, defaultTimeout = 3 * 60_000): Stepper {
  let blocked = false;
  let failed = false;
  return {
    get failed() {
      return failed;
    },
    step(name, fn, opts = {}) {
      test(name, { timeout: opts.timeout ?? defaultTimeout }, async () => {
        if (blocked) throw new Error('not run: an earlier step failed and left the window unusable');
        try {
          await fn();
        } catch (e) {
          failed = true;
          if (opts.blocking !== false) blocked = true;
          const slug = name.replace(/[^A-Za-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 50);
          await shot(`failure-${prefix ? `${prefix}-` : ''}${slug}.png`).catch(() => undefined);
          throw e;
        }
      });
    },
  };
}

export interface TeardownParts {
  browser?: Browser;
  procs?: ProcessTracker;
  server?: CodeServer;
  /** The test's TPW_HOME: the emulator is stopped and every process carrying it swept. */
  home?: string;
  env?: NodeJS.ProcessEnv;
  /** The test's temp root (removed), with code-server's logs under logs/. */
  root?: string;
  failed: boolean;
  /** Where failure logs go: test-artifacts/e2e/<logsName>. */
  logsName: string;
}

export async function teardown(p: TeardownParts): Promise<void> {
  await p.browser?.close().catch(() => undefined);
  await p.procs?.stopAll();
  if (p.home) {
    // The emulator is a daemon outside our process groups: stop it politely, then sweep anything left with our
    // TPW_HOME (the daemon, its workers' shells, a trainer that ignored SIGINT).
    try {
      p.procs?.run('emulator-stop', process.execPath, [CLI, 'emulator', 'stop'], { env: p.env, timeoutMs: 30_000 });
    } catch {
      // not running, or already gone
    }
    const left = await sweep('TPW_HOME', p.home);
    if (left > 0) console.log(`# swept ${left} leftover process(es)`);
  }
  if (p.failed && p.root) {
    const logs = path.join(ARTIFACTS, p.logsName);
    fs.rmSync(logs, { recursive: true, force: true });
    fs.cpSync(path.join(p.root, 'logs'), logs, { recursive: true });
    if (p.server) fs.cpSync(path.join(p.server.userDataDir, 'logs'), path.join(logs, 'user-data'), { recursive: true });
    const emulatorLogs = p.home ? path.join(p.home, 'emulator') : undefined;
    if (emulatorLogs && fs.existsSync(emulatorLogs)) {
      // the emulator's folder holds its keys: never copy those into artifacts
      fs.cpSync(emulatorLogs, path.join(logs, 'emulator'), { recursive: true, filter: (s) => !/key/.test(path.basename(s)) });
    }
    console.log(`# logs kept in ${logs}`);
  }
  if (p.root) fs.rmSync(p.root, { recursive: true, force: true });
}
