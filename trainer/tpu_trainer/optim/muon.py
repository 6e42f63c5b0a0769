"""Muon: momentum whose update is orthogonalised by a Newton-Schulz iteration (Jordan et al., 2024).

For a hidden 2-D weight, the Nesterov momentum matrix M is replaced by an
approximation of U V^T from its SVD M = U S V^T (all singular values pushed
towards 1), computed with five iterations of the quintic
    X <- a X + (b A + c A^2) X,   A = X X^T,   (a, b, c) = (3.4445, -4.7750, 2.0315)
after scaling X to unit Frobenius norm (so every singular value starts <= 1).
These coefficients maximise the slope at 0 rather than converge exactly: the
result has singular values roughly in [0.7, 1.2], which works as well in
training and needs no more steps. The update is scaled by sqrt(max(1, rows/cols))
so tall matrices get a comparable per-element RMS.

Embeddings, the output head, norm gains and biases are not "hidden matrices"
(their rows are indexed by tokens or they are vectors), so they use AdamW, in
the same optimizer: groups carry `muon: True/False`. One optimizer keeps one
state_dict for checkpoints and one LambdaLR schedule for all groups.
"""

import math
from collections.abc import Callable
from typing import Any

import torch
from torch.distributed.tensor import DTensor, distribute_tensor
from torch.optim.optimizer import ParamsT

NS_COEFFS = (3.4445, -4.7750, 2.0315)


def newton_schulz(g: torch.Tensor, steps: int = 5, eps: float = 1e-7) -> torch.Tensor:
    """Approximately orthogonalise a matrix (the U V^T factor of its SVD), in fp32. A 3-D
    tensor is a stack of matrices (MoE experts [E, out, in]), each orthogonalised on its own."""
    a, b, c = NS_COEFFS
    x = g.float()
    transposed = x.shape[-2] > x.shape[-1]
    if transposed:  # iterate on the wide orientation: A = X X^T is then the smaller Gram matrix
        x = x.mT
    x = x / (x.norm(dim=(-2, -1), keepdim=True) + eps)
    for _ in range(steps):
        gram = x @ x.mT
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.mT if transposed else x


def orthogonalise(update: torch.Tensor, steps: int) -> torch.Tensor:
    """newton_schulz of a matrix that may be sharded (a DTensor under FSDP2 / tensor parallelism).

    The iteration needs the whole matrix (X X^T mixes every row), so a sharded one is gathered,
    orthogonalised (every rank computes the same result from the same input), and each rank keeps
    its own shard of it: the update is the single-device one, at the cost of one all-gather per
    matrix and a replicated Newton-Schulz."""
    if not isinstance(update, DTensor):
        return newton_schulz(update, steps)
    full = newton_schulz(update.full_tensor(), steps)
    return distribute_tensor(full, update.device_mesh, update.placements, src_data_rank=None)


class Muon(torch.optim.Optimizer):
    def __init__(self, param_groups: ParamsT, lr: float = 0.02, momentum: float = 0.95, ns_steps: int = 5,
                 betas: tuple[float, float] = (0.9, 0.95), eps: float = 1e-8, weight_decay: float = 0.0):
        defaults = {"lr": lr, "momentum": momentum, "ns_steps": ns_steps, "betas": betas, "eps": eps,
                    "weight_decay": weight_decay, "muon": True}
        super().__init__(param_groups, defaults)
        for group in self.param_groups:
            if group["muon"] and any(p.dim() not in (2, 3) for p in group["params"]):
                raise ValueError("muon groups take matrices (2-D, or 3-D stacks of them) only; put other "
                                 "parameters in muon=False groups")

    def init_state(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                if state:
                    continue
                if group["muon"]:
                    state["momentum_buffer"] = torch.zeros_like(p)
                else:
                    state["step"] = torch.tensor(0.0)
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        self.init_state()
        for group in self.param_groups:
            (self._muon_step if group["muon"] else self._adamw_step)(group)
        return loss

    def _muon_step(self, group: dict[str, Any]) -> None:
        lr, mom, wd = group["lr"], group["momentum"], group["weight_decay"]
        for p in group["params"]:
            if p.grad is None:
                continue
            buf = self.state[p]["momentum_buffer"]
            buf.mul_(mom).add_(p.grad)
            update = p.grad.add(buf, alpha=mom)  # Nesterov: look one momentum step ahead
            o = orthogonalise(update, group["ns_steps"]).to(p.dtype)
            scale = math.sqrt(max(1.0, p.shape[-2] / p.shape[-1]))
            if wd:
                p.mul_(1 - lr * wd)
            p.add_(o, alpha=-lr * scale)

    def _adamw_step(self, group: dict[str, Any]) -> None:
        lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            state["step"] += 1
            t = float(state["step"])  # a host tensor (as in torch's AdamW): no device sync
            state["exp_avg"].lerp_(p.grad, 1 - b1)
            state["exp_avg_sq"].mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
            denom = (state["exp_avg_sq"] / (1 - b2**t)).sqrt_().add_(eps)
            if wd:
                p.mul_(1 - lr * wd)
            p.addcdiv_(state["exp_avg"], denom, value=-lr / (1 - b1**t))
