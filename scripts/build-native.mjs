// dist/tpw-profile: `tpw profile` as a native executable, built by cargo from native/profile (a Rust port of
// the profile analysis, held to the node CLI's bytes by test/unit/cli-profile-native.test.ts). bin/tpw runs it
// for `tpw profile`, because node's own start is longer than reading most captures.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const CRATE = path.join(ROOT, 'native', 'profile');
export const NATIVE_PROFILE = path.join(ROOT, 'dist', 'tpw-profile');

/** cargo: $CARGO, else the PATH's, else rustup's default place (a non-login shell may not have it on the PATH). */
function cargoBinary() {
  const candidates = [process.env.CARGO, 'cargo', path.join(homedir(), '.cargo', 'bin', 'cargo')].filter(Boolean);
  return candidates.find((c) => spawnSync(c, ['--version'], { stdio: 'ignore' }).status === 0);
}

/**
 * Builds dist/tpw-profile (cargo only recompiles what changed: a no-op build takes a fraction of a second).
 * Without cargo any old executable is removed, so that bin/tpw runs `tpw profile` on node rather than a stale
 * build; returns whether the executable is there. Throws when cargo fails (a compile error must not pass for
 * "no cargo").
 */
export function buildNativeProfile({ log = console.log } = {}) {
  const cargo = cargoBinary();
  if (!cargo) {
    rmSync(NATIVE_PROFILE, { force: true });
    log('[build] no cargo (Rust) here: dist/tpw-profile not built; bin/tpw runs `tpw profile` on node');
    return false;
  }
  const targetDir = path.join(CRATE, 'target');
  const args = ['build', '--release', '--locked', '--quiet', '--manifest-path', path.join(CRATE, 'Cargo.toml'), '--target-dir', targetDir];
  // From the crate's folder, so that cargo reads its .cargo/config.toml (the static build).
  const r = spawnSync(cargo, args, { encoding: 'utf8', cwd: CRATE });
  if (r.status !== 0) throw new Error(`${cargo} ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`}):\n${r.stdout}${r.stderr}`);
  const built = path.join(targetDir, 'release', 'tpw-profile');
  if (!existsSync(built)) throw new Error(`cargo reported success but ${built} is missing`);
  // Copied beside, then renamed over: a `tpw profile` running meanwhile never sees half a file.
  const tmp = `${NATIVE_PROFILE}.tmp-${process.pid}`;
  copyFileSync(built, tmp);
  renameSync(tmp, NATIVE_PROFILE);
  return true;
}
