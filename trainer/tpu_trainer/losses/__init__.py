"""Training losses, pluggable by name (`loss.name=` or the `loss=` config group).

Every loss takes the final hidden states, the output-projection weight and the
targets rather than logits, so that cut cross-entropy can avoid building the
logits at all while the others build them exactly as the model's lm_head does.
Targets equal to `loss.ignore_index` are left out of the mean.
"""

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch.distributed.tensor import DTensor

from ..config import LossConfig
from ..model.llama import LossFn
from .cut_cross_entropy import cut_cross_entropy, naive_linear_cross_entropy


def _logits(hidden: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    # fp32 logits: the softmax of a large bf16 vocabulary loses too many bits. A weight split over
    # tensor-parallel ranks (a DTensor) is gathered; its gradient goes back to each rank's shard.
    if isinstance(weight, DTensor):
        weight = weight.full_tensor()
    return F.linear(hidden, weight).float().reshape(-1, weight.shape[0])


def _z_term(logits: torch.Tensor, t: torch.Tensor, cfg: LossConfig) -> torch.Tensor:
    valid = t != cfg.ignore_index
    lse = torch.logsumexp(logits, dim=-1)
    return cfg.z_loss * torch.where(valid, lse.square(), torch.zeros_like(lse)).sum() / valid.sum().clamp(min=1)


def cross_entropy(hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, cfg: LossConfig) -> torch.Tensor:
    """Softmax cross-entropy; label smoothing and z-loss when their coefficients are > 0."""
    logits, t = _logits(hidden, weight), targets.reshape(-1)
    loss = F.cross_entropy(logits, t, ignore_index=cfg.ignore_index, label_smoothing=cfg.label_smoothing)
    if cfg.z_loss > 0:
        loss = loss + _z_term(logits, t, cfg)
    return loss


def focal(hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, cfg: LossConfig) -> torch.Tensor:
    """Focal loss, mean over tokens of -(1 - p_t)^gamma log p_t: down-weights tokens already predicted well."""
    logits, t = _logits(hidden, weight), targets.reshape(-1)
    valid = t != cfg.ignore_index
    logp = torch.log_softmax(logits, dim=-1).gather(1, torch.where(valid, t, 0)[:, None]).squeeze(1)
    loss = -((1 - logp.exp()) ** cfg.focal_gamma) * logp
    loss = torch.where(valid, loss, torch.zeros_like(loss)).sum() / valid.sum().clamp(min=1)
    if cfg.z_loss > 0:
        loss = loss + _z_term(logits, t, cfg)
    return loss


def cce(hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, cfg: LossConfig) -> torch.Tensor:
    return cut_cross_entropy(
        hidden, weight, targets, ignore_index=cfg.ignore_index, label_smoothing=cfg.label_smoothing,
        z_loss=cfg.z_loss, chunk_elems=cfg.chunk_elems,
    )


# label_smoothing and z_loss are cross-entropy with that term switched on; they
# exist as names so a recipe reads `loss=z_loss` (the config group presets set
# the coefficient) and so validate() can insist the coefficient is non-zero.
LOSSES: dict[str, Callable[..., torch.Tensor]] = {
    "cross_entropy": cross_entropy,
    "label_smoothing": cross_entropy,
    "z_loss": cross_entropy,
    "focal": focal,
    "cut_cross_entropy": cce,
}


def build_loss(cfg: LossConfig) -> LossFn:
    fn = LOSSES[cfg.name]
    return lambda hidden, weight, targets: fn(hidden, weight, targets, cfg)


__all__ = ["LOSSES", "LossFn", "build_loss", "cut_cross_entropy", "naive_linear_cross_entropy"]
