"""The tiny configs against Hugging Face transformers' Llama and Mixtral (the reference
implementations): same weights in, same logits out; and the pure pieces (llama3 RoPE
scaling, attention kernels) against their definitions."""

import math

import pytest
import torch
import transformers

from _trainer_helpers import compose
from tpu_trainer import backends
from tpu_trainer.config import ModelConfig, RopeScalingConfig
from tpu_trainer.model import build_model
from tpu_trainer.model.llama import llama3_scaled
from tpu_trainer.parallelize import parallelize


def _hf_config(m: ModelConfig):
    common = {
        "vocab_size": m.vocab_size, "hidden_size": m.hidden_size, "intermediate_size": m.intermediate_size,
        "num_hidden_layers": m.num_hidden_layers, "num_attention_heads": m.num_attention_heads,
        "num_key_value_heads": m.num_key_value_heads, "rope_theta": m.rope_theta, "rms_norm_eps": m.rms_norm_eps,
        "max_position_embeddings": m.max_position_embeddings, "tie_word_embeddings": m.tie_word_embeddings,
        "attn_implementation": "eager",
    }
    if m.num_local_experts:
        return transformers.MixtralConfig(num_local_experts=m.num_local_experts,
                                          num_experts_per_tok=m.num_experts_per_tok, **common)
    rs = m.rope_scaling
    scaling = None if rs.rope_type == "none" else {
        "rope_type": "llama3", "factor": rs.factor, "low_freq_factor": rs.low_freq_factor,
        "high_freq_factor": rs.high_freq_factor,
        "original_max_position_embeddings": rs.original_max_position_embeddings,
    }
    return transformers.LlamaConfig(rope_scaling=scaling, mlp_bias=False, attention_bias=False, **common)


def _hf_state_dict(ours: dict, m: ModelConfig) -> dict:
    """Our parameter names -> transformers' (the same layout but for the stacked experts)."""
    out = {}
    for name, t in ours.items():
        if ".mlp.experts." in name:
            layer = name.split(".")[1]
            kind = name.rsplit(".", 1)[1]
            hf = {"w_gate": "w1", "w_down": "w2", "w_up": "w3"}[kind]
            for e in range(m.num_local_experts):
                out[f"model.layers.{layer}.block_sparse_moe.experts.{e}.{hf}.weight"] = t[e]
            continue
        name = name.replace(".mlp.gate.", ".block_sparse_moe.gate.") if m.num_local_experts else name
        out[name if name.startswith("lm_head") else f"model.{name}"] = t
    return out


@pytest.mark.parametrize("preset", ["tiny-llama", "tiny-llama-3.1", "tiny-mixtral"])
def test_logits_match_transformers(preset):
    m = compose([f"model={preset}"]).model
    m.attention_kernel = "eager"
    torch.manual_seed(0)
    ours = build_model(m).eval()
    parallelize(ours, backends.select("cpu"), m)  # the eager kernel, as a run with this config would
    hf_cls = transformers.MixtralForCausalLM if m.num_local_experts else transformers.LlamaForCausalLM
    ref = hf_cls(_hf_config(m)).eval()
    missing, unexpected = ref.load_state_dict(_hf_state_dict(ours.state_dict(), m), strict=False)
    assert not unexpected and all("rotary" in k for k in missing), (missing, unexpected)
    tokens = torch.randint(0, m.vocab_size, (2, 96), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want = ref(tokens).logits
        got = ours(tokens)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_rope_scaling_changes_logits_beyond_original_context():
    # tiny-llama-3.1's original context is 64 tokens: its low frequencies are scaled, so it must
    # disagree with unscaled RoPE (else the test above would not test the scaling).
    m = compose(["model=tiny-llama-3.1"]).model
    torch.manual_seed(0)
    scaled = build_model(m).eval()
    m.rope_scaling.rope_type = "none"
    torch.manual_seed(0)
    plain = build_model(m).eval()
    tokens = torch.randint(0, 256, (1, 96), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert not torch.allclose(scaled(tokens), plain(tokens), atol=1e-4)


def test_llama3_scaling_bands():
    rs = RopeScalingConfig(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                           original_max_position_embeddings=8192)
    inv = 1.0 / (500000.0 ** (torch.arange(0, 128, 2, dtype=torch.float32) / 128))
    out = llama3_scaled(inv, rs)
    wavelen = 2 * math.pi / inv
    high = wavelen < 8192 / 4  # short wavelengths: untouched
    low = wavelen > 8192 / 1  # long wavelengths: divided by the factor
    assert torch.equal(out[high], inv[high])
    torch.testing.assert_close(out[low], inv[low] / 8)
    mid = ~high & ~low
    assert mid.any() and bool(((out[mid] < inv[mid]) & (out[mid] > inv[mid] / 8)).all())


def test_attention_kernels_agree_and_fall_back_off_tpu(capsys):
    q, k, v = (torch.randn(2, 4, 16, 8, generator=torch.Generator().manual_seed(i)) for i in range(3))
    cpu = backends.select("cpu")
    sdpa = cpu.attention("sdpa")(q, k, v)
    torch.testing.assert_close(cpu.attention("eager")(q, k, v), sdpa, rtol=1e-5, atol=1e-5)
    # A TPU recipe on CPU: splash is asked for, SDPA computes it, and the log says so once.
    torch.testing.assert_close(cpu.attention("splash_attention")(q, k, v), sdpa)
    cpu.attention("splash_attention")
    out = capsys.readouterr().out
    assert out.count("model.attention_kernel=splash_attention needs a TPU; using SDPA on cpu") == 1
