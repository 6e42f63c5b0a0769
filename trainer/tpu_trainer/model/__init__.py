"""Model zoo. One family today (Llama, with optional MoE for Mixtral shapes)."""

from ..config import ModelConfig
from .llama import Llama, count_params


def build_model(cfg: ModelConfig) -> Llama:
    return Llama(cfg)


__all__ = ["Llama", "build_model", "count_params"]
