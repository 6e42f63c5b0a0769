"""StepMeter: the fields of a logged step that exist only once the step has run (step time,
throughput, MFU, memory, compiles), its stdout line, and the divergence check.

Its methods run where the step's values are on the host: at once on plain PyTorch, on
torch_xla's closure thread on XLA (StepLogger hands them the record there), so the
state here is shared between that thread and the training loop.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from .backends import Backend


def _fmt_bytes(n: int) -> str:
    return f"{n / 2**20:.1f}MiB"


class StepMeter:
    def __init__(self, backend: Backend, worker: int, tokens_per_step: int, flops_per_token: float,
                 peak_flops: float | None, devices: int, start_step: int, log: Callable[[str], None]):
        self.backend, self.worker, self.log = backend, worker, log
        self.tokens_per_step, self.flops_per_token = tokens_per_step, flops_per_token
        self.peak, self.devices = peak_flops, devices  # MFU is against the peak of every device the step ran on
        self.last_loss = math.nan
        self.diverged = False
        self.t_last = time.perf_counter()
        self.last_logged = start_step
        # Steady-state throughput for the summary starts after the first logged step,
        # which carries XLA compilation and warm-up.
        self.steady_t0: float | None = None
        self.steady_step0 = 0

    def prepare(self, rec: dict[str, Any]) -> dict[str, Any]:
        """Add the timing, throughput, MFU and memory fields to a logged step's record."""
        now = time.perf_counter()
        step_time = (now - self.t_last) / max(1, rec["step"] - self.last_logged)
        self.t_last, self.last_logged = now, rec["step"]
        if self.steady_t0 is None:
            self.steady_t0, self.steady_step0 = now, rec["step"]
        tps = self.tokens_per_step / step_time
        mem, mem_kind = self.backend.memory()
        mfu = tps * self.flops_per_token / (self.peak * self.devices) if self.peak else None
        rec.update(step_time_s=step_time, tokens_per_s=tps, mfu=mfu, mem_bytes=mem, mem_kind=mem_kind)
        rec.update(tokens=rec["step"] * self.tokens_per_step, worker=self.worker, device=self.backend.label,
                   compiles=self.backend.compile_count(), time=time.time())
        return rec

    def after(self, rec: dict[str, Any]) -> None:
        """The step's stdout line; a non-finite loss marks the run diverged."""
        self.last_loss = rec["loss"]
        gnorm, mfu = rec["grad_norm"], rec["mfu"]
        self.log(
            f"step {rec['step']} loss {rec['loss']:.4f} lr {rec['lr']:.3e} "
            f"grad_norm {gnorm if gnorm is None else f'{gnorm:.3f}'} step_time_s {rec['step_time_s']:.4f} "
            f"tokens_per_s {rec['tokens_per_s']:.0f} mfu {'-' if mfu is None else f'{mfu:.3f}'} "
            f"mem {_fmt_bytes(rec['mem_bytes'])}"
        )
        if not math.isfinite(rec["loss"]):
            self.diverged = True

    def steady_tokens_per_s(self) -> float | None:
        """Tokens/s from the first logged step to the last (None with fewer than two logged steps)."""
        if self.steady_t0 is None or self.last_logged <= self.steady_step0:
            return None
        return (self.last_logged - self.steady_step0) * self.tokens_per_step / (self.t_last - self.steady_t0)
