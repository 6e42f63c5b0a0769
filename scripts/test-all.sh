#!/usr/bin/env bash
# Every test, as CI runs it: set-up (idempotent), type-check, lint, unit tests (core, emulator, SSH against
# real sshd), language-server tests over JSON-RPC, the profile analysis's (Rust) checks and tests, the trainer's lint and type check (ruff, mypy) and pytest
# suite, and the end-to-end test in real VS Code (code-server + headless Chromium). Ends with one
# "N passed, N failed" line over all runners.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --e2e || { echo "setup failed"; exit 1; }
. scripts/env.sh
mkdir -p test-artifacts
passed=0; failed=0; broken=()

# node's test runner prints "# pass N" / "# fail N"; pytest prints "N passed, M failed".
count_node() { local log=$1; passed=$((passed + $(grep -E '^# pass ' "$log" | awk '{s+=$3} END {print s+0}'))); failed=$((failed + $(grep -E '^# fail ' "$log" | awk '{s+=$3} END {print s+0}'))); }
# cargo test prints one "test result: ok. N passed; M failed; …" line per test binary.
count_cargo() { local log=$1; passed=$((passed + $(grep -oE 'test result: [a-zA-Z]+\. [0-9]+ passed' "$log" | awk '{s+=$4} END {print s+0}'))); failed=$((failed + $(grep -oE '[0-9]+ failed;' "$log" | awk '{s+=$1} END {print s+0}'))); }
count_pytest() { local log=$1 line; line=$(grep -E '[0-9]+ (passed|failed)' "$log" | tail -1); passed=$((passed + $(echo "$line" | grep -oE '[0-9]+ passed' | cut -d' ' -f1 || echo 0))); failed=$((failed + $(echo "$line" | grep -oE '[0-9]+ failed' | cut -d' ' -f1 || echo 0))); }

step() {
  local name=$1; shift
  echo "=== $name"
  local started=$SECONDS
  if "$@" 2>&1 | tee "test-artifacts/$name.log"; then
    echo "=== $name: ok ($((SECONDS - started))s)"
  else
    echo "=== $name: FAILED ($((SECONDS - started))s)"
    broken+=("$name")
  fi
}

step typecheck npx tsc -b
step lint npx eslint --max-warnings 0 .
# Each suite through its npm script (scripts/test-suite.sh), as a developer runs it; TAP for the counts.
step unit npm run -s test:unit -- --test-reporter=tap
count_node test-artifacts/unit.log
step lsp npm run -s test:lsp -- --test-reporter=tap
count_node test-artifacts/lsp.log
# The run view's bundle in headless Chromium (the suite builds dist/ first).
step webview npm run -s test:webview -- --test-reporter=tap
count_node test-artifacts/webview.log
# The profile analysis (Rust): rustfmt, clippy and its tests (the unit suite holds its two builds to xprof and to each other).
step native npm run -s test:native
count_cargo test-artifacts/native.log
# ruff and mypy over the trainer, its tests and the project's other Python (settings in trainer/pyproject.toml);
# fails on any finding.
step python-checks npm run -s check:python
step trainer npm run -s test:trainer
count_pytest test-artifacts/trainer.log
# Google's Python client for Cloud TPU (REST transport) against the emulator started by the built CLI.
step emulator-clients python3 -m pytest -q test/emulator-clients
count_pytest test-artifacts/emulator-clients.log
step e2e npm run -s test:e2e -- --test-reporter=tap
count_node test-artifacts/e2e.log

[ ${#broken[@]} -gt 0 ] && echo "failed steps: ${broken[*]}"
echo "all: $passed passed, $failed failed"
[ ${#broken[@]} -eq 0 ] && [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
