"""Learning-rate schedules: a multiplier of the peak lr as a pure function of the step.

Pure functions of (step, config, max_steps) so a resumed run gets the same lr
from the restored step alone, and so hydra configs can name them. Every
schedule starts with the same linear warmup.
"""

import math
from collections.abc import Callable

import torch

from .config import SchedulerConfig


def _warmup(step: int, cfg: SchedulerConfig) -> float:
    # Starts at 1/warmup_steps rather than 0: a zero lr is a special scalar for
    # torch_xla (baked into the graph as a constant), so it would cost one extra
    # compilation for no training benefit.
    return (step + 1) / cfg.warmup_steps


def _progress(step: int, cfg: SchedulerConfig, max_steps: int) -> float:
    span = max(1, max_steps - cfg.warmup_steps)
    return min(1.0, (step - cfg.warmup_steps) / span)


def constant(step: int, cfg: SchedulerConfig, max_steps: int) -> float:
    return 1.0


def linear(step: int, cfg: SchedulerConfig, max_steps: int) -> float:
    return cfg.min_lr_ratio + (1.0 - cfg.min_lr_ratio) * (1.0 - _progress(step, cfg, max_steps))


def cosine(step: int, cfg: SchedulerConfig, max_steps: int) -> float:
    decay = 0.5 * (1.0 + math.cos(math.pi * _progress(step, cfg, max_steps)))
    return cfg.min_lr_ratio + (1.0 - cfg.min_lr_ratio) * decay


def wsd(step: int, cfg: SchedulerConfig, max_steps: int) -> float:
    """Warmup-stable-decay: hold the peak, then decay linearly to min_lr_ratio over the last
    decay_ratio of the run (a checkpoint taken before the decay can be branched into a longer run)."""
    decay_steps = max(1, round(cfg.decay_ratio * max_steps))
    decay_start = max(cfg.warmup_steps, max_steps - decay_steps)
    if step < decay_start:
        return 1.0
    frac = min(1.0, (step - decay_start) / max(1, max_steps - decay_start))
    return cfg.min_lr_ratio + (1.0 - cfg.min_lr_ratio) * (1.0 - frac)


SCHEDULES: dict[str, Callable[[int, SchedulerConfig, int], float]] = {
    "constant": constant,
    "linear": linear,
    "cosine": cosine,
    "wsd": wsd,
}


def lr_multiplier(step: int, cfg: SchedulerConfig, max_steps: int) -> float:
    """Multiplier of the peak lr for 0-based `step`."""
    if step < cfg.warmup_steps:
        return _warmup(step, cfg)
    return SCHEDULES[cfg.name](step, cfg, max_steps)


def build_scheduler(
    opt: torch.optim.Optimizer, cfg: SchedulerConfig, max_steps: int
) -> torch.optim.lr_scheduler.LambdaLR:
    # LambdaLR scales each group's own initial lr, so muon's groups (muon_lr) and
    # its AdamW groups (lr) follow the same shape from different peaks.
    return torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_multiplier(s, cfg, max_steps))
