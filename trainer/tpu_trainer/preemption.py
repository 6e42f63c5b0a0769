"""Noticing preemption: SIGTERM, or torch_xla's preemption sync point on Cloud TPU.

A spot/preemptible TPU VM gets SIGTERM (and, on TPU, a maintenance event that
torch_xla's preemption sync manager turns into a "sync point reached" on every
host at the same step) shortly before it is stopped. The handler only sets a
flag: the training loop checks it at the next step boundary, where the state is
consistent, saves a checkpoint and exits with PREEMPTED_EXIT_CODE.
"""

import os
import signal
from typing import Any, Optional

# sysexits.h EX_TEMPFAIL, "temporary failure; the user is invited to retry": the
# run did not fail, it was stopped early and can resume (TPU Workbench reports it
# as "preempted"). Distinct from 0 (done), 1/2 (error/config), 130 (SIGINT).
PREEMPTED_EXIT_CODE = 75


class PreemptionWatcher:
    def __init__(self, use_xla_sync_point: bool = False):
        self.signal: Optional[str] = None
        self._previous: Any = None
        self._xla = False
        if use_xla_sync_point and os.environ.get("PJRT_DEVICE", "").upper() == "TPU":
            try:  # only Cloud TPU runtimes have the manager; anywhere else this is a no-op
                import torch_xla

                torch_xla._XLAC._activate_preemption_sync_manager()
                self._xla = True
            except Exception:  # noqa: BLE001 - an older runtime without it still has SIGTERM
                self._xla = False

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
        if self.signal is None and self._xla:
            import torch_xla

            if torch_xla._XLAC._sync_point_reached(step):
                self.signal = "xla-preemption-notice"
        return self.signal is not None
