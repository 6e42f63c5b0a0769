"""Backends: the frameworks the trainer runs on, behind one interface (base.Backend).

    native.py  native PyTorch, one process per device: TorchTPU    device=tpu, cuda, cpu
               (torch_tpu), CUDA or CPU; FSDP2 and DTensor
    xla.py     torch_xla (legacy): Cloud TPU, or XLA on CPU        device=xla

device=auto: TorchTPU where this machine has a TPU and torch_tpu is installed, CUDA where it
has an NVIDIA GPU, else CPU; a recipe that sets PJRT_DEVICE (torch_xla's variable) keeps
torch_xla when it is installed. Nothing here imports torch_tpu or torch_xla: the chosen
backend's module does, when it is chosen (xla.py is the only one that imports torch_xla, a
test checks). A new framework is one new module here, named in SELECTORS below under the
`device` value that picks it (and in config.py's `device` enum, from which the JSON Schema
is generated).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path

from ..hardware import has_nvidia_gpu, local_tpus
from .base import Backend, ShardedCheckpointing, host_leader, note_once

# device value -> the module (in this package) whose select(device, ...) builds that backend.
SELECTORS: dict[str, str] = {"tpu": "native", "cuda": "native", "cpu": "native", "xla": "xla"}

_SELECTED: list[Backend] = []  # this process's backend, for the failure report


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken install counts as none
        return False


def resolve(device: str) -> str:
    """The device `auto` stands for on this machine (any other value is returned as it is).
    Looks at sysfs and /dev only: nothing is imported, no device is claimed."""
    if device != "auto":
        return device
    if os.environ.get("PJRT_DEVICE") and _installed("torch_xla"):
        return "xla"
    if local_tpus().count and _installed("torch_tpu"):
        return "tpu"
    if has_nvidia_gpu():
        return "cuda"
    return "cpu"


def select(device: str, spmd: str = "auto", timeout_s: int = 180) -> Backend:
    """The backend of `device` (auto|tpu|cuda|cpu|xla): `spmd` is torch_xla's switch, `timeout_s` how
    long native ranks wait for each other."""
    device = resolve(device)
    if device not in SELECTORS:
        raise ValueError(f"unknown device {device!r}: one of auto, {', '.join(SELECTORS)}")
    try:
        module = importlib.import_module(f".{SELECTORS[device]}", __name__)
    except ImportError as e:
        missing = getattr(e, "name", None) or "its framework"
        raise RuntimeError(f"device={device} but {missing} is not installed "
                           f"(pip install 'tpu-trainer[{device}]')") from e
    backend: Backend = module.select(spmd) if device == "xla" else module.select(device, timeout_s)
    _SELECTED.append(backend)
    return backend


def write_failure_report(output_dir: Path) -> Path | None:
    """The backend's metrics report for a run that raised (None without one, or before a device was chosen)."""
    if not _SELECTED:
        return None
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
        return _SELECTED[-1].write_report(output_dir / "xla_metrics.txt")
    except OSError:
        return None


__all__ = ["Backend", "ShardedCheckpointing", "host_leader", "note_once", "resolve", "select", "write_failure_report"]
