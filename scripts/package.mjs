// `npm run package`: the .vsix users install. The production bundles (minified) are built into a staging folder
// with the files .vscodeignore lets into the package, and vsce packs that folder, so packaging never puts
// minified bundles where the development build is (dist/ keeps what `npm run build` made, and the tests that
// run dist/ keep testing it). The end-to-end tests install exactly this package (test/helpers/packaged.ts).
//
//   node scripts/package.mjs [--out FILE]      (default dist/tpu-workbench.vsix)
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildNativeProfile, PROFILE_WASM } from './build-native.mjs';

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The paths .vscodeignore lets in (its `!` lines), as files or folders to copy: `!media/**` → media,
 * `!dist/*.js` → dist (built, not copied). vsce applies the globs themselves to the staging folder.
 */
export function packagedPaths(ignoreText) {
  return [...new Set(ignoreText.split('\n').map((l) => l.trim()).filter((l) => l.startsWith('!')).map((l) => l.slice(1).replace(/\/\*\*?(\/.*)?$|\/\*\.[\w]+$/, '')))];
}

function run(cmd, args, cwd) {
  const r = spawnSync(cmd, args, { cwd, stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`${path.basename(cmd)} ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status ?? r.signal}`})`);
}

export function packageVsix(out) {
  const stage = mkdtempSync(path.join(tmpdir(), 'tpw-package-'));
  try {
    run(process.execPath, [path.join(ROOT, 'scripts', 'build.mjs'), '--production', '--outdir', path.join(stage, 'dist')], ROOT);
    // The profile analysis's WebAssembly build ships; its native build (dist/tpw-profile) does not (the CLI in the
    // package falls back to the WebAssembly one).
    buildNativeProfile();
    cpSync(PROFILE_WASM, path.join(stage, 'dist', 'profile.wasm'));
    const ignore = readFileSync(path.join(ROOT, '.vscodeignore'), 'utf8');
    cpSync(path.join(ROOT, '.vscodeignore'), path.join(stage, '.vscodeignore'));
    for (const p of packagedPaths(ignore)) {
      if (p === 'dist' || !existsSync(path.join(ROOT, p))) continue;
      mkdirSync(path.dirname(path.join(stage, p)), { recursive: true });
      cpSync(path.join(ROOT, p), path.join(stage, p), { recursive: true });
    }
    mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
    const vsce = path.join(ROOT, 'node_modules', '@vscode', 'vsce', 'vsce');
    run(process.execPath, [vsce, 'package', '--no-dependencies', '--no-rewrite-relative-links', '--out', path.resolve(out)], stage);
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf('--out');
  packageVsix(at >= 0 ? process.argv[at + 1] : path.join(ROOT, 'dist', 'tpu-workbench.vsix'));
}
