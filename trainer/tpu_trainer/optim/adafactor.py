"""Adafactor (Shazeer & Stern, 2018) with a factored second moment, written without host syncs.

For a 2-D (or higher) gradient the second moment is kept as row and column
means of g^2 (O(n + m) memory instead of O(n m)), and reconstructed as
    V = R C / mean(R)
For vectors it is a full running mean of g^2. Per step t:
    beta2_t = 1 - t^decay                    (decay = -0.8 by default)
    rho_t   = min(lr, 1 / sqrt(t))           (relative step size, capped by lr)
    alpha_t = max(eps2, RMS(p)) * rho_t      (step scales with the parameter's size)
    U       = g / sqrt(max(V, eps1^2))
    p      -= alpha_t * U / max(1, RMS(U) / d)   (update clipping)
the same algorithm as torch.optim.Adafactor, but torch's reads RMS(p) and RMS(U)
on the host with .item(), which on XLA blocks the host on the device every step
for every parameter; here they stay tensors, so a step is one traced graph.
"""

from collections.abc import Callable

import torch
from torch.optim.optimizer import ParamsT


def _rms(x: torch.Tensor) -> torch.Tensor:
    return x.norm() / (x.numel() ** 0.5)


class Adafactor(torch.optim.Optimizer):
    def __init__(self, params: ParamsT, lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0, weight_decay: float = 0.0):
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d, "weight_decay": weight_decay}
        super().__init__(params, defaults)

    def init_state(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                if state:
                    continue
                state["step"] = torch.tensor(0.0)  # host scalar, like torch's optimizers
                if p.dim() >= 2:
                    state["row_var"] = p.new_zeros((*p.shape[:-1], 1))
                    state["col_var"] = p.new_zeros((*p.shape[:-2], 1, p.shape[-1]))
                else:
                    state["variance"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        self.init_state()
        for group in self.param_groups:
            lr, decay, (eps1, eps2), d, wd = (group[k] for k in ("lr", "beta2_decay", "eps", "d", "weight_decay"))
            for p in group["params"]:
                if p.grad is None:
                    continue
                g, state = p.grad, self.state[p]
                e1 = torch.finfo(p.dtype).eps if eps1 is None else eps1
                state["step"] += 1
                t = float(state["step"])
                one_minus_beta2 = t**decay
                rho = min(lr, t**-0.5)
                alpha = _rms(p).clamp(min=eps2) * rho  # before weight decay, as torch does
                if wd:
                    p.mul_(1 - lr * wd)
                g2 = g * g
                if p.dim() >= 2:
                    state["row_var"].lerp_(g2.mean(dim=-1, keepdim=True), one_minus_beta2)
                    state["col_var"].lerp_(g2.mean(dim=-2, keepdim=True), one_minus_beta2)
                    var = state["row_var"] @ state["col_var"]
                    var = var / state["row_var"].mean(dim=-2, keepdim=True).clamp(min=e1)
                else:
                    state["variance"].lerp_(g2, one_minus_beta2)
                    var = state["variance"]
                update = var.clamp(min=e1 * e1).rsqrt() * g
                denom = (_rms(update) / d).clamp(min=1.0)
                p.sub_(update * (alpha / denom))
        return loss
