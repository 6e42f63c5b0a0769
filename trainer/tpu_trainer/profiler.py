"""Profile capture by step: the backend writes the trace, this decides when."""

from __future__ import annotations

import time
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from .backends import Backend


class Profiler:
    """Captures steps [profile_step, profile_step + profile_steps) of a run, or, with
    duration_ms > 0, from profile_step until that much wall time has passed (checked at
    step boundaries, so the capture ends on a whole step).

    The trace lands in TensorBoard's layout under profile_dir, which TPU Workbench reads:
    <dir>/plugins/profile/<timestamp>/<host>.xplane.pb on XLA, <host>.pt.trace.json
    (torch.profiler's Chrome trace) on plain PyTorch.
    """

    def __init__(self, backend: Backend, profile_dir: Path, start_step: int, num_steps: int,
                 duration_ms: int = 0):
        self.backend, self.dir = backend, profile_dir
        self.start, self.stop_after = start_step, start_step + num_steps - 1
        self.duration_s = duration_ms / 1000
        self._t0 = 0.0
        self.active = False
        self.written: Path | None = None

    def before_step(self, step: int) -> None:
        if self.start < 1 or step != self.start:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        self.backend.start_trace(self.dir)
        self.active = True
        self._t0 = time.perf_counter()

    def step_scope(self, step: int) -> AbstractContextManager[object]:
        """Around one step (its work and its sync) while capturing: the backend's step marker,
        so the capture's steps are the trainer's own."""
        return self.backend.step_annotation(step) if self.active else nullcontext()

    def after_step(self, step: int) -> None:
        if not self.active:
            return
        done = time.perf_counter() - self._t0 >= self.duration_s if self.duration_s > 0 else step >= self.stop_after
        if done:
            self.finish()
        else:
            self.backend.trace_step()

    def finish(self) -> None:
        """Stop and write the trace (also called at the end of a run cut short)."""
        if not self.active:
            return
        self.active = False
        self.written = self.backend.stop_trace(self.dir)
