# Sourced by the scripts: puts the trainer's venv first on PATH. The emulator's workers get a clean login
# environment whose PATH puts this venv first, so `python3` on a worker is this venv's.
export TPW_CACHE=${TPW_CACHE:-$HOME/.cache/tpu-workbench}
export TPW_VENV=${TPW_VENV:-$TPW_CACHE/venv}
export PATH="$TPW_VENV/bin:$PATH"
# torch loads torch_tpu at `import torch` when it is installed (the trainer's venv has it for the tests), and on a
# machine without a TPU that costs seconds and sends libtpu looking for a TPU VM's metadata server. Scripts that
# import torch before the trainer package (which turns it off itself) would pay it: off here unless this host has a
# TPU (a PCI function of Google's vendor id, as TorchTPU finds them) or the caller chose.
if ! grep -qs '^0x1ae0$' /sys/bus/pci/devices/*/vendor; then
  export TORCH_DEVICE_BACKEND_AUTOLOAD="${TORCH_DEVICE_BACKEND_AUTOLOAD:-0}"
fi
