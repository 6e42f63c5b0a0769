#!/usr/bin/env bash
# Lint (ruff) and type-check (mypy) the trainer and its tests, and the project's other Python (the emulator's
# client tests, the SkyPilot verdicts script, the bench scripts, the hydra-builtins generator), as CI's
# python-checks step does.
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
# Python outside the trainer. Not here: test/fixtures/profiles/real/make-{h200,cpu}-captures/*.py, kept exactly as they
# ran to make those captures (their provenance).
SCRIPTS=(test/emulator-clients language-server/src/hydra/gen-hydra-builtins.py test/bench/cce_bench.py test/bench/cli_start_bench.py
  test/bench/ckpt_bench.py test/bench/trainer_bench.py test/bench/profile_pairs.py test/bench/profiles_cores_bench.py
  test/bench/profiles_native_bench.py test/bench/profiles_real_bench.py test/bench/profiles_open_bench.py
  test/fixtures/profiles/real/make-expected.py test/fixtures/profiles/torch/make-capture.py)

run ruff check --config "$CONFIG" --cache-dir "$CACHE/ruff" trainer/tpu_trainer test/trainer "${SCRIPTS[@]}" \
  test/skypilot
# The package: every function annotated (disallow_untyped_defs in the config). backends/xla.py imports torch_xla,
# which only the legacy venv has (it pins torch 2.9): it is checked there, against the real torch_xla.
run mypy --config-file "$CONFIG" --cache-dir "$CACHE/mypy-package" --exclude 'backends/xla\.py$' trainer/tpu_trainer
run mypy --config-file "$CONFIG" --cache-dir "$CACHE/mypy-xla" --follow-imports silent \
  --python-executable "$TPW_VENV-xla/bin/python" trainer/tpu_trainer/backends/xla.py
# The tests: bodies checked, but test functions and fixtures need no annotations.
run mypy --config-file "$CONFIG" --cache-dir "$CACHE/mypy-tests" --allow-untyped-defs --allow-incomplete-defs \
  test/trainer
# The other Python, as the tests are checked. Apart from test/trainer: both have a conftest.py.
run mypy --config-file "$CONFIG" --cache-dir "$CACHE/mypy-scripts" --allow-untyped-defs --allow-incomplete-defs \
  "${SCRIPTS[@]}"
# The SkyPilot script runs in SkyPilot's own venv (scripts/python-env.sh), so it is checked against that one.
run mypy --config-file "$CONFIG" --cache-dir "$CACHE/mypy-skypilot" --allow-untyped-defs --allow-incomplete-defs \
  --python-executable "$TPW_VENV-skypilot/bin/python" test/skypilot
exit $status
