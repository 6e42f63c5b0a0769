#!/usr/bin/env bash
# Installs what TPU Workbench needs on a fresh Debian machine, and nothing twice:
#   (no flag)  what the product and the demo run: git and tar (workspace sync), node_modules (npm ci), the
#              trainer's Python venv (scripts/python-env.sh), and the bundles in dist/ (with dist/tpw-profile,
#              which needs Rust's cargo);
#   --test     also what only the tests need (`npm test` passes it): OpenSSH's server (the tests' real sshd),
#              gdb, rsync and pssh (peers), Debian chromium and code-server 4.100.3 (VS Code 1.100) for the
#              end-to-end tests. (--e2e is the same, kept for old notes.)
# Caches live under $TPW_CACHE (default ~/.cache/tpu-workbench) so a second run on the same machine is quick.
set -euo pipefail
cd "$(dirname "$0")/.."
e2e=0
case "${1:-}" in --test|--e2e) e2e=1 ;; "") ;; *) echo "usage: bash scripts/setup.sh [--test]" >&2; exit 2 ;; esac
export TPW_CACHE=${TPW_CACHE:-$HOME/.cache/tpu-workbench}
mkdir -p "$TPW_CACHE"

say() { printf '[setup] %s\n' "$*" >&2; }

# --- system packages -------------------------------------------------------------------------------
pkgs=(git tar openssh-client)
# openssh-server: the tests' real sshd; rsync, pssh: peers in test/bench (BENCHMARKS.md); gdb: "Attach Debugger"
# (debugpy --pid) on the emulator's workers, which its tests use.
[ $e2e = 1 ] && pkgs+=(openssh-server rsync pssh gdb chromium libkrb5-dev libxkbfile-dev libsecret-1-dev libx11-dev pkg-config ripgrep g++ make python3-venv)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  say "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- node_modules ----------------------------------------------------------------------------------
lock_hash=$(sha256sum package-lock.json | cut -c1-16)
if [ ! -f node_modules/.tpw-lock-"$lock_hash" ]; then
  say "npm ci"
  npm ci --no-audit --no-fund --loglevel=error
  touch node_modules/.tpw-lock-"$lock_hash"
fi

# --- Python venv for the trainer --------------------------------------------------------------------
bash scripts/python-env.sh >/dev/null

# --- code-server for the end-to-end tests -----------------------------------------------------------
if [ $e2e = 1 ]; then
  bash scripts/install-code-server.sh "$TPW_CACHE/code-server"
fi

# --- Rust, for the native `tpw profile` (native/profile) ------------------------------------------------
# Not installed here (rustup's toolchains are per user); without it the build leaves dist/tpw-profile out and
# bin/tpw runs `tpw profile` on node, but `npm run test:native` and the unit suite's native tests fail.
if ! command -v cargo >/dev/null 2>&1 && [ ! -x "$HOME/.cargo/bin/cargo" ]; then
  say "no cargo: install Rust 1.82 or later (rustup, with clippy and rustfmt) for the native tpw profile and its tests"
fi

# --- bundles ---------------------------------------------------------------------------------------
npm run --silent build
