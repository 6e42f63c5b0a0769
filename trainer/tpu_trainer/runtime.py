"""Device selection and the few places where XLA and plain PyTorch differ.

Everything XLA-specific (import, graph cut, memory query, metrics report,
compile counter, profiler) lives here so train.py reads the same on both paths.
torch_xla is imported lazily: the plain-CPU path must work where it is absent.
"""

import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import torch

from .metrics import host_rss_bytes


def worker_id() -> int:
    """This host's index in a multi-host TPU slice (set on TPU VMs and by the TPU Workbench emulator)."""
    for var in ("TPU_WORKER_ID", "CLOUD_TPU_TASK_ID"):
        value = os.environ.get(var, "").strip()
        if value.isdigit():
            return int(value)
    return 0


def xla_available() -> bool:
    try:
        import torch_xla  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass
class Runtime:
    device: torch.device
    is_xla: bool
    kind: str  # device kind for the peak-FLOPs table, e.g. "TPU v4", "CPU"
    label: str  # short name for logs and metrics, e.g. "xla:TPU v4", "cpu"

    @property
    def spmd(self) -> bool:
        """True when torch_xla runs in SPMD mode (xr.use_spmd()): checkpoints then go
        through torch_xla's sharding-aware DCP planners."""
        if not self.is_xla:
            return False
        import torch_xla.runtime as xr

        return bool(xr.is_spmd())

    def sync(self) -> None:
        """End of step. On XLA this cuts the lazily traced graph and dispatches it
        asynchronously (no host wait); on eager CPU there is nothing to do."""
        if self.is_xla:
            import torch_xla

            torch_xla.sync()

    def memory(self) -> tuple[int, str]:
        """(bytes, kind): device bytes in use where the runtime reports them, else host RSS."""
        if self.is_xla:
            import torch_xla.core.xla_model as xm

            try:
                info = xm.get_memory_info(self.device)
                return int(info["bytes_used"]), "device"
            except (RuntimeError, KeyError, TypeError, ValueError):
                pass  # XLA:CPU answers UNIMPLEMENTED; fall back to the process's RSS
        return host_rss_bytes(), "host_rss"

    def compile_count(self) -> Optional[int]:
        """Graph compilations so far (host-side counter, no device sync)."""
        if not self.is_xla:
            return None
        import torch_xla.debug.metrics as met

        data = met.metric_data("CompileTime")
        return int(data[0]) if data else 0

    def write_report(self, path: Path) -> Optional[Path]:
        """torch_xla's metrics report (compile/execute times, transfers, fallbacks to CPU ops)."""
        if not self.is_xla:
            return None
        import torch_xla.debug.metrics as met

        path.write_text(met.metrics_report(), encoding="utf-8")
        return path


def select(device: str) -> Runtime:
    """Resolve `device` (auto|xla|cpu) to a Runtime."""
    use_xla = device == "xla" or (device == "auto" and bool(os.environ.get("PJRT_DEVICE")) and xla_available())
    if not use_xla:
        return Runtime(torch.device("cpu"), False, "CPU", "cpu")
    if not xla_available():
        raise RuntimeError("device=xla but torch_xla is not installed (pip install 'tpu-trainer[xla]')")
    if not os.environ.get("PJRT_DEVICE"):
        # torch_xla would guess (and print a warning); say what we do instead.
        print("PJRT_DEVICE is not set; torch_xla will pick a device (set PJRT_DEVICE=TPU or CPU)", flush=True)
    import torch_xla
    import torch_xla.core.xla_model as xm

    dev = torch_xla.device()
    hw = xm.xla_device_hw(dev)
    try:
        kind = xm.xla_device_kind(dev) or hw
    except RuntimeError:
        kind = hw
    if hw == "TPU" and os.environ.get("TPU_ACCELERATOR_TYPE"):
        kind = os.environ["TPU_ACCELERATOR_TYPE"]
    label = f"xla:{kind if hw != 'CPU' else 'CPU'}"
    return Runtime(dev, True, kind, label)


class Profiler:
    """Captures steps [profile_step, profile_step + profile_steps) of a run.

    XLA: torch_xla's in-process profiler session writes TensorBoard's layout,
    <dir>/plugins/profile/<timestamp>/<host>.xplane.pb, which TPU Workbench reads.
    Plain torch: torch.profiler's Chrome trace at <dir>/plugins/profile/<ts>/<host>.pt.trace.json.
    """

    def __init__(self, rt: Runtime, profile_dir: Path, start_step: int, num_steps: int):
        self.rt, self.dir = rt, profile_dir
        self.start, self.stop_after = start_step, start_step + num_steps - 1
        self._torch_prof: Any = None
        self.active = False
        self.written: Optional[Path] = None

    def before_step(self, step: int) -> None:
        if self.start < 1 or step != self.start:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        if self.rt.is_xla:
            import torch_xla.debug.profiler as xp

            xp.start_trace(str(self.dir))
        else:
            self._torch_prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
            self._torch_prof.__enter__()
        self.active = True

    def after_step(self, step: int) -> None:
        if self.active and step >= self.stop_after:
            self.finish()

    def finish(self) -> None:
        """Stop and write the trace (also called at the end of a run cut short)."""
        if not self.active:
            return
        self.active = False
        if self.rt.is_xla:
            import torch_xla.debug.profiler as xp

            self.rt.sync()
            xp.stop_trace()
            found = sorted(self.dir.glob("plugins/profile/*/*.xplane.pb"))
            self.written = found[-1] if found else None
        else:
            self._torch_prof.__exit__(None, None, None)
            import time

            out = self.dir / "plugins" / "profile" / time.strftime("%Y_%m_%d_%H_%M_%S")
            out.mkdir(parents=True, exist_ok=True)
            self.written = out / f"{socket.gethostname()}.pt.trace.json"
            self._torch_prof.export_chrome_trace(str(self.written))
