#!/usr/bin/env bash
# Create or update the Python environments of the trainer, idempotently.
#
#   bash scripts/python-env.sh            # prints the venv path on stdout (progress on stderr)
#   VENV=$(bash scripts/python-env.sh) && "$VENV/bin/python" -m pytest test/trainer -q
#
# What goes where, and why two venvs:
#   $VENV        the trainer's venv (runtime): torch 2.11 (the oldest torch TorchTPU supports) and the
#                trainer's dependencies (trainer/requirements.txt), the trainer installed editable. This is
#                what the demo and the emulator's workers run (device=auto: plain PyTorch on CPU).
#   + test tools (TPW_PYTHON_ENV=all, the default): the trainer's optional features and its tests'
#                packages (trainer/requirements-extras.txt), torch_tpu with libtpu (trainer/requirements-tpu.txt:
#                the tests check the trainer against the real wheel), ruff and mypy, Google's client
#                libraries and xprof (test/emulator-clients, test/profiles-xprof), and two venvs beside it:
#   $VENV-xla    the legacy torch_xla path (device=xla, trainer/requirements-xla.txt): torch_xla 2.9.0, its
#                last release, pins torch 2.9.0, which TorchTPU's torch >= 2.11 excludes, so it cannot
#                share $VENV; test/trainer's XLA tests run in it (scripts/test-suite.sh trainer)
#   $VENV-skypilot  SkyPilot, for the task-YAML verdict test (it pins click<8.2; wandb needs >=8.2)
#
# torch_tpu's import costs seconds on a machine without a TPU (torch auto-loads it at `import torch`);
# the trainer package turns that autoload off where there is no TPU (trainer/tpu_trainer/__init__.py).
#
# Environment:
#   TPW_VENV           venv location (default: ~/.cache/tpu-workbench/venv)
#   TPW_PYTHON         interpreter that creates it (default: python3)
#   TPW_PYTHON_ENV     runtime: only $VENV's runtime (what `npm run demo` needs); all (default): also the
#                      test tools and the two venvs beside it (what `npm test` needs)
#   TPW_TORCH_INSTALL  lean (default): torch with --no-deps, plus only the CUDA libraries torch needs to
#                      import (trainer/requirements-cuda-libs.txt); full: torch with all its CUDA wheels
#   TPW_TPU=1          also install torch_tpu and libtpu in a runtime-only install (a Cloud TPU VM)
#   TPW_FORCE=1        reinstall even when the stamp says the venv is up to date
#
# Work is skipped when the stamp file in a venv matches a hash of its requirement files, this
# script, the options above and the checkout's path (the trainer is installed editable, so another
# checkout must reinstall it).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TPW_VENV:-$HOME/.cache/tpu-workbench/venv}"
PYTHON="${TPW_PYTHON:-python3}"
MODE="${TPW_TORCH_INSTALL:-lean}"
TPU="${TPW_TPU:-0}"
SCOPE="${TPW_PYTHON_ENV:-all}"
REQ="$ROOT/trainer/requirements.txt"
CUDA_LIBS="$ROOT/trainer/requirements-cuda-libs.txt"
TPU_REQ="$ROOT/trainer/requirements-tpu.txt"
CHECKS="$ROOT/trainer/requirements-checks.txt"
XLA_REQ="$ROOT/trainer/requirements-xla.txt"
EXTRAS="$ROOT/trainer/requirements-extras.txt"
XLA_CUDA_LIBS="$ROOT/trainer/requirements-xla-cuda-libs.txt"
STAMP="$VENV/.tpw-env.sha256"

say() { echo "python-env: $*" >&2; }

case "$MODE" in lean|full) ;; *) say "TPW_TORCH_INSTALL must be lean or full, not '$MODE'"; exit 2 ;; esac
case "$SCOPE" in runtime|all) ;; *) say "TPW_PYTHON_ENV must be runtime or all, not '$SCOPE'"; exit 2 ;; esac

mkdir -p "$(dirname "$VENV")"
# Two callers at once (two test runners, a test and the demo) must not pip into
# the same venv concurrently: serialise on a lock file next to it.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$VENV.lock"
  flock 9
fi

want="$(
  {
    cat "$REQ" "$CUDA_LIBS" "$ROOT/trainer/pyproject.toml" "${BASH_SOURCE[0]}"
    echo "mode=$MODE tpu=$TPU root=$ROOT python=$("$PYTHON" -c 'import sys; print(sys.version)')"
  } | sha256sum | cut -d' ' -f1
)"

# The stamp alone could outlive a half-deleted venv, so also look the packages up
# (find_spec, not import: importing torch costs seconds and this path should be instant).
installed() {
  "$VENV/bin/python" -c 'import importlib.util as u, sys
sys.exit(not all(u.find_spec(m) for m in ("tpu_trainer", "torch", "hydra")))' >/dev/null 2>&1
}

# One stamped step: skip when its stamp matches the hash of its inputs (files and words) and its modules are
# found, else run the install function and write the stamp.
stamped() { # VENV_DIR NAME "MODULES" INSTALL_FUNCTION INPUT_FILE…
  local venv=$1 name=$2 modules=$3 fn=$4 sum
  shift 4
  sum="$({ cat "$@"; echo "$MODE $ROOT"; } | sha256sum | cut -d' ' -f1)"
  if [[ "${TPW_FORCE:-0}" != 1 && -f "$venv/.tpw-$name.sha256" && "$(cat "$venv/.tpw-$name.sha256")" == "$sum" ]] &&
    "$venv/bin/python" -c "import importlib.util as u, sys; sys.exit(not all(u.find_spec(m) for m in '$modules'.split()))" >/dev/null 2>&1; then
    return 0
  fi
  "$fn"
  echo "$sum" >"$venv/.tpw-$name.sha256"
}

# torch_tpu and libtpu (with --no-deps: its Requires-Dist would reinstall torch with every CUDA wheel).
install_torch_tpu() {
  say "installing torch_tpu and libtpu from $(basename "$TPU_REQ")"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -r "$TPU_REQ" >&2
}

# The trainer's optional features (datasets, tokenizers, TensorBoard, W&B) and what its tests need (pytest,
# transformers as the reference models).
install_extras() {
  say "installing the trainer's extras and test dependencies from $(basename "$EXTRAS")"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$EXTRAS" >&2
}

install_checks() {
  say "installing the lint and type-check tools from $(basename "$CHECKS")"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$CHECKS" >&2
}

# The legacy torch_xla venv: requirements.txt with torch_xla's torch instead of ours, the CUDA libraries that
# torch imports, and the trainer (editable, from this checkout).
install_xla() {
  local venv="$VENV-xla" pip
  say "installing the torch_xla (legacy) venv $venv from $(basename "$XLA_REQ")"
  [[ -x "$venv/bin/python" ]] || "$PYTHON" -m venv "$venv"
  pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
  "${pip[@]}" -r <(grep -vE '^torch==' "$REQ") -r "$EXTRAS" >&2
  "${pip[@]}" --no-deps -r "$XLA_REQ" -r "$XLA_CUDA_LIBS" >&2
  "${pip[@]}" --no-deps -e "$ROOT/trainer" >&2
}
# Test-only clients (test/emulator-clients/requirements.txt: Google's Python client for Cloud TPU), with
# their own stamp so that adding or bumping them never reinstalls torch. A test-time install, like the rest of
# what test_tools (below) installs.
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

# A TPU VM's install (TPW_TPU=1): torch_tpu's wheel wants absl-py and tensorboard, which are among the extras.
tpu_runtime() {
  stamped "$VENV" extras "datasets transformers pytest wandb" install_extras "$EXTRAS"
  stamped "$VENV" torch-tpu "torch_tpu libtpu" install_torch_tpu "$TPU_REQ"
}

# Everything beyond the runtime, each with its own stamp so that a change to one never reinstalls the others.
test_tools() {
  stamped "$VENV" extras "datasets transformers pytest wandb" install_extras "$EXTRAS"
  stamped "$VENV" torch-tpu "torch_tpu libtpu" install_torch_tpu "$TPU_REQ"
  stamped "$VENV" checks "ruff mypy" install_checks "$CHECKS"
  install_test_clients
  install_skypilot
  stamped "$VENV-xla" xla "torch_xla tpu_trainer hydra pytest" install_xla "$XLA_REQ" "$XLA_CUDA_LIBS" "$REQ" "$EXTRAS"
}

if [[ "${TPW_FORCE:-0}" != 1 && -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]] && installed; then
  [[ "$TPU" == 1 ]] && tpu_runtime
  [[ "$SCOPE" == all ]] && test_tools
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
  # torch's metadata requires the CUDA toolkit's wheels and triton (~4 GB installed) even though a CPU or
  # TPU machine never uses them. Install everything else normally, then torch without its dependencies,
  # then only the CUDA libraries that torch's shared objects are linked against (it cannot be imported
  # without them).
  say "installing dependencies from $REQ (torch without CUDA extras)"
  "${PIP[@]}" -r <(grep -vE '^torch==' "$REQ")
  mapfile -t torch_pins < <(grep -E '^torch==' "$REQ")
  say "installing ${torch_pins[*]} --no-deps and $(basename "$CUDA_LIBS")"
  "${PIP[@]}" --no-deps "${torch_pins[@]}" -r "$CUDA_LIBS"
fi

# --no-deps: the dependencies are installed above; letting pip resolve torch's again
# would pull the skipped CUDA wheels back in.
say "installing the trainer (editable) from $ROOT/trainer"
"${PIP[@]}" --no-deps -e "$ROOT/trainer"

TORCH_DEVICE_BACKEND_AUTOLOAD=0 "$VENV/bin/python" -c 'import tpu_trainer, torch, hydra, omegaconf' >&2
echo "$want" >"$STAMP"
[[ "$TPU" == 1 ]] && tpu_runtime
[[ "$SCOPE" == all ]] && test_tools
say "done in $((SECONDS - start))s: $(du -sh "$VENV" 2>/dev/null | cut -f1) in $VENV"
echo "$VENV"
