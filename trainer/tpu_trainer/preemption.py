"""Noticing preemption: SIGTERM, or the backend's preemption notice (on Cloud TPU,
torch_xla's preemption sync point).

A spot/preemptible TPU VM gets SIGTERM (and, on TPU, a maintenance event that
torch_xla's preemption sync manager turns into a "sync point reached" on every
host at the same step: Backend.preemption_notice) shortly before it is stopped. The handler only sets a
flag: the training loop checks it at the next step boundary, where the state is
consistent, saves a checkpoint and exits with PREEMPTED_EXIT_CODE.
"""

import signal
from collections.abc import Callable
from typing import Any

# sysexits.h EX_TEMPFAIL, "temporary failure; the user is invited to retry": the
# run did not fail, it was stopped early and can resume (TPU Workbench reports it
# as "preempted"). Distinct from 0 (done), 1/2 (error/config), 130 (SIGINT).
PREEMPTED_EXIT_CODE = 75


class PreemptionWatcher:
    def __init__(self, notice: Callable[[int], bool] | None = None):
        # notice(step): the platform's own announcement (Backend.preemption_notice), if it has one.
        self.signal: str | None = None
        self._previous: Any = None
        self._notice = notice

    def __enter__(self) -> "PreemptionWatcher":
        try:
            self._previous = signal.signal(signal.SIGTERM, self._on_sigterm)
        except ValueError:  # not the main thread (train() embedded in another program): no handler
            self._previous = None
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        self.signal = "SIGTERM"

    def preempted(self, step: int) -> bool:
        """True once a preemption was noticed (call at each step boundary; cheap)."""
        if self.signal is None and self._notice is not None and self._notice(step):
            self.signal = "xla-preemption-notice"
        return self.signal is not None
