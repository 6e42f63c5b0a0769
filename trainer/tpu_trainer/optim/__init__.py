"""Optimizers: AdamW and SGD from torch; Adafactor, Lion and Muon in this package.

Chosen by `optimizer.name` (or the `optimizer=` config group). Every optimizer
creates its state before step 1 (init_state) so XLA traces one graph for the run.
"""

from collections.abc import Sequence

import torch
from torch import nn
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.experimental import implicit_replication

from ..config import OptimizerConfig
from ..schedules import build_scheduler, lr_multiplier
from .adafactor import Adafactor
from .lion import Lion
from .muon import Muon, newton_schulz

__all__ = ["Adafactor", "Lion", "Muon", "build_optimizer", "build_scheduler", "clip_gradients", "init_state",
           "lr_multiplier", "newton_schulz", "param_groups"]


def param_groups(model: nn.Module, cfg: OptimizerConfig) -> list[dict]:
    """Weight decay only on matrices (linear/embedding weights), not on norm gains or
    biases: decaying a gain toward 0 fights the normalisation it scales. For muon the
    hidden matrices form their own group; embeddings and the output head stay on AdamW,
    since their rows are per-token vectors rather than a linear map to orthogonalise."""
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    vectors = [p for _, p in named if p.dim() < 2]
    if cfg.name == "muon":
        hidden = [p for n, p in named if p.dim() >= 2 and not n.startswith(_NOT_HIDDEN)]
        other = [p for n, p in named if p.dim() >= 2 and n.startswith(_NOT_HIDDEN)]
        return [
            {"params": hidden, "weight_decay": cfg.weight_decay, "muon": True, "lr": cfg.muon_lr},
            {"params": other, "weight_decay": cfg.weight_decay, "muon": False},
            {"params": vectors, "weight_decay": 0.0, "muon": False},
        ]
    matrices = [p for _, p in named if p.dim() >= 2]
    return [{"params": matrices, "weight_decay": cfg.weight_decay}, {"params": vectors, "weight_decay": 0.0}]


# Parameter-name prefixes that are not hidden matrices (Llama naming).
_NOT_HIDDEN = ("embed_tokens.", "lm_head.")


def build_optimizer(model: nn.Module, cfg: OptimizerConfig) -> torch.optim.Optimizer:
    groups = param_groups(model, cfg)
    betas = (cfg.beta1, cfg.beta2)
    if cfg.name == "sgd":
        return torch.optim.SGD(groups, lr=cfg.lr, momentum=cfg.beta1)
    if cfg.name == "lion":
        return Lion(groups, lr=cfg.lr, betas=betas)
    if cfg.name == "adafactor":
        return Adafactor(groups, lr=cfg.lr, beta2_decay=cfg.adafactor_beta2_decay)
    if cfg.name == "muon":
        return Muon(groups, lr=cfg.lr, momentum=cfg.muon_momentum, ns_steps=cfg.ns_steps, betas=betas, eps=cfg.eps)
    # foreach=False on XLA: the per-tensor loop traces into the same fused graph anyway, and
    # stays within the ops torch_xla lowers. Elsewhere torch's default (the multi-tensor path on
    # CPU too, which the trainer bench showed ~1.5x faster for the MoE's many expert tensors).
    on_xla = any(p.device.type == "xla" for p in model.parameters())
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=betas, eps=cfg.eps, foreach=False if on_xla else None)


def clip_gradients(params: Sequence[torch.Tensor], cfg: OptimizerConfig) -> torch.Tensor | None:
    """Clip by value, then by global norm; return the norm before norm clipping (a device tensor, no sync)."""
    if cfg.grad_clip_value > 0:
        torch.nn.utils.clip_grad_value_(params, cfg.grad_clip_value)
    if cfg.grad_clip <= 0:
        return None
    if not any(isinstance(p, DTensor) for p in params):
        return torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
    return _clip_sharded(params, cfg.grad_clip)


def _clip_sharded(params: Sequence[torch.Tensor], max_norm: float) -> torch.Tensor:
    """Global-norm clipping of gradients that are DTensors on different meshes (FSDP2 with tensor
    parallelism: 2-D sharded weights beside 1-D sharded norms), which torch's clip_grad_norm_ cannot
    stack. Each gradient's norm is reduced over its own mesh; nothing is read on the host."""
    grads = [p.grad for p in params if p.grad is not None]
    squares = []
    for g in grads:
        n = torch.linalg.vector_norm(g, dtype=torch.float32)
        squares.append((n.full_tensor() if isinstance(n, DTensor) else n) ** 2)
    total = torch.stack(squares).sum().sqrt()
    coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
    with implicit_replication():
        for g in grads:
            g.mul_(coef.to(g.dtype))
    return total


def init_state(opt: torch.optim.Optimizer) -> None:
    """Create the optimizer state up front, as loading a fresh state dict would.

    torch's optimizers create their state inside the first step(), so on XLA
    step 1 traces a different graph from every later step and the run pays a
    second full compilation (minutes for a large model on TPU). With the state
    already present, step 1 is the steady-state graph. The values match what
    step() would create, so the numerics are unchanged.
    """
    if hasattr(opt, "init_state"):  # this package's optimizers know their own state
        opt.init_state()
        return
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
