"""Apply a recipe's parallelism and kernels to a built model, from outside (as torchtitan's
parallelize functions do): the model computes, the backend provides the means, and
this module connects the two by `model.sharding`, `model.attention_kernel` and `model.remat`.
"""

from __future__ import annotations

from torch import nn

from . import sharding as sh
from .backends import Backend
from .config import ModelConfig
from .model.llama import Attention, AttentionFn, LayerRunner, Llama


def apply_sharding(model: nn.Module, backend: Backend, cfg: ModelConfig) -> dict[str, sh.Spec | None]:
    """Lay the parameters out over the backend's mesh by `model.sharding`; returns name -> spec."""
    return backend.shard_model(model, cfg.sharding)


def apply_attention(model: nn.Module, attention: AttentionFn) -> None:
    """Make every attention layer of `model` use `attention`."""
    for module in model.modules():
        if isinstance(module, Attention):
            module.attention_fn = attention


def apply_remat(model: Llama, run_layers: LayerRunner) -> None:
    """Run the decoder layers with `run_layers` (checkpointing, scan, offload)."""
    model.run_layers = run_layers


def parallelize(model: Llama, backend: Backend, cfg: ModelConfig) -> None:
    """Everything of the three above that `cfg` asks for; call after the model is on the device."""
    apply_sharding(model, backend, cfg)
    apply_attention(model, backend.attention(cfg.attention_kernel))
    apply_remat(model, backend.layer_runner(cfg.remat))
