"""Backends: the frameworks the trainer runs on, behind one interface (base.Backend).

    eager.py  plain PyTorch on CPU                       device=cpu
    xla.py    torch_xla: Cloud TPU, or XLA on CPU        device=xla (auto: when PJRT_DEVICE is set)

xla.py is the only module of the package that imports torch_xla (a test checks).
A new framework, such as the native PyTorch TPU backend that is to replace torch_xla,
is one new module here with a `select(spmd) -> Backend` function, named in
SELECTORS below under the `device` value that picks it (and in config.py's
`device` enum, which the JSON Schema is generated from).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path

from .base import Backend, ShardedCheckpointing, note_once
from .eager import EagerBackend

# device value -> the module (in this package) whose select(spmd) builds that backend.
SELECTORS: dict[str, str] = {"xla": "xla"}

_SELECTED: list[Backend] = []  # this process's backend, for the failure report


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken install counts as none
        return False


def select(device: str, spmd: str = "auto") -> Backend:
    """Resolve `device` (auto|cpu|xla) to a backend. auto: torch_xla when it is installed and
    PJRT_DEVICE is set, else plain PyTorch on CPU."""
    if device == "auto":
        device = "xla" if os.environ.get("PJRT_DEVICE") and _installed("torch_xla") else "cpu"
    if device == "cpu":
        backend: Backend = EagerBackend()
    elif device in SELECTORS:
        try:
            module = importlib.import_module(f".{SELECTORS[device]}", __name__)
        except ImportError as e:
            missing = getattr(e, "name", None) or "its framework"
            raise RuntimeError(f"device={device} but {missing} is not installed "
                               f"(pip install 'tpu-trainer[{device}]')") from e
        backend = module.select(spmd)
    else:
        raise ValueError(f"unknown device {device!r}: one of auto, cpu, {', '.join(SELECTORS)}")
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


__all__ = ["Backend", "EagerBackend", "ShardedCheckpointing", "note_once", "select", "write_failure_report"]
