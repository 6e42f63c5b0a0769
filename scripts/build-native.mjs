// The profile analysis (native/profile, Rust), built twice by cargo: dist/tpw-profile, `tpw profile` as a native
// executable (bin/tpw runs it: node's own start is longer than reading most captures), and dist/profile.wasm, the
// same crate as WebAssembly for the extension's profile worker and `node bin/tpw.js profile` (it goes into the
// .vsix, so one package works on every platform).
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, renameSync } from 'node:fs';
import { homedir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const CRATE = path.join(ROOT, 'native', 'profile');
export const NATIVE_PROFILE = path.join(ROOT, 'dist', 'tpw-profile');
export const PROFILE_WASM = path.join(ROOT, 'dist', 'profile.wasm');
export const WASM_TARGET = 'wasm32-unknown-unknown';

/** cargo: $CARGO, else the PATH's, else rustup's default place (a non-login shell may not have it on the PATH). */
function cargoBinary() {
  const candidates = [process.env.CARGO, 'cargo', path.join(homedir(), '.cargo', 'bin', 'cargo')].filter(Boolean);
  return candidates.find((c) => spawnSync(c, ['--version'], { stdio: 'ignore' }).status === 0);
}

/** Copied beside, then renamed over: a `tpw profile` running meanwhile never sees half a file. */
function install(built, target) {
  if (!existsSync(built)) throw new Error(`cargo reported success but ${built} is missing`);
  const tmp = `${target}.tmp-${process.pid}`;
  copyFileSync(built, tmp);
  renameSync(tmp, target);
}

function cargo(bin, args) {
  // From the crate's folder, so that cargo reads its .cargo/config.toml (the static native build).
  const r = spawnSync(bin, args, { encoding: 'utf8', cwd: CRATE });
  if (r.status !== 0) {
    const missingTarget = /target may not be installed|can't find crate for `(core|std)`/.test(r.stderr ?? '');
    const hint = missingTarget ? `\nThe ${WASM_TARGET} target is missing: run \`rustup target add ${WASM_TARGET}\` (scripts/setup.sh does).` : '';
    throw new Error(`${bin} ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`}):\n${r.stdout}${r.stderr}${hint}`);
  }
}

/**
 * Builds dist/tpw-profile and dist/profile.wasm (cargo only recompiles what changed: a no-op build takes a fraction
 * of a second). The analysis exists nowhere else, so a machine without cargo cannot build the product: that throws,
 * as a compile error does.
 */
export function buildNativeProfile() {
  const bin = cargoBinary();
  if (!bin) throw new Error('cargo (Rust 1.82 or later, with the wasm32-unknown-unknown target) is needed to build the profile analysis: see CONTRIBUTING.md');
  const targetDir = path.join(CRATE, 'target');
  const common = ['--release', '--locked', '--quiet', '--manifest-path', path.join(CRATE, 'Cargo.toml'), '--target-dir', targetDir];
  cargo(bin, ['build', ...common, '--bin', 'tpw-profile']);
  install(path.join(targetDir, 'release', 'tpw-profile'), NATIVE_PROFILE);
  cargo(bin, ['rustc', ...common, '--lib', '--target', WASM_TARGET, '--crate-type', 'cdylib']);
  install(path.join(targetDir, WASM_TARGET, 'release', 'tpw_profile.wasm'), PROFILE_WASM);
}
