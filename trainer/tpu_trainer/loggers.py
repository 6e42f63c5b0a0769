"""Metric writers behind one interface: metrics.jsonl (always), TensorBoard and W&B (by config).

Host syncs: on XLA the loss and gradient norm are device tensors whose values
exist only after the device has run the step. Reading them with .item() in the
loop would block tracing of step N+1 on execution of step N. Instead the trainer
hands the record to `StepLogger.log`, which gives it to the backend as a step
closure (on XLA torch_xla's `add_step_closure(..., run_async=True)`): it runs
after the step's graph has executed, on another thread, where .item() is free.
On plain torch the record is written at once.
"""

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import torch

from .backends import Backend
from .config import LoggingConfig
from .metrics import MetricsWriter


def _plain(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.item()  # a device->host copy; on XLA this runs inside a step closure
    return value


class TensorBoardWriter:
    def __init__(self, log_dir: Path):
        from torch.utils.tensorboard import SummaryWriter  # needs the tensorboard package

        self._w = SummaryWriter(str(log_dir))

    def write(self, record: dict[str, Any]) -> None:
        for key, value in record.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and key != "step":
                self._w.add_scalar(key, value, record["step"])
        self._w.flush()

    def close(self) -> None:
        self._w.close()


# logging.wandb_mode's values (config.py's enum) as the literal types wandb.init declares.
_WANDB_MODES: dict[str, Literal["online", "offline", "disabled"]] = {
    "online": "online", "offline": "offline", "disabled": "disabled"}


class WandbWriter:
    def __init__(self, cfg: LoggingConfig, run_dir: Path, config: dict[str, Any]):
        import wandb

        # offline writes under run_dir/wandb and needs no network or API key;
        # `wandb sync` uploads it later. The key (if any) comes from WANDB_API_KEY.
        self._run = wandb.init(project=cfg.wandb_project, mode=_WANDB_MODES[cfg.wandb_mode], dir=str(run_dir),
                               config=config, resume="allow")

    def write(self, record: dict[str, Any]) -> None:
        self._run.log({k: v for k, v in record.items() if k != "step"}, step=record["step"])

    def close(self) -> None:
        self._run.finish()


class StepLogger:
    def __init__(self, out_dir: Path, cfg: LoggingConfig, backend: Backend, run_config: dict[str, Any],
                 keep_until_step: int = 0,
                 prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
                 after: Callable[[dict[str, Any]], None] | None = None, enabled: bool = True):
        # prepare: fills the fields known only once the step has run (timing, memory);
        # after: the stdout line and divergence check. Both run where the values are on the host.
        # enabled=False: a rank that is not its host's leader writes nothing (the leader's loss is the ranks' mean).
        self.backend, self.enabled = backend, enabled
        self.prepare, self.after = prepare, after
        self.writers: list[Any] = []
        self.disabled: list[str] = []
        if not enabled:
            return
        self.writers.append(MetricsWriter(out_dir / "metrics.jsonl", keep_until_step=keep_until_step))
        if cfg.tensorboard:
            self._optional("tensorboard", lambda: TensorBoardWriter(out_dir / "tb"))
        if cfg.wandb:
            self._optional("wandb", lambda: WandbWriter(cfg, out_dir, run_config))

    def _optional(self, name: str, make: Callable[[], Any]) -> None:
        try:
            self.writers.append(make())
        except ImportError:
            # Optional writers must never stop a run on a VM that lacks the package.
            msg = f"logging.{name}=true but the {name} package is not installed (pip install {name}); not logging to it"
            print(msg, file=sys.stderr, flush=True)
            self.disabled.append(name)

    def log(self, record: dict[str, Any]) -> None:
        """Write `record`; tensor values are read on the host only when that costs no sync."""
        if self.enabled:
            self.backend.add_step_closure(self._emit, (record,))

    def _emit(self, record: dict[str, Any]) -> None:
        rec = {k: _plain(v) for k, v in record.items()}
        if self.prepare:
            rec = self.prepare(rec)
        for w in self.writers:
            w.write(rec)
        if self.after:
            self.after(rec)

    def flush(self) -> None:
        """Wait until every queued closure has written its record (end of run, before a checkpoint)."""
        self.backend.flush_step_closures()

    def close(self) -> None:
        self.flush()
        for w in self.writers:
            w.close()
