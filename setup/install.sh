#!/usr/bin/env bash
# Installs what the trainer needs on one TPU worker, idempotently (a second run only checks):
#   a venv at $TPW_SETUP_VENV with torch and, on a TPU VM (TPW_SETUP_TPU=1), TorchTPU (torch_tpu, with the
#   libtpu it requires) for device=tpu / device=auto; with TPW_SETUP_FRAMEWORK=xla the legacy torch_xla
#   instead (device=xla), whose pins need an older torch than torch_tpu's; and the workspace's trainer in
#   editable mode, so later syncs need no reinstall.
# Run from the synced workspace root (setup/prepare-workers.sh does).
set -euo pipefail

VENV="${TPW_SETUP_VENV:-$HOME/.tpw/venv}"
TPU="${TPW_SETUP_TPU:-1}"
FRAMEWORK="${TPW_SETUP_FRAMEWORK:-native}"
worker="w${TPU_WORKER_ID:-?}"
say() { printf '[setup %s] %s\n' "$worker" "$*"; }

case "$FRAMEWORK" in native|xla) ;; *) say "TPW_SETUP_FRAMEWORK must be native or xla, not '$FRAMEWORK'"; exit 2 ;; esac
[ -f trainer/pyproject.toml ] || { say "no trainer/pyproject.toml here ($(pwd)): run from the workspace root"; exit 2; }
PYTHON=$(command -v python3 || true)
[ -n "$PYTHON" ] || { say "python3 is missing: install it (apt-get install python3 python3-venv)"; exit 2; }

if [ ! -x "$VENV/bin/python" ]; then
  say "creating the venv $VENV ($("$PYTHON" --version 2>&1))"
  "$PYTHON" -m venv "$VENV" || { say "python3 -m venv failed: install python3-venv"; exit 2; }
fi
PIP=("$VENV/bin/python" -m pip install --quiet)
"${PIP[@]}" --upgrade pip

# torch_tpu and torch_xla each pin the torch they were built against; ask for the pair at once so pip agrees.
if [ "$FRAMEWORK" = xla ]; then
  if [ "$TPU" = 1 ]; then
    say "installing torch and torch_xla[tpu] (libtpu), the legacy device=xla path"
    "${PIP[@]}" torch 'torch_xla[tpu]' -f https://storage.googleapis.com/libtpu-releases/index.html
  else
    say "installing torch and torch_xla (CPU), the legacy device=xla path"
    "${PIP[@]}" torch torch_xla
  fi
  check='import torch, torch_xla, tpu_trainer; print(f"[setup] ok: torch {torch.__version__}, torch_xla {torch_xla.__version__}")'
elif [ "$TPU" = 1 ]; then
  say "installing torch and torch_tpu (TorchTPU, with libtpu)"
  "${PIP[@]}" 'torch>=2.11,<=2.15' torch_tpu
  check='import torch, torch_tpu, tpu_trainer; print(f"[setup] ok: torch {torch.__version__}, torch_tpu {torch_tpu.__version__}")'
else
  say "installing torch (CPU: the emulator's workers run device=cpu)"
  "${PIP[@]}" 'torch>=2.11'
  check='import torch, tpu_trainer; print(f"[setup] ok: torch {torch.__version__}")'
fi

say "installing the trainer (editable) from $(pwd)/trainer"
"${PIP[@]}" -e trainer

"$VENV/bin/python" -c "$check"
say "done: activate with  source $VENV/bin/activate"
