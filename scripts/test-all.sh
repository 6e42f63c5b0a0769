#!/usr/bin/env bash
# Every test, as CI runs it (`npm test`): set-up (idempotent; what only tests need is installed here, not by the
# demo), one build, then the suites — type-check, lint, unit (core, CLI, the emulator, SSH against real sshd),
# language server over JSON-RPC, the run view in headless Chromium, the profile analysis (Rust: rustfmt, clippy,
# cargo test), the Python checks (ruff, mypy), the trainer (pytest, torch on CPU), Google's Python clients against
# the emulator, and end to end in real VS Code (code-server + headless Chromium).
#
# Suites that do not share anything run side by side, in phases (PHASES below); inside a suite, test files run
# side by side too (scripts/test-suite.sh). Each step's output goes to test-artifacts/<step>.log; a failed step's
# failing tests and the end of its log end the output. Ends with each step's wall and CPU seconds and one
# "N passed, N failed" line over all runners.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p test-artifacts/steps test-artifacts/cpu
rm -f test-artifacts/steps/* test-artifacts/cpu/*
started_all=$SECONDS

timed() { # name cmd… — runs in the foreground, output on the console and in its log
  local name=$1; shift
  local t=$SECONDS
  "$@" 2>&1 | tee "test-artifacts/$name.log"
  local rc=${PIPESTATUS[0]}
  echo "$rc $((SECONDS - t))" >"test-artifacts/steps/$name"
  return "$rc"
}

timed setup env TPW_SKIP_BUILD=1 bash scripts/setup.sh --test || { echo "setup failed (test-artifacts/setup.log)"; exit 1; }
. scripts/env.sh
timed build node scripts/build.mjs || { echo "the build failed (test-artifacts/build.log)"; exit 1; }
export TPW_BUILT=1

# The CPU seconds a step's processes used (user + system, of every process it waited for): beside its wall time,
# it says whether a suite waits (room for more side by side) or computes (only less work makes it faster).
# `times` reports this shell's children, so the step's own shell runs it, into a file (in a pipe or $(…) it would
# run in a new subshell that has no children); this reads its second line.
cpu_seconds() { tail -1 "$1" | tr -d 's' | awk '{ s = 0; for (i = 1; i <= 2; i++) { split($i, p, "m"); s += p[1] * 60 + p[2] } printf "%d", s }'; }

step() { # name cmd… — in the background; its output only in its log
  local name=$1; shift
  (
    t=$SECONDS
    "$@" >"test-artifacts/$name.log" 2>&1
    rc=$?
    times >"test-artifacts/cpu/$name"
    cpu=$(cpu_seconds "test-artifacts/cpu/$name")
    echo "$rc $((SECONDS - t)) $cpu" >"test-artifacts/steps/$name"
    echo "=== $name: $([ $rc = 0 ] && echo ok || echo FAILED) ($((SECONDS - t))s)"
  ) &
}

# Each line is a phase: its steps run side by side, and the next phase starts when all of them have ended.
# Steps in one phase must share nothing but the machine (their own TPW_HOME, ports, loopback addresses).
PHASES=(
  "typecheck lint native python-checks"
  "unit trainer-main"
  "lsp webview emulator-clients trainer-xla"
  "e2e"
)
run() {
  case $1 in
    typecheck) step typecheck npx tsc -b ;;
    lint) step lint npx eslint --max-warnings 0 . ;;
    native) step native npm run -s test:native ;;
    python-checks) step python-checks npm run -s check:python ;;
    unit) step unit npm run -s test:unit -- --test-reporter=tap ;;
    trainer-main) step trainer-main bash scripts/test-suite.sh trainer-main ;;
    trainer-xla) step trainer-xla bash scripts/test-suite.sh trainer-xla ;;
    lsp) step lsp npm run -s test:lsp -- --test-reporter=tap ;;
    webview) step webview npm run -s test:webview -- --test-reporter=tap ;;
    emulator-clients) step emulator-clients python3 -m pytest -q test/emulator-clients ;;
    e2e) step e2e npm run -s test:e2e -- --test-reporter=tap ;;
    *) echo "unknown step $1"; exit 2 ;;
  esac
}
for phase in "${PHASES[@]}"; do
  echo "=== $phase"
  for s in $phase; do run "$s"; done
  wait
done

# node's test runner prints "# pass N" / "# fail N"; pytest prints "N passed, M failed"; cargo test one
# "test result: ok. N passed; M failed; …" line per test binary.
passed=0; failed=0
sum() { awk '{s+=$1} END {print s+0}'; }
count_node() { passed=$((passed + $(grep -E '^# pass ' "$1" | awk '{print $3}' | sum))); failed=$((failed + $(grep -E '^# fail ' "$1" | awk '{print $3}' | sum))); }
count_cargo() { passed=$((passed + $(grep -oE 'test result: [a-zA-Z]+\. [0-9]+ passed' "$1" | awk '{print $4}' | sum))); failed=$((failed + $(grep -oE '[0-9]+ failed;' "$1" | awk '{print $1}' | sum))); }
count_pytest() { local line; line=$(grep -E '[0-9]+ (passed|failed)' "$1" | tail -1); passed=$((passed + $(echo "$line" | grep -oE '[0-9]+ passed' | awk '{print $1}' | sum))); failed=$((failed + $(echo "$line" | grep -oE '[0-9]+ failed' | awk '{print $1}' | sum))); }
for s in unit lsp webview e2e; do count_node "test-artifacts/$s.log"; done
count_cargo test-artifacts/native.log
for s in trainer-main trainer-xla emulator-clients; do count_pytest "test-artifacts/$s.log"; done

broken=()
for f in test-artifacts/steps/*; do
  read -r rc _ <"$f"
  [ "$rc" = 0 ] || broken+=("$(basename "$f")")
done
# A failed step names its failures first (a log's tail alone can end in passing tests: node's runner prints the
# files in the order they ended), then the end of its log.
failures_of() { # log — node's "not ok" entries with their YAML blocks, pytest's FAILED/ERROR lines, cargo's failing tests
  awk '/^ *not ok /{n=40} n>0{print; n--}' "$1" | head -n 400
  grep -E '^(FAILED|ERROR) |^---- .* stdout ----$' "$1" | head -n 60
}
for b in ${broken[@]+"${broken[@]}"}; do
  echo "=== $b FAILED: its failures (test-artifacts/$b.log)"
  failures_of "test-artifacts/$b.log"
  echo "=== $b FAILED: the end of test-artifacts/$b.log"
  tail -n 60 "test-artifacts/$b.log"
done

echo "=== step times (seconds of wall time and of CPU time; steps of one phase ran side by side)"
row() { local rc secs cpu; read -r rc secs cpu <"test-artifacts/steps/$1"; printf '  %-17s %5s  %-9s %s\n' "$1" "$secs" "${cpu:+cpu $cpu}" "$([ "$rc" = 0 ] && echo ok || echo FAILED)"; }
for name in setup build; do row "$name"; done
for phase in "${PHASES[@]}"; do
  for name in $phase; do row "$name"; done
done
printf '  %-17s %5s\n' total $((SECONDS - started_all))
[ ${#broken[@]} -gt 0 ] && echo "failed steps: ${broken[*]}"
echo "all: $passed passed, $failed failed"
[ ${#broken[@]} -eq 0 ] && [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
