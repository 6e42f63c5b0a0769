#!/usr/bin/env bash
# Prepare a TPU VM's workers for the trainer: "TPU: Prepare Workers" runs this recipe on every worker at
# once (the workspace is synced to each first, so setup/install.sh and trainer/ are there).
# Like any recipe: `export` lines, then one command. By hand, from the workspace root on a worker:
#   bash setup/prepare-workers.sh
#
# TPW_SETUP_VENV  where the venv goes (on the worker)
# TPW_SETUP_TPU        1: TorchTPU (torch_tpu with libtpu), as on a real TPU VM; 0: torch for CPU (the emulator)
# TPW_SETUP_FRAMEWORK  native: torch (+ torch_tpu) for device=tpu/auto; xla: the legacy torch_xla (device=xla)
export TPW_SETUP_VENV="$HOME/.tpw/venv"
export TPW_SETUP_TPU=1
export TPW_SETUP_FRAMEWORK=native
export PIP_DISABLE_PIP_VERSION_CHECK=1
export PYTHONUNBUFFERED=1

bash setup/install.sh
