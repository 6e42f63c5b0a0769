/**
 * What users install: the .vsix `npm run package` makes (scripts/package.mjs: the production bundles, minified, and
 * what .vscodeignore lets in). The end-to-end tests install it into code-server and run its CLI, and the tests of
 * the CLI bundle run its dist/, so a difference between the development and the production build (a minifier
 * renaming a class a library looks up by name) fails a test instead of a user.
 *
 * Packaging takes about a minute, so it is done once per source state: the package is cached under
 * ~/.cache/tpu-workbench/vsix/<hash of every packaged input>/ (unpacked beside it), test files that ask at the
 * same time wait for one build (a lock folder), and a later run with the same sources takes it from the cache.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export const REPO = path.resolve(__dirname, '..', '..');

/** What goes into the package, or into the bundles in it: a change under any of these is a new package. */
const INPUTS = [
  'extension', 'language-server', 'webview', 'protocol', 'emulator', 'recipes', 'media', 'setup', 'bin',
  'scripts/build.mjs', 'scripts/package.mjs', 'package.json', 'package-lock.json', '.vscodeignore', 'tsconfig.base.json',
  'README.md', 'LICENSE', 'trainer/config.schema.json', 'trainer/tpu_trainer/configs',
];
/** Packages not used for this long are dropped from the cache (other worktrees share it: never by count alone). */
const UNUSED_MS = 2 * 24 * 3600_000;
const LOCK_STALE_MS = 10 * 60_000;

export interface PackagedExtension {
  /** The .vsix file. */
  vsix: string;
  /** Its contents as the package holds them (the `extension/` folder of the zip): dist/, media/, package.json… */
  root: string;
  /** The production CLI bundle in it. */
  cli: string;
}

export function cacheRoot(): string {
  return process.env.TPW_VSIX_CACHE ?? path.join(os.homedir(), '.cache', 'tpu-workbench', 'vsix');
}

/** A hash of every packaged input as it is on disk now (tracked, or new and not ignored), and of the installed dependencies. */
export function sourceHash(): string {
  const r = spawnSync('git', ['ls-files', '-co', '--exclude-standard', '-z', '--', ...INPUTS], { cwd: REPO, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git ls-files failed: ${r.stderr}`);
  const h = createHash('sha256');
  const files = r.stdout.split('\0').filter(Boolean).sort();
  for (const f of [...files, 'node_modules/.package-lock.json']) {
    const abs = path.join(REPO, f);
    if (!fs.existsSync(abs)) continue; // listed by git but deleted in the working tree
    h.update(`${f}\0`).update(fs.readFileSync(abs)).update('\0');
  }
  return h.digest('hex').slice(0, 20);
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

let memo: PackagedExtension | undefined;

/** The package of the sources as they are now: from the cache, or built (once, whoever asks at the same time). */
export function packagedExtension(): PackagedExtension {
  if (memo) return memo;
  const dir = path.join(cacheRoot(), sourceHash());
  const done = path.join(dir, 'done');
  const result: PackagedExtension = { vsix: path.join(dir, 'tpu-workbench.vsix'), root: path.join(dir, 'unpacked', 'extension'), cli: path.join(dir, 'unpacked', 'extension', 'dist', 'cli.js') };
  if (!fs.existsSync(done)) {
    fs.mkdirSync(cacheRoot(), { recursive: true });
    const lock = `${dir}.lock`;
    for (;;) {
      try {
        fs.mkdirSync(lock);
        break;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
        if (fs.existsSync(done)) break;
        const age = Date.now() - (fs.statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
        if (age > LOCK_STALE_MS) fs.rmSync(lock, { recursive: true, force: true });
        sleepSync(500);
      }
    }
    try {
      if (!fs.existsSync(done)) build(dir, result);
    } finally {
      fs.rmSync(lock, { recursive: true, force: true });
    }
  }
  // Marks it used, for prune.
  const now = new Date();
  fs.utimesSync(dir, now, now);
  prune();
  memo = result;
  return result;
}

function build(dir: string, p: PackagedExtension): void {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const started = Date.now();
  const r = spawnSync(process.execPath, [path.join(REPO, 'scripts', 'package.mjs'), '--out', p.vsix], { cwd: REPO, encoding: 'utf8', timeout: 15 * 60_000 });
  if (r.status !== 0) throw new Error(`npm run package (scripts/package.mjs) failed (exit ${r.status ?? r.signal}):\n${r.stdout}${r.stderr}`);
  const u = spawnSync('unzip', ['-q', p.vsix, 'extension/*', '-d', path.join(dir, 'unpacked')], { encoding: 'utf8' });
  if (u.status !== 0) throw new Error(`unzip ${p.vsix} failed: ${u.stderr}`);
  fs.writeFileSync(path.join(dir, 'done'), `${new Date().toISOString()} packaged in ${Date.now() - started} ms\n`);
}

/** Drops cached packages no test used for UNUSED_MS. */
function prune(): void {
  for (const e of fs.readdirSync(cacheRoot(), { withFileTypes: true })) {
    if (!e.isDirectory() || e.name.endsWith('.lock')) continue;
    const dir = path.join(cacheRoot(), e.name);
    if (Date.now() - fs.statSync(dir).mtimeMs > UNUSED_MS) fs.rmSync(dir, { recursive: true, force: true });
  }
}
