/**
 * Tests that spawn a built bundle (the LSP tests run dist/language-server.js, as an editor would) must not run a
 * build older than the source they mean to test: after an edit under language-server/src, running one LSP test
 * would otherwise test the previous server and pass or fail for the wrong reason. esbuild says which files a
 * bundle is made of (its metafile, so imports from other folders count too); when the bundle is missing or older
 * than any of them, the project's one build runs (scripts/build.mjs, so no second build configuration can drift),
 * and a bundle still older after that is refused, naming the newer file.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { buildSync } from 'esbuild';

export const REPO = path.resolve(__dirname, '..', '..');

export interface BundleSpec {
  /** The bundle's entry point (absolute). */
  entry: string;
  /** The built file (absolute). */
  outfile: string;
  /** Builds `outfile` from `entry`. */
  build: () => void;
}

/** Runs `node scripts/build.mjs` in the repository; a failed build throws with its output. */
export function buildAll(): void {
  const r = spawnSync(process.execPath, [path.join(REPO, 'scripts', 'build.mjs')], { cwd: REPO, encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`node scripts/build.mjs failed (exit ${r.status ?? r.signal}):\n${r.stdout}${r.stderr}`);
}

/** The files `entry` bundles (absolute paths), as esbuild resolves them. */
export function bundleInputs(entry: string): string[] {
  const cwd = path.dirname(entry);
  // Left out as scripts/build.mjs leaves them out: native addons, and the package bundled apart.
  const external = ['*.node', 'vscode', 'cpu-features', '@google-cloud/compute'];
  const r = buildSync({ entryPoints: [entry], absWorkingDir: cwd, bundle: true, write: false, metafile: true, platform: 'node', format: 'cjs', logLevel: 'silent', external });
  return Object.keys(r.metafile.inputs).map((f) => path.resolve(cwd, f));
}

/** The inputs of the bundle that are newer than it (every input when it is missing). */
export function newerInputs(spec: BundleSpec): string[] {
  const built = fs.statSync(spec.outfile, { throwIfNoEntry: false })?.mtimeMs ?? -1;
  return bundleInputs(spec.entry).filter((f) => fs.statSync(f).mtimeMs > built);
}

/**
 * Rebuilds the bundle when any input is newer, then refuses a bundle that is still older. Test files that run at
 * the same time build one at a time (a lock folder beside the bundle), so none reads a half-written bundle.
 */
export async function ensureFreshBundle(spec: BundleSpec): Promise<void> {
  if (newerInputs(spec).length === 0) return;
  await withLock(`${spec.outfile}.lock`, () => {
    if (newerInputs(spec).length > 0) spec.build();
  });
  const still = newerInputs(spec);
  if (still.length > 0) {
    throw new Error(`${path.relative(REPO, spec.outfile)} is older than ${path.relative(REPO, still[0])} even after building it: a stale bundle would be tested`);
  }
}

/** How long a lock may stand before it counts as left by a killed test (a build takes seconds). */
const LOCK_STALE_MS = 120_000;

async function withLock(lock: string, fn: () => void): Promise<void> {
  fs.mkdirSync(path.dirname(lock), { recursive: true });
  for (const deadline = Date.now() + LOCK_STALE_MS + 10_000; ; await new Promise((r) => setTimeout(r, 100))) {
    try {
      fs.mkdirSync(lock);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const age = Date.now() - (fs.statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > LOCK_STALE_MS) fs.rmSync(lock, { recursive: true, force: true });
      else if (Date.now() > deadline) throw new Error(`${lock} is held by another build: remove it if none is running`);
    }
  }
  try {
    fn();
  } finally {
    fs.rmSync(lock, { recursive: true, force: true });
  }
}
