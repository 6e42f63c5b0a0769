#!/usr/bin/env bash
# The fast tier (`npm run test:fast`, under three minutes): type-check, lint, the unit tests that start nothing
# (scripts/test-tiers.mjs), the language server's tests, and the trainer's tests that start no process
# (test/trainer/conftest.py). What it leaves out — emulators, sshd, the CLI as a process, browsers, code-server,
# the trainer as a command — is in `npm test`. Needs the set-up `npm test` makes (bash scripts/setup.sh --test).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
started=$SECONDS
failed=()
step() {
  local name=$1; shift
  local t=$SECONDS
  if "$@"; then echo "=== $name: ok ($((SECONDS - t))s)"; else echo "=== $name: FAILED ($((SECONDS - t))s)"; failed+=("$name"); fi
}
step typecheck npx tsc -b
step lint npx eslint --max-warnings 0 .
step unit-fast bash scripts/test-suite.sh unit-fast --test-reporter=dot
step lsp bash scripts/test-suite.sh lsp --test-reporter=dot
step trainer-fast bash scripts/test-suite.sh trainer-fast
echo "=== fast tier: $((SECONDS - started))s"
[ ${#failed[@]} -eq 0 ] || { echo "failed: ${failed[*]}"; exit 1; }
