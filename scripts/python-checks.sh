#!/usr/bin/env bash
# Lint (ruff) and type-check (mypy) the trainer and its tests, as CI's python-checks step does.
# Exits non-zero when either finds anything; both always run, so one run shows every finding.
# Settings: trainer/pyproject.toml ([tool.ruff], [tool.mypy]). Tools: scripts/python-env.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
CONFIG=trainer/pyproject.toml
# Caches outside the checkout; one per mypy run, since their flags differ.
CACHE="$TPW_CACHE/python-checks"
status=0
run() { echo "+ $*"; "$@" || status=1; }

run ruff check --config "$CONFIG" --cache-dir "$CACHE/ruff" trainer/tpu_trainer test/trainer
# The package: every function annotated (disallow_untyped_defs in the config).
run mypy --config-file "$CONFIG" --cache-dir "$CACHE/mypy-package" trainer/tpu_trainer
# The tests: bodies checked, but test functions and fixtures need no annotations.
run mypy --config-file "$CONFIG" --cache-dir "$CACHE/mypy-tests" --allow-untyped-defs --allow-incomplete-defs \
  test/trainer
exit $status
