/**
 * What every e2e file that drives one VS Code window needs around its steps: the set-up (a temp root with its own
 * TPW_HOME and workspace, the environment, the emulator in the foreground, code-server with the built extension
 * opened in headless Chromium), a step runner (steps share the window, so after a failed step the rest fail at
 * once (not skipped: nothing unrun may pass for run) unless it said it leaves the window usable; a failure leaves
 * a screenshot) and the teardown (browser, code-server, the emulator daemon and anything else left with the test's
 * TPW_HOME; on failure the logs are kept under test-artifacts/e2e/).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import type { Browser } from 'playwright-core';
import { packagedExtension } from '../helpers/packaged';
import type { CodeServer } from './code-server';
import { installExtension, REPO, startCodeServer } from './code-server';
import { delay, ProcessTracker, sweep } from './processes';
import { launchBrowser, Workbench } from './workbench';
import { testAddressPrefix } from '../helpers/loopback';
import { TRAINER_VENV } from '../helpers/trainer-venv';

export const ARTIFACTS = path.join(REPO, 'test-artifacts', 'e2e');
/** The CLI users get: the production bundle in the packaged .vsix (built on first use, then cached). */
export function cliPath(): string {
  return packagedExtension().cli;
}
/** The emulator's own program (emulator/README.md), as the package ships it for "Start Local Emulator". */
export function emulatorPath(): string {
  return path.join(packagedExtension().root, 'dist', 'emulator.js');
}
/** The trainer's venv (torch, torch_xla) that scripts/setup.sh makes. */
/** The trainer's venv (test/helpers/trainer-venv.ts says where python-env.sh makes it). */
export const VENV = TRAINER_VENV;

/** Packages the extension (or takes it from the cache) and checks it holds the bundles a test drives. */
export function requireBuilt(...bundles: string[]): void {
  const { root } = packagedExtension();
  for (const f of bundles) assert.ok(fs.existsSync(path.join(root, 'dist', f)), `the packaged .vsix has no dist/${f}`);
}

export interface TestRoot {
  /** A fresh temp folder that the teardown removes. */
  root: string;
  /** The test's own TPW_HOME (under root): it isolates the emulator and tags every process the test starts. */
  home: string;
  /** The folder VS Code opens (created empty). */
  workspace: string;
  /** Child processes, logging under root/logs. */
  procs: ProcessTracker;
}

/** A temp root named `tpw-e2e-<name>-…` for one e2e file (and test-artifacts/e2e/ for its screenshots). */
export function testRoot(name: string): TestRoot {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `tpw-e2e-${name}-`));
  const workspace = path.join(root, 'workspace');
  fs.mkdirSync(workspace, { recursive: true });
  return { root, home: path.join(root, 'tpw-home'), workspace, procs: new ProcessTracker(path.join(root, 'logs')) };
}

/**
 * The environment for code-server (so the extension host, the CLI and the emulator): this process's without
 * TPW_* (the test's own TPW_HOME goes in) and VSCODE_* (a test started from a VS Code terminal would pass its
 * own), less the names in `drop`, plus `extra`.
 */
export function testEnv(home: string, extra: NodeJS.ProcessEnv = {}, drop: string[] = []): NodeJS.ProcessEnv {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TPW_') && !k.startsWith('VSCODE_') && !drop.includes(k)));
  return { ...inherited, TPW_HOME: home, ...extra };
}

/**
 * The emulator in the foreground, tracked and stopped with the test (so it reads TPW_EMULATOR_OPTIONS, which
 * `tpw emulator start` would replace with its own); the extension and the CLI find it through TPW_HOME's
 * endpoint file, which this waits for.
 */
export async function startEmulator(procs: ProcessTracker, env: NodeJS.ProcessEnv): Promise<void> {
  // Workers on loopback addresses of this test process's own (test/helpers/loopback.ts): e2e files may run while
  // other suites' emulators do.
  const options = { addressPrefix: testAddressPrefix(1), ...(JSON.parse(env.TPW_EMULATOR_OPTIONS ?? '{}') as object) };
  env.TPW_EMULATOR_OPTIONS = JSON.stringify(options);
  const emulator = procs.spawn('emulator', process.execPath, [emulatorPath(), 'run'], { env });
  const endpoint = path.join(env.TPW_HOME ?? '', 'emulator', 'endpoint.json');
  for (const deadline = Date.now() + 60_000; !fs.existsSync(endpoint); await delay(200)) {
    if (emulator.child.exitCode !== null) throw new Error(`the emulator exited (${emulator.child.exitCode}); see ${emulator.logFile}`);
    if (Date.now() > deadline) throw new Error('the emulator did not start within 60 s');
  }
}

/** Runs the packaged CLI (`tpw …`) with the test's environment and returns its output; a non-zero exit throws. */
export function cliRunner(procs: ProcessTracker, env: NodeJS.ProcessEnv): (...args: string[]) => string {
  return (...args) => procs.run('cli', process.execPath, [cliPath(), ...args], { env, timeoutMs: 120_000 });
}

export interface VsCode {
  server: CodeServer;
  browser: Browser;
  wb: Workbench;
}

export interface VsCodeOptions {
  root: string;
  workspace: string;
  env: NodeJS.ProcessEnv;
  /** Extra user settings. */
  settings?: Record<string, unknown>;
}

/** Installs the packaged extension, starts code-server on the workspace and opens it in headless Chromium. */
export async function openVsCode(procs: ProcessTracker, opts: VsCodeOptions): Promise<VsCode> {
  const extensionsDir = path.join(opts.root, 'extensions');
  installExtension(extensionsDir);
  const server = await startCodeServer(procs, { root: opts.root, extensionsDir, workspace: opts.workspace, env: opts.env, settings: opts.settings });
  const browser = await launchBrowser();
  try {
    return { server, browser, wb: await Workbench.open(browser, server.url, opts.workspace) };
  } catch (e) {
    // The caller never got the browser to close.
    await browser.close().catch(() => undefined);
    throw e;
  }
}

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
      // TPW_HOME set here whatever env says: without it the CLI would stop the emulator of the user's own home.
      p.procs?.run('emulator-stop', process.execPath, [cliPath(), 'emulator', 'stop'], { env: { ...(p.env ?? process.env), TPW_HOME: p.home }, timeoutMs: 30_000 });
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
