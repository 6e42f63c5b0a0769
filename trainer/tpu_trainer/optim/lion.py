"""Lion (evolved sign momentum; Chen et al., 2023, "Symbolic Discovery of Optimization Algorithms").

    c = beta1 * m + (1 - beta1) * g        # the update direction interpolates
    p = p * (1 - lr * wd) - lr * sign(c)   # every coordinate moves by exactly lr
    m = beta2 * m + (1 - beta2) * g        # the tracked momentum uses beta2

Only one state tensor per parameter (vs two for AdamW). Because sign() makes the
update's scale lr regardless of the gradient, Lion wants a 3-10x smaller lr than AdamW.
"""

from collections.abc import Callable

import torch
from torch.optim.optimizer import ParamsT


class Lion(torch.optim.Optimizer):
    def __init__(self, params: ParamsT, lr: float = 1e-4, betas: tuple[float, float] = (0.9, 0.99),
                 weight_decay: float = 0.0):
        super().__init__(params, {"lr": lr, "betas": betas, "weight_decay": weight_decay})

    def init_state(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if not self.state[p]:
                    self.state[p]["exp_avg"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        self.init_state()
        for group in self.param_groups:
            lr, (b1, b2), wd = group["lr"], group["betas"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                m = self.state[p]["exp_avg"]
                update = (m * b1).add_(p.grad, alpha=1 - b1).sign_()
                if wd:
                    p.mul_(1 - lr * wd)
                p.add_(update, alpha=-lr)
                m.mul_(b2).add_(p.grad, alpha=1 - b2)
        return loss
