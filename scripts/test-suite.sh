#!/usr/bin/env bash
# One test suite, run the way `npm run test:<suite>` and scripts/test-all.sh both run it (so they cannot drift):
#
#   bash scripts/test-suite.sh unit|unit-fast|lsp|webview|trainer|trainer-main|trainer-xla|trainer-fast|e2e|native [FILE…] [OPTION…]
#
# With no FILE it runs every test file of the suite. An argument that names an existing file (for pytest, before
# any `::test`) is a FILE; every other argument goes to the runner as it is (node's test runner; pytest for the
# trainer), e.g.
#
#   npm run test:unit -- test/unit/recipe.test.ts
#   npm run test:lsp -- test/lsp/flags.test.ts --test-name-pattern='did you mean'
#   npm run test:trainer -- test/trainer/test_config.py -k schema
#
# The webview and e2e suites drive the built bundles, so they build first (a second and a half) unless TPW_BUILT=1
# says this run built them already (scripts/test-all.sh builds once, before suites run side by side: a rebuild
# while another suite starts a bundle could hand it a half-written file); the LSP harness rebuilds the language
# server itself when its sources are newer (test/helpers/fresh-bundle.ts).
#
# Test files run side by side: TPW_TEST_JOBS of them at once (default 3 for unit and LSP, 2 for the webview and for
# e2e, where each file owns a code-server, a Chromium and an emulator, and mostly waits on them). Each file has its
# own TPW_HOME, ports and loopback addresses (test/helpers/loopback.ts).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
suite=${1:-}
[ $# -gt 0 ] && shift
files=()
opts=()
for a in "$@"; do
  if [ -e "${a%%::*}" ]; then files+=("$a"); else opts+=("$a"); fi
done

node_suite() { # default files…, after the runner's own options
  [ ${#files[@]} -gt 0 ] || files=("$@")
  exec node --import tsx --test "${runner[@]}" ${opts[@]+"${opts[@]}"} "${files[@]}"
}

build() { [ "${TPW_BUILT:-}" = 1 ] || node scripts/build.mjs; }
jobs=${TPW_TEST_JOBS:-3}

case $suite in
  unit) runner=(--test-concurrency="$jobs"); node_suite test/unit/*.test.ts ;;
  # The fast tier's unit files: those that start nothing (scripts/test-tiers.mjs says which).
  unit-fast) runner=(--test-concurrency="$jobs"); mapfile -t fast < <(node scripts/test-tiers.mjs); node_suite "${fast[@]}" ;;
  lsp) runner=(--test-concurrency="$jobs"); node_suite test/lsp/*.test.ts ;;
  webview) build; runner=(--test-concurrency=2); node_suite test/webview/*.test.ts ;;
  e2e) build; runner=(--test-concurrency="${TPW_TEST_JOBS:-2}"); node_suite test/e2e/*.e2e.ts ;;
  # The profile analysis (Rust): formatted, lint-free on both targets (native, and WebAssembly, whose host
  # interface only that target compiles), its tests. OPTIONs go to `cargo test`.
  native)
    cargo=$(command -v cargo || echo "$HOME/.cargo/bin/cargo")
    # From the crate's folder: cargo reads its .cargo/config.toml from there (the build the CLI runs).
    cd native/profile
    "$cargo" fmt --check
    "$cargo" clippy --release --all-targets --locked -q -- -D warnings
    "$cargo" clippy --release --lib --target wasm32-unknown-unknown --locked -q -- -D warnings
    exec "$cargo" test --release --locked ${opts[@]+"${opts[@]}"} ;;
  # The trainer: its venv runs every test but the torch_xla (legacy) ones, which run in $TPW_VENV-xla (torch_xla
  # pins torch 2.9; the trainer's venv has torch 2.11 for TorchTPU). `trainer` runs both, one after the other, and
  # its last line adds them up; `trainer-main` and `trainer-xla` run one each (scripts/test-all.sh runs them in
  # different phases). pytest's exit 5 (nothing selected: a file of only one kind) counts as none run there.
  trainer|trainer-main|trainer-xla)
    [ ${#files[@]} -gt 0 ] || files=(test/trainer)
    log=$(mktemp); trap 'rm -f "$log"' EXIT
    status=0
    if [ "$suite" != trainer-xla ]; then
      python3 -m pytest -q -m "not xla" ${opts[@]+"${opts[@]}"} "${files[@]}" | tee "$log" || { c=${PIPESTATUS[0]}; [ "$c" = 5 ] || status=$c; }
    fi
    if [ "$suite" != trainer-main ]; then
      xla_python="$TPW_VENV-xla/bin/python"
      if [ -x "$xla_python" ]; then
        "$xla_python" -m pytest -q -p no:cacheprovider -m xla ${opts[@]+"${opts[@]}"} "${files[@]}" | tee -a "$log" || { c=${PIPESTATUS[0]}; [ "$c" = 5 ] || status=$c; }
      else
        echo "trainer: the torch_xla venv $TPW_VENV-xla is missing (bash scripts/python-env.sh makes it)" >&2
        status=1
      fi
    fi
    sum() { grep -E '[0-9]+ (passed|failed).* in [0-9.]+s' "$log" | grep -oE "[0-9]+ $1" | awk '{s+=$1} END {print s+0}'; }
    echo "$suite: $(sum passed) passed, $(sum failed) failed"
    exit $status ;;
  # The fast tier's trainer tests: modules that start no process (test/trainer/conftest.py marks the others slow),
  # in the trainer's venv (the torch_xla tests all start processes, so none is fast).
  trainer-fast)
    [ ${#files[@]} -gt 0 ] || files=(test/trainer)
    exec python3 -m pytest -q -m 'not slow and not xla' ${opts[@]+"${opts[@]}"} "${files[@]}" ;;
  *) echo "usage: bash scripts/test-suite.sh unit|unit-fast|lsp|webview|trainer|trainer-main|trainer-xla|trainer-fast|e2e|native [FILE…] [OPTION…] (got: '${suite}')" >&2; exit 2 ;;
esac
