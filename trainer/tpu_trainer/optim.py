"""Optimizer and learning-rate schedule builders."""

import math

import torch
from torch import nn

from .config import OptimizerConfig, SchedulerConfig


def build_optimizer(model: nn.Module, cfg: OptimizerConfig) -> torch.optim.Optimizer:
    # Weight decay only on matrices (linear/embedding weights), not on norm gains:
    # decaying a gain toward 0 fights the normalisation it scales.
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    groups = [
        {"params": decay, "weight_decay": cfg.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    if cfg.name == "sgd":
        return torch.optim.SGD(groups, lr=cfg.lr, momentum=cfg.beta1)
    # foreach=False: the multi-tensor kernels are a CUDA speed path; on XLA the
    # per-tensor loop traces into the same fused graph anyway.
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps, foreach=False)


def init_state(opt: torch.optim.Optimizer) -> None:
    """Create the optimizer state up front, as loading a fresh state dict would.

    torch's optimizers create their state inside the first step(), so on XLA
    step 1 traces a different graph from every later step and the run pays a
    second full compilation (minutes for a large model on TPU). With the state
    already present, step 1 is the steady-state graph. The values match what
    step() would create, so the numerics are unchanged.
    """
    for group in opt.param_groups:
        for p in group["params"]:
            state = opt.state[p]
            if state:
                continue
            if isinstance(opt, torch.optim.AdamW):
                # 'step' stays a host tensor, as AdamW keeps it when not capturable.
                state["step"] = torch.tensor(0.0, dtype=torch.float32)
                state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            elif isinstance(opt, torch.optim.SGD) and group["momentum"]:
                # SGD seeds the buffer with the first gradient; 0 * momentum + grad is the same value.
                state["momentum_buffer"] = torch.zeros_like(p, memory_format=torch.preserve_format)


def lr_multiplier(step: int, cfg: SchedulerConfig, max_steps: int) -> float:
    """Multiplier of the peak lr for 0-based `step`.

    Warmup starts at 1/warmup_steps rather than 0: a zero lr is a special scalar
    for torch_xla (baked into the graph as a constant), so it would cost one extra
    compilation for no training benefit.
    """
    if step < cfg.warmup_steps:
        return (step + 1) / cfg.warmup_steps
    if cfg.name == "constant":
        return 1.0
    span = max(1, max_steps - cfg.warmup_steps)
    progress = min(1.0, (step - cfg.warmup_steps) / span)
    if cfg.name == "linear":
        decay = 1.0 - progress
    else:
        decay = 0.5 * (1.0 + math.cos(math.pi * progress))
    return cfg.min_lr_ratio + (1.0 - cfg.min_lr_ratio) * decay


def build_scheduler(
    opt: torch.optim.Optimizer, cfg: SchedulerConfig, max_steps: int
) -> torch.optim.lr_scheduler.LambdaLR:
    return torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_multiplier(s, cfg, max_steps))
