/**
 * The CLI as the package ships it: `scripts/build.mjs --production` (minified, with the package's own flags) into a
 * folder of the test's own, so a test never touches the dist/ other tests run, and `main(argv)` of that build run in
 * a child node. Minifying once broke commands that passed every test on the development bundles.
 */
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { REPO } from './fresh-bundle';

/**
 * Builds the named production bundles (`cli`, and the libraries it loads apart: `compute`, `container`,
 * `kubernetes`) into `outDir`; a child process, so a test can start its emulator meanwhile.
 */
export function buildProductionBundles(outDir: string, bundles: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [path.join(REPO, 'scripts/build.mjs'), '--production', '--outdir', outDir, '--only', bundles.join(',')], { cwd: REPO, encoding: 'utf8', timeout: 300_000 }, (error, stdout, stderr) =>
      error ? reject(new Error(`the production build failed (${String(error.code ?? error.signal)}):\n${stdout}${stderr}`)) : resolve(),
    );
  });
}

export interface ProductionRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** `tpw argv…` from `<outDir>/cli.js` in a child node, in `cwd`, with `env` laid over this process's environment. */
export function productionTpw(outDir: string, argv: string[], opts: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; onStdout?: (chunk: string) => void }): Promise<ProductionRun> {
  const script = `require(${JSON.stringify(path.join(outDir, 'cli.js'))}).main(${JSON.stringify(argv)}).then((c) => { process.exitCode = c; });`;
  return new Promise((resolve) => {
    const child = execFile(process.execPath, ['-e', script], { cwd: opts.cwd, env: { ...process.env, ...opts.env }, encoding: 'utf8', timeout: opts.timeoutMs ?? 180_000 }, (error, stdout, stderr) =>
      resolve({ code: typeof error?.code === 'number' ? error.code : error ? 1 : 0, stdout, stderr }),
    );
    if (opts.onStdout) child.stdout?.on('data', (d: string | Buffer) => opts.onStdout?.(d.toString()));
  });
}
