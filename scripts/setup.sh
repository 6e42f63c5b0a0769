#!/usr/bin/env bash
# Installs what TPU Workbench needs on a fresh Debian machine, and nothing twice:
#   (no flag)  what the product and the demo run: git and tar (workspace sync), node_modules (npm ci), the
#              trainer's Python venv (scripts/python-env.sh), Rust's wasm32-unknown-unknown target, and the bundles in
#              dist/ (with the profile analysis, dist/tpw-profile and dist/profile.wasm, which need Rust's cargo);
#   --test     also what only the tests need (`npm test` passes it): OpenSSH's server (the tests' real sshd),
#              gdb, rsync and pssh (peers), Debian chromium and code-server 4.100.3 (VS Code 1.100) for the
#              end-to-end tests, and the Kubernetes binaries of the emulator's GKE clusters (scripts/k8s-binaries.sh:
#              built once per machine and version from the Go module proxy, cached in $TPW_CACHE/k8s; the demo does
#              not need them). (--e2e is the same, kept for old notes.)
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
# The demo's set-up gets the trainer's runtime only; --test adds its extras, the test clients, the checks and the
# venvs beside it (torch_xla's, SkyPilot's): scripts/python-env.sh says what each is.
TPW_PYTHON_ENV=$([ $e2e = 1 ] && echo all || echo runtime) bash scripts/python-env.sh >/dev/null

# --- code-server for the end-to-end tests -----------------------------------------------------------
if [ $e2e = 1 ]; then
  bash scripts/install-code-server.sh "$TPW_CACHE/code-server"
fi

# --- the emulator's Kubernetes binaries, for the GKE tests ---------------------------------------------
# Not fatal here: without Go (1.25 or later) the GKE tests fail with a message that says how to build them.
if [ $e2e = 1 ]; then
  bash scripts/k8s-binaries.sh >/dev/null || say "the emulator's Kubernetes binaries were not built (above): the GKE tests will fail"
fi

# --- Rust, for the profile analysis (native/profile: dist/tpw-profile and dist/profile.wasm) ---------------------
# Rust itself is not installed here (rustup's toolchains are per user), but the build needs it: the analysis exists
# only in Rust. Its WebAssembly target is added when rustup is there.
rustup=$(command -v rustup || { [ -x "$HOME/.cargo/bin/rustup" ] && echo "$HOME/.cargo/bin/rustup"; } || true)
if ! command -v cargo >/dev/null 2>&1 && [ ! -x "$HOME/.cargo/bin/cargo" ]; then
  say "no cargo: install Rust 1.82 or later (rustup, with clippy and rustfmt); the build needs it for the profile analysis"
elif [ -n "$rustup" ]; then
  "$rustup" target list --installed | grep -qx wasm32-unknown-unknown || "$rustup" target add wasm32-unknown-unknown
else
  say "no rustup: make sure this Rust has the wasm32-unknown-unknown target (the build makes dist/profile.wasm with it)"
fi

# --- bundles ---------------------------------------------------------------------------------------
# (npm test builds once itself, right after this set-up: TPW_SKIP_BUILD=1)
[[ "${TPW_SKIP_BUILD:-0}" == 1 ]] || npm run --silent build
