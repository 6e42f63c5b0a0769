"""Llama 3 / 3.1 and Mixtral: RMSNorm, rotary position embeddings (with Llama
3.1's frequency scaling), grouped-query attention, SwiGLU MLPs or top-k routed
SwiGLU experts.

Written for XLA first: every shape is static (no data-dependent indexing or
boolean masks), so one traced graph serves every step and torch_xla compiles it
once. The same module runs unchanged on plain PyTorch CPU. Parameter names
follow the Hugging Face layout (embed_tokens, layers.N.self_attn.q_proj, ...),
so the sharding rules and checkpoint converters read naturally; the tests check
the tiny configs against transformers' implementation of both models.

The model knows nothing of parallelism or of the framework under it: it computes
attention with SDPA and runs its layers in order. parallelize.py applies, from
outside, what a recipe asks for: parameter sharding, another attention kernel
(each Attention's `attention_fn`) and rematerialisation (the model's
`run_layers`: checkpointed, scanned or offloaded), as the backend provides them.
"""

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from ..config import ModelConfig, RopeScalingConfig

# Causal attention of q, k, v [batch, heads, seq, head_dim] (kv heads already expanded).
AttentionFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
# Runs the decoder layers: (layers, x, cos, sin) -> x.
LayerRunner = Callable[[nn.ModuleList, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
# The training loss of (final hidden states, lm_head weight, targets) (tpu_trainer.losses).
LossFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def cross_entropy_loss(hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross entropy in float32: the model's default loss."""
    logits = F.linear(hidden, weight).float()
    return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))


def sdpa_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """torch's fused scaled-dot-product attention: the model's default."""
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def eager_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The same attention spelled out (softmax in float32): a reference for the kernels."""
    scores = (q @ k.transpose(-1, -2)).float() * q.shape[-1] ** -0.5
    t = q.shape[-2]
    causal = torch.ones(t, t, dtype=torch.bool, device=q.device).tril()
    scores = scores.masked_fill(~causal, float("-inf"))
    return scores.softmax(-1).type_as(q) @ v


def run_in_order(layers: nn.ModuleList, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """The decoder layers one after the other, every activation kept for backward: the model's default."""
    for layer in layers:
        x = layer(x, cos, sin)
    return x


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Normalise in float32 even when activations are bf16: the mean of squares
        # loses too much precision otherwise.
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return xf.type_as(x) * self.weight


def llama3_scaled(inv_freq: torch.Tensor, rs: RopeScalingConfig) -> torch.Tensor:
    """Llama 3.1's RoPE scaling: frequencies whose wavelength exceeds the original context /
    low_freq_factor are divided by `factor`, those shorter than original / high_freq_factor are
    kept, and the band between is interpolated linearly in original_context / wavelength."""
    wavelen = 2 * math.pi / inv_freq
    low_wavelen = rs.original_max_position_embeddings / rs.low_freq_factor
    high_wavelen = rs.original_max_position_embeddings / rs.high_freq_factor
    smooth = (rs.original_max_position_embeddings / wavelen - rs.low_freq_factor) / (
        rs.high_freq_factor - rs.low_freq_factor)
    blended = (1 - smooth) * inv_freq / rs.factor + smooth * inv_freq
    out = torch.where(wavelen > low_wavelen, inv_freq / rs.factor, inv_freq)
    return torch.where((wavelen <= low_wavelen) & (wavelen >= high_wavelen), blended, out)


def rope_tables(head_dim: int, max_len: int, theta: float,
                scaling: RopeScalingConfig | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin tables of shape [max_len, head_dim] for the rotate-half RoPE variant."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    if scaling is not None and scaling.rope_type == "llama3":
        inv_freq = llama3_scaled(inv_freq, scaling)
    angles = torch.outer(torch.arange(max_len, dtype=torch.float32), inv_freq)
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate channel pairs (i, i + d/2) of x [B, H, T, D] by position-dependent angles."""
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.n_heads = cfg.num_attention_heads
        self.n_kv = cfg.num_key_value_heads
        self.attention_fn: AttentionFn = sdpa_attention  # parallelize.py may swap in a kernel
        self.head_dim = cfg.hidden_size // cfg.num_attention_heads
        self.q_proj = nn.Linear(cfg.hidden_size, self.n_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(cfg.hidden_size, self.n_kv * self.head_dim, bias=False)
        self.v_proj = nn.Linear(cfg.hidden_size, self.n_kv * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.n_heads * self.head_dim, cfg.hidden_size, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        # Heads counted from the projections' width (-1), not the config: under tensor parallelism
        # each rank holds a slice of the heads, and the model stays unaware of it.
        q = self.q_proj(x).view(b, t, -1, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, -1, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, -1, self.head_dim).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if k.shape[1] != q.shape[1]:
            # GQA: each kv head serves n_heads/n_kv query heads. Expanding explicitly
            # (instead of SDPA's enable_gqa) keeps the op set that torch_xla lowers.
            rep = q.shape[1] // k.shape[1]
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        out = self.attention_fn(q, k, v)
        return self.o_proj(out.transpose(1, 2).reshape(b, t, -1))


class SwiGLU(nn.Module):
    def __init__(self, hidden: int, inner: int):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inner, bias=False)
        self.up_proj = nn.Linear(hidden, inner, bias=False)
        self.down_proj = nn.Linear(inner, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Experts(nn.Module):
    """E SwiGLU experts with their weights stacked ([E, out, in]), so that one partition spec
    can split them over the `expert` mesh axis and one batched matmul runs them all."""

    def __init__(self, n: int, hidden: int, inner: int):
        super().__init__()
        self.w_gate = nn.Parameter(torch.empty(n, inner, hidden))
        self.w_up = nn.Parameter(torch.empty(n, inner, hidden))
        self.w_down = nn.Parameter(torch.empty(n, hidden, inner))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [N, D] -> every expert's output [N, E, D]."""
        h = F.silu(torch.einsum("nd,eid->nei", x, self.w_gate)) * torch.einsum("nd,eid->nei", x, self.w_up)
        return torch.einsum("nei,edi->ned", h, self.w_down)


class MoE(nn.Module):
    """Top-k routed SwiGLU experts (Mixtral), computed densely.

    Every expert runs on every token and the outputs are mixed with routing
    weights that are zero for unselected experts. That costs E/k times the
    useful FLOPs but has static shapes, so XLA compiles it without gathers or
    dynamic sizes, and the expert axis shards like any other dimension. (No
    load-balancing auxiliary loss yet.)
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.top_k = cfg.num_experts_per_tok
        self.gate = nn.Linear(cfg.hidden_size, cfg.num_local_experts, bias=False)
        self.experts = Experts(cfg.num_local_experts, cfg.hidden_size, cfg.intermediate_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        logits = self.gate(x)
        top_vals, top_idx = logits.topk(self.top_k, dim=-1)
        # Softmax over the selected logits = softmax over all, renormalised on the top k.
        top_w = F.softmax(top_vals.float(), dim=-1).type_as(x)
        # Scatter the k weights back to a dense [N, E] tensor (zeros elsewhere).
        weights = torch.zeros_like(logits).scatter(-1, top_idx, top_w)
        out = torch.einsum("ne,ned->nd", weights, self.experts(x))
        return out.reshape(shape)


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = MoE(cfg) if cfg.num_local_experts else SwiGLU(cfg.hidden_size, cfg.intermediate_size)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class Llama(nn.Module):
    rope_cos: torch.Tensor  # buffers, registered in __init__
    rope_sin: torch.Tensor

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.num_hidden_layers))
        self.run_layers: LayerRunner = run_in_order  # parallelize.py may swap in rematerialisation
        self.loss_fn: LossFn = cross_entropy_loss  # parallelize.py sets the recipe's loss
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.embed_tokens.weight
        cos, sin = rope_tables(cfg.hidden_size // cfg.num_attention_heads, cfg.max_position_embeddings,
                               cfg.rope_theta, cfg.rope_scaling)
        # Buffers (not parameters) so .to(device) moves them; non-persistent so
        # checkpoints stay independent of max_position_embeddings.
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.apply(self._init_weights)

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=self.cfg.initializer_range)
        elif isinstance(module, Experts):
            for w in (module.w_gate, module.w_up, module.w_down):
                nn.init.normal_(w, mean=0.0, std=self.cfg.initializer_range)

    def hidden_states(self, tokens: torch.Tensor) -> torch.Tensor:
        """Final normalised hidden states [B, T, D]: the input of lm_head, and of the
        pluggable losses (tpu_trainer.losses), which apply lm_head.weight themselves."""
        t = tokens.shape[1]
        cos, sin = self.rope_cos[:t], self.rope_sin[:t]
        x = self.embed_tokens(tokens)
        x = self.run_layers(self.layers, x, cos, sin)
        return self.norm(x)

    def forward(self, tokens: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        """Logits [B, T, V] when targets is None, else the training loss (`loss_fn`), which takes lm_head's
        weight rather than logits so that a fused loss need not build them. Within the forward, so that
        a wrapper that gathers parameters for the forward (FSDP) has gathered that weight too."""
        hidden = self.hidden_states(tokens)
        if targets is None:
            return self.lm_head(hidden)
        return self.loss_fn(hidden, self.lm_head.weight, targets)


def count_params(model: nn.Module, exclude_embedding: bool = False) -> int:
    """Parameter count; shared (tied) tensors are counted once."""
    seen, total = set(), 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    if exclude_embedding and isinstance(model, Llama) and not model.cfg.tie_word_embeddings:
        total -= model.embed_tokens.weight.numel()
    return total
