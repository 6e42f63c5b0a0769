# Sourced by the scripts: puts the trainer's venv first on PATH. The emulator's workers get a clean login
# environment whose PATH puts this venv first, so `python3` on a worker is this venv's.
export TPW_CACHE=${TPW_CACHE:-$HOME/.cache/tpu-workbench}
export TPW_VENV=${TPW_VENV:-$TPW_CACHE/venv}
export PATH="$TPW_VENV/bin:$PATH"
