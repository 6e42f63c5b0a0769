import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { packagedExtension, REPO } from '../helpers/packaged';
import { findFiles } from './files';
import { freePort, waitForHttp } from './net';
import type { ProcessTracker, Tracked } from './processes';

/**
 * A real VS Code for the tests: code-server 4.100.3 (VS Code 1.100, our engines floor) installed
 * from the npm registry by scripts/install-code-server.sh, with the .vsix users install (`npm run package`,
 * test/helpers/packaged.ts) installed into its extensions dir by its own `--install-extension`.
 */
export const CODE_SERVER_VERSION = process.env.CODE_SERVER_VERSION ?? '4.100.3';
export { REPO } from '../helpers/packaged';

export function codeServerDir(): string {
  return process.env.TPW_CODE_SERVER_DIR ?? path.join(os.homedir(), '.cache', 'tpu-workbench', 'code-server');
}

/** Installs code-server if its stamp is missing (minutes, once; later calls return at once). */
export function ensureCodeServer(): string {
  const dir = codeServerDir();
  if (!fs.existsSync(path.join(dir, `.installed-${CODE_SERVER_VERSION}`))) {
    const r = spawnSync('bash', [path.join(REPO, 'scripts', 'install-code-server.sh'), dir], { stdio: 'inherit', timeout: 20 * 60_000 });
    if (r.status !== 0) throw new Error(`installing code-server into ${dir} failed (exit ${r.status})`);
  }
  return dir;
}

/** Installs the packaged .vsix into `extensionsDir` with code-server's `--install-extension`; returns the installed folder. */
export function installExtension(extensionsDir: string): string {
  const { vsix } = packagedExtension();
  const pkg = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { publisher: string; name: string; version: string };
  const r = spawnSync(process.execPath, [path.join(ensureCodeServer(), 'out', 'node', 'entry.js'), '--install-extension', vsix, '--extensions-dir', extensionsDir], { encoding: 'utf8', timeout: 120_000 });
  const dest = path.join(extensionsDir, `${pkg.publisher}.${pkg.name}-${pkg.version}`);
  if (r.status !== 0 || !fs.existsSync(path.join(dest, 'package.json'))) throw new Error(`code-server --install-extension ${vsix} failed (exit ${r.status ?? r.signal}):\n${r.stdout}${r.stderr}`);
  return dest;
}

export interface CodeServer {
  url: string;
  port: number;
  userDataDir: string;
  proc: Tracked;
}

export interface CodeServerOptions {
  root: string;
  extensionsDir: string;
  workspace: string;
  env: NodeJS.ProcessEnv;
  /** Extra user settings. */
  settings?: Record<string, unknown>;
}

export async function startCodeServer(procs: ProcessTracker, opts: CodeServerOptions): Promise<CodeServer> {
  const dir = ensureCodeServer();
  const userDataDir = path.join(opts.root, 'user-data');
  fs.mkdirSync(path.join(userDataDir, 'User'), { recursive: true });
  const settings = {
    'security.workspace.trust.enabled': false,
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.enableExperiments': false,
    'telemetry.telemetryLevel': 'off',
    'extensions.autoCheckUpdates': false,
    'extensions.autoUpdate': false,
    'update.mode': 'none',
    'git.enabled': false,
    // The emulator's ports would otherwise be offered for forwarding in the Ports view.
    'remote.autoForwardPorts': false,
    ...opts.settings,
  };
  fs.writeFileSync(path.join(userDataDir, 'User', 'settings.json'), JSON.stringify(settings, null, 2));
  const port = await freePort();
  const proc = procs.spawn(
    'code-server',
    process.execPath,
    [
      path.join(dir, 'out', 'node', 'entry.js'),
      '--auth', 'none',
      '--bind-addr', `127.0.0.1:${port}`,
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-workspace-trust',
      '--extensions-dir', opts.extensionsDir,
      '--user-data-dir', userDataDir,
      opts.workspace,
    ],
    { env: opts.env, cwd: opts.workspace },
  );
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/healthz`, 60_000, () => proc.child.exitCode !== null);
  return { url, port, userDataDir, proc };
}

/** Files under the user data dir whose name ends with `suffix` (output channels are backed by log files there). */
export function findLogs(userDataDir: string, suffix: string): string[] {
  return findFiles(path.join(userDataDir, 'logs'), (name) => name.endsWith(suffix));
}
