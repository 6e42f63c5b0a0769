#!/usr/bin/env bash
# Create or update the Python environment of the trainer, idempotently.
#
#   bash scripts/python-env.sh            # prints the venv path on stdout (progress on stderr)
#   VENV=$(bash scripts/python-env.sh) && "$VENV/bin/python" -m pytest test/trainer -q
#
# Environment:
#   TPW_VENV           venv location (default: ~/.cache/tpu-workbench/venv)
#   TPW_PYTHON         interpreter that creates it (default: python3)
#   TPW_TORCH_INSTALL  lean (default): torch and torch_xla with --no-deps, plus only the
#                      CUDA libraries torch needs to import (trainer/requirements-cuda-libs.txt);
#                      full: plain `pip install -r trainer/requirements.txt` (all nvidia-* wheels)
#   TPW_TPU=1          also install libtpu (torch_xla[tpu]'s pin), for a Cloud TPU VM
#   TPW_FORCE=1        reinstall even when the stamp says the venv is up to date
#
# Also installs the lint and type-check tools (ruff, mypy: trainer/requirements-checks.txt)
# that scripts/python-checks.sh runs.
#
# Work is skipped when the stamp file in the venv matches a hash of the requirement
# files, pyproject.toml, this script, the options above and the checkout's path (the
# trainer is installed editable, so another checkout must reinstall it).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TPW_VENV:-$HOME/.cache/tpu-workbench/venv}"
PYTHON="${TPW_PYTHON:-python3}"
MODE="${TPW_TORCH_INSTALL:-lean}"
TPU="${TPW_TPU:-0}"
REQ="$ROOT/trainer/requirements.txt"
CUDA_LIBS="$ROOT/trainer/requirements-cuda-libs.txt"
CHECKS="$ROOT/trainer/requirements-checks.txt"
STAMP="$VENV/.tpw-env.sha256"

say() { echo "python-env: $*" >&2; }

case "$MODE" in lean|full) ;; *) say "TPW_TORCH_INSTALL must be lean or full, not '$MODE'"; exit 2 ;; esac

mkdir -p "$(dirname "$VENV")"
# Two callers at once (two test runners, a test and the demo) must not pip into
# the same venv concurrently: serialise on a lock file next to it.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$VENV.lock"
  flock 9
fi

want="$(
  {
    cat "$REQ" "$CUDA_LIBS" "$CHECKS" "$ROOT/trainer/pyproject.toml" "${BASH_SOURCE[0]}"
    echo "mode=$MODE tpu=$TPU root=$ROOT python=$("$PYTHON" -c 'import sys; print(sys.version)')"
  } | sha256sum | cut -d' ' -f1
)"

# The stamp alone could outlive a half-deleted venv, so also look the packages up
# (find_spec, not import: importing torch costs seconds and this path should be instant).
installed() {
  "$VENV/bin/python" -c 'import importlib.util as u, sys
sys.exit(not all(u.find_spec(m) for m in ("tpu_trainer", "torch", "torch_xla", "hydra", "ruff", "mypy")))' >/dev/null 2>&1
}
# Test-only clients (test/emulator-clients/requirements.txt: Google's Python client for Cloud TPU), with
# their own stamp so that adding or bumping them never reinstalls torch.
install_test_clients() {
  local req="$ROOT/test/emulator-clients/requirements.txt" stamp="$VENV/.tpw-test-clients.sha256" sum
  # xprof and xprof-rs: the reference the profile views are checked and benchmarked against.
  local prof_req="$ROOT/test/profiles-xprof/requirements.txt"
  sum="$(cat "$req" "$prof_req" | sha256sum | cut -d' ' -f1)"
  if [[ "${TPW_FORCE:-0}" != 1 && -f "$stamp" && "$(cat "$stamp")" == "$sum" ]] &&
    "$VENV/bin/python" -c 'import importlib.util as u, sys; sys.exit(not all(u.find_spec(m) for m in ("google.cloud.tpu_v2", "google.cloud.compute_v1", "google.cloud.oslogin_v1", "xprof", "debugpy")))' >/dev/null 2>&1; then
    return 0
  fi
  say "installing the test clients from $req"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" -r "$prof_req" >&2
  echo "$sum" >"$stamp"
}

# SkyPilot (test/skypilot/requirements.txt), for the test that checks tpw's task-YAML verdicts against SkyPilot's:
# in a venv of its own beside this one ($VENV-skypilot), because skypilot pins click<8.2 and wandb needs >=8.2.
install_skypilot() {
  local req="$ROOT/test/skypilot/requirements.txt" venv="$VENV-skypilot" sum
  sum="$(sha256sum "$req" | cut -d' ' -f1)"
  if [[ "${TPW_FORCE:-0}" != 1 && -f "$venv/.tpw-skypilot.sha256" && "$(cat "$venv/.tpw-skypilot.sha256")" == "$sum" ]] &&
    "$venv/bin/python" -c 'import importlib.util as u, sys; sys.exit(not u.find_spec("sky"))' >/dev/null 2>&1; then
    return 0
  fi
  say "installing SkyPilot into $venv from $req"
  [[ -x "$venv/bin/python" ]] || "$PYTHON" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >&2
  echo "$sum" >"$venv/.tpw-skypilot.sha256"
}

if [[ "${TPW_FORCE:-0}" != 1 && -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]] && installed; then
  install_test_clients
  install_skypilot
  say "up to date ($VENV)"
  echo "$VENV"
  exit 0
fi

start=$SECONDS
if [[ ! -x "$VENV/bin/python" ]]; then
  say "creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip install --quiet --disable-pip-version-check)
rm -f "$STAMP"

if [[ "$MODE" == full ]]; then
  say "installing $REQ (with torch's CUDA wheels)"
  "${PIP[@]}" -r "$REQ"
else
  # torch's metadata requires 15 nvidia-* wheels and triton (~5.9 GB installed) even
  # though a CPU or TPU machine never uses them. Install everything else normally,
  # then torch/torch_xla without their dependencies, then only the CUDA libraries that
  # torch's shared objects are linked against (it cannot be imported without them).
  say "installing dependencies from $REQ (torch/torch_xla without CUDA extras)"
  "${PIP[@]}" -r <(grep -vE '^(torch|torch_xla)==' "$REQ")
  mapfile -t torch_pins < <(grep -E '^(torch|torch_xla)==' "$REQ")
  say "installing ${torch_pins[*]} --no-deps and $(basename "$CUDA_LIBS")"
  "${PIP[@]}" --no-deps "${torch_pins[@]}" -r "$CUDA_LIBS"
fi

say "installing the lint and type-check tools from $(basename "$CHECKS")"
"${PIP[@]}" -r "$CHECKS"

if [[ "$TPU" == 1 ]]; then
  # torch_xla 2.9.0's [tpu] extra pins libtpu==0.0.21.
  say "installing libtpu"
  "${PIP[@]}" libtpu==0.0.21
fi

# --no-deps: the dependencies are installed above; letting pip resolve torch's again
# would pull the skipped CUDA wheels back in.
say "installing the trainer (editable) from $ROOT/trainer"
"${PIP[@]}" --no-deps -e "$ROOT/trainer"

"$VENV/bin/python" -c 'import tpu_trainer, torch, hydra, omegaconf' >&2
echo "$want" >"$STAMP"
install_test_clients
install_skypilot
say "done in $((SECONDS - start))s: $(du -sh "$VENV" 2>/dev/null | cut -f1) in $VENV"
echo "$VENV"
