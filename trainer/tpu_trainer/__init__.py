"""TPU Workbench trainer: a small Llama trainer on native PyTorch (TorchTPU, CUDA, CPU) or torch_xla,
configured with hydra."""

import os as _os

__version__ = "0.1.0"

# torch loads every installed device backend at `import torch` (its torch.backends entry point);
# torch_tpu's costs seconds (2-3 times torch's own import on a busy 2-core machine) and is of no
# use on a machine without a TPU: every CPU test, demo worker and emulated rank would pay it. So
# unless this host has a TPU, or the user decided, autoload is off here, before anything imports
# torch; backends/native.py imports torch_tpu itself for device=tpu.
if "TORCH_DEVICE_BACKEND_AUTOLOAD" not in _os.environ:
    from .hardware import local_tpus as _local_tpus

    if not _local_tpus().count:
        _os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
