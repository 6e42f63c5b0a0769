"""The Llama model: shapes, causality, GQA/MoE, parameter and FLOP accounting."""

import dataclasses

import pytest
import torch

from tpu_trainer.config import ModelConfig
from tpu_trainer.metrics import flops_per_token, matmul_params, normalize_kind, peak_flops, peak_flops_per_chip
from tpu_trainer.model import build_model, count_params
from tpu_trainer.model.llama import Block, MoE, apply_rope, rope_tables

TINY = ModelConfig()
MOE = dataclasses.replace(TINY, num_local_experts=4, num_experts_per_tok=2)


def test_logits_shape_and_loss():
    torch.manual_seed(0)
    model = build_model(TINY)
    tokens = torch.randint(0, 256, (2, 16))
    assert model(tokens).shape == (2, 16, 256)
    loss = model(tokens, tokens)
    # Fresh init with std 0.02 predicts ~uniformly: loss ~ ln(256).
    assert abs(loss.item() - torch.log(torch.tensor(256.0)).item()) < 0.1


@pytest.mark.parametrize("cfg", [TINY, MOE], ids=["dense", "moe"])
def test_causal(cfg):
    """Changing a later token must not change earlier positions' logits."""
    torch.manual_seed(0)
    model = build_model(cfg).eval()
    a = torch.randint(0, 256, (1, 12))
    b = a.clone()
    b[0, 8:] = (b[0, 8:] + 1) % 256
    la, lb = model(a), model(b)
    assert torch.allclose(la[:, :8], lb[:, :8], atol=1e-6)
    assert not torch.allclose(la[:, 8:], lb[:, 8:], atol=1e-6)


def test_rope_preserves_norm_and_is_relative():
    cos, sin = rope_tables(8, 32, 10000.0)
    q, k = torch.randn(1, 1, 1, 8), torch.randn(1, 1, 1, 8)
    rot = lambda x, p: apply_rope(x, cos[p : p + 1], sin[p : p + 1])  # noqa: E731
    assert torch.allclose(rot(q, 5).norm(), q.norm(), atol=1e-5)
    # <R_m q, R_n k> depends only on m - n
    d1 = (rot(q, 7) * rot(k, 3)).sum()
    d2 = (rot(q, 14) * rot(k, 10)).sum()
    assert torch.allclose(d1, d2, atol=1e-5)


@pytest.mark.parametrize(
    "cfg",
    [TINY, dataclasses.replace(TINY, num_key_value_heads=4), dataclasses.replace(MOE, num_experts_per_tok=4)],
    ids=["gqa", "mha", "moe-all-experts"],
)
def test_matmul_params_matches_model(cfg):
    # With k == E every expert is "active", so the analytic count equals the real one.
    assert matmul_params(cfg) == count_params(build_model(cfg), exclude_embedding=True)


def test_moe_trains_and_routes():
    torch.manual_seed(0)
    model = build_model(MOE)
    tokens = torch.randint(0, 256, (2, 16))
    model(tokens, tokens).backward()
    block = model.layers[0]
    assert isinstance(block, Block) and isinstance(block.mlp, MoE)
    grad = block.mlp.gate.weight.grad
    assert grad is not None and grad.abs().sum() > 0  # the router learns
    assert matmul_params(MOE) < count_params(model, exclude_embedding=True)  # top-2 of 4 active


def test_flops_formula():
    # 6N + 12 L H Q T for the tiny model at T=64
    n = matmul_params(TINY)
    assert flops_per_token(TINY, 64) == 6 * n + 12 * 2 * 4 * 16 * 64


def test_llama3_8b_param_count():
    """The llama-3-8b preset has the published ~8.03B parameters (counted analytically)."""
    cfg = ModelConfig(
        vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
        num_attention_heads=32, num_key_value_heads=8,
    )
    total = matmul_params(cfg) + cfg.vocab_size * cfg.hidden_size  # + input embedding
    assert 8.02e9 < total < 8.04e9


@pytest.mark.parametrize(
    ("kind", "peak"),
    [("TPU v4", 275e12), ("TPU v5 lite", 197e12), ("TPU v5", 459e12), ("TPU v6 lite", 918e12),
     ("v5litepod-16", 197e12), ("v6e-8", 918e12), ("v5p-128", 459e12), ("NVIDIA H100 80GB HBM3", 989e12),
     ("CPU", None), ("cpu", None)],
)
def test_peak_flops_table(kind, peak):
    assert peak_flops(kind) == peak, normalize_kind(kind)


# Google's TPU7x page (docs.cloud.google.com/tpu/docs/tpu7x): "Peak compute per chip (BF16) (TFLOPs)"
# 2307, and "Each TPU7x chip contains two TensorCores", which the runtime shows as two devices
# (a tpu7x-standard-4t VM: 4 chips, 8 devices). The same table gives v5p 459 and v6e 918 per chip.
TPU7X_CHIP_BF16 = 2307e12


@pytest.mark.parametrize("kind", ["TPU7x", "tpu7x-8", "tpu7x-standard-4t", "tpu-v7x", "v7x-8", "TPU v7"])
def test_tpu7x_peak_is_half_a_chip_per_device(kind):
    assert peak_flops_per_chip(kind) == TPU7X_CHIP_BF16, normalize_kind(kind)
    assert peak_flops(kind) == TPU7X_CHIP_BF16 / 2, normalize_kind(kind)


def test_tpu7x_mfu_counts_every_device(monkeypatch):
    """The step meter's MFU on a TPU7x VM (8 devices) running at exactly its 4 chips' peak is 1."""
    from tpu_trainer import meter as meter_mod
    from tpu_trainer.backends.native import NativeBackend

    clock = iter([100.0, 101.0])  # the meter's start, then the logged step one second later
    monkeypatch.setattr(meter_mod.time, "perf_counter", lambda: next(clock))
    fpt = flops_per_token(TINY, 64)
    tokens_per_step = 4 * TPU7X_CHIP_BF16 / fpt  # what 4 chips at peak get through in one second
    m = meter_mod.StepMeter(NativeBackend(torch.device("cpu"), "TPU7x", "tpu"), 0, int(tokens_per_step), fpt,
                            peak_flops("TPU7x"), 8, 0, lambda _: None)
    rec = m.prepare({"step": 1})
    assert rec["mfu"] == pytest.approx(1.0, rel=1e-9)


@pytest.mark.parametrize(("kind", "chip"), [("v5p-8", 459e12), ("v6e-8", 918e12)])
def test_v5p_v6e_one_device_per_chip(kind, chip):
    assert peak_flops(kind) == peak_flops_per_chip(kind) == chip
