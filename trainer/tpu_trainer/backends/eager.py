"""Plain (eager) PyTorch on the CPU: the backend of `device=cpu`, and of `device=auto` without torch_xla."""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..config import RematConfig
from ..model.llama import LayerRunner, run_in_order
from .base import Backend, note_once, torch_checkpointed_layers


@dataclass
class EagerBackend(Backend):
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    kind: str = "CPU"
    label: str = "cpu"
    _profile: Any = field(default=None, init=False, repr=False)

    @property
    def is_tpu(self) -> bool:
        return False

    def layer_runner(self, remat: RematConfig) -> LayerRunner:
        if remat.offload_tensors:
            note_once(f"model.remat.offload_tensors={list(remat.offload_tensors)}: host offload needs a TPU; "
                      f"activations stay in {self.device.type} memory")
        if remat.scan_layers:
            note_once("model.remat.scan_layers: scan is an XLA feature; plain PyTorch runs the layers in a loop")
        return torch_checkpointed_layers() if remat.activation_checkpoint else run_in_order

    def start_trace(self, profile_dir: Path) -> None:
        self._profile = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
        self._profile.__enter__()

    def stop_trace(self, profile_dir: Path) -> Path | None:
        """torch.profiler's Chrome trace at <dir>/plugins/profile/<ts>/<host>.pt.trace.json."""
        self._profile.__exit__(None, None, None)
        out = profile_dir / "plugins" / "profile" / time.strftime("%Y_%m_%d_%H_%M_%S")
        out.mkdir(parents=True, exist_ok=True)
        written = out / f"{socket.gethostname()}.pt.trace.json"
        self._profile.export_chrome_trace(str(written))
        self._profile = None
        return written
