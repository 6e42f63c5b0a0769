#!/usr/bin/env bash
# Installs what the trainer needs on one TPU worker, idempotently (a second run only checks):
#   a venv at $TPW_SETUP_VENV, torch + torch_xla (with libtpu when TPW_SETUP_TPU=1), and the workspace's
#   trainer in editable mode, so later syncs need no reinstall.
# Run from the synced workspace root (setup/prepare-workers.sh does).
set -euo pipefail

VENV="${TPW_SETUP_VENV:-$HOME/.tpw/venv}"
TPU="${TPW_SETUP_TPU:-1}"
worker="w${TPU_WORKER_ID:-?}"
say() { printf '[setup %s] %s\n' "$worker" "$*"; }

[ -f trainer/pyproject.toml ] || { say "no trainer/pyproject.toml here ($(pwd)): run from the workspace root"; exit 2; }
PYTHON=$(command -v python3 || true)
[ -n "$PYTHON" ] || { say "python3 is missing: install it (apt-get install python3 python3-venv)"; exit 2; }

if [ ! -x "$VENV/bin/python" ]; then
  say "creating the venv $VENV ($("$PYTHON" --version 2>&1))"
  "$PYTHON" -m venv "$VENV" || { say "python3 -m venv failed: install python3-venv"; exit 2; }
fi
PIP=("$VENV/bin/python" -m pip install --quiet)
"${PIP[@]}" --upgrade pip

# Installing torch_xla also pins the torch it was built against; ask for both at once so pip agrees.
if [ "$TPU" = 1 ]; then
  say "installing torch and torch_xla[tpu] (libtpu)"
  "${PIP[@]}" torch 'torch_xla[tpu]' -f https://storage.googleapis.com/libtpu-releases/index.html
else
  say "installing torch and torch_xla (CPU)"
  "${PIP[@]}" torch torch_xla
fi

say "installing the trainer (editable) from $(pwd)/trainer"
"${PIP[@]}" -e trainer

"$VENV/bin/python" - <<'PY'
import torch, torch_xla, tpu_trainer  # noqa: F401 -- the import is the check
print(f"[setup] ok: torch {torch.__version__}, torch_xla {torch_xla.__version__}")
PY
say "done: activate with  source $VENV/bin/activate"
