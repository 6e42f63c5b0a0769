"""Each optimizer's first steps on a tiny problem against a step computed by hand
from the published update rule; Muon's Newton-Schulz output is near-orthogonal;
param groups and gradient clipping."""

import math

import pytest
import torch

from tpu_trainer.config import ModelConfig, OptimizerConfig
from tpu_trainer.model import build_model
from tpu_trainer.optim import Adafactor, Lion, Muon, build_optimizer, clip_gradients, newton_schulz, param_groups

W0 = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=torch.float64)
G = [torch.tensor([[0.1, -0.2, 0.3], [-0.4, 0.5, 0.05]], dtype=torch.float64),
     torch.tensor([[-0.3, 0.1, 0.2], [0.2, -0.1, 0.4]], dtype=torch.float64)]


def _run(opt_cls, grads=G, w0=W0, **kw):
    p = torch.nn.Parameter(w0.clone())
    opt = opt_cls([p], **kw)
    for g in grads:
        p.grad = g.clone()
        opt.step()
    return p.detach()


def test_adamw_reference():
    lr, b1, b2, eps, wd = 0.1, 0.9, 0.99, 1e-8, 0.01
    got = _run(torch.optim.AdamW, lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd)
    w, m, v = W0.clone(), torch.zeros_like(W0), torch.zeros_like(W0)
    for t, g in enumerate(G, 1):
        w = w * (1 - lr * wd)
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        w = w - lr * (m / (1 - b1**t)) / ((v / (1 - b2**t)).sqrt() + eps)
    assert torch.allclose(got, w, atol=1e-12)


def test_lion_reference():
    lr, b1, b2, wd = 0.01, 0.9, 0.99, 0.1
    got = _run(Lion, lr=lr, betas=(b1, b2), weight_decay=wd)
    w, m = W0.clone(), torch.zeros_like(W0)
    for g in G:
        c = b1 * m + (1 - b1) * g
        w = w * (1 - lr * wd) - lr * torch.sign(c)
        m = b2 * m + (1 - b2) * g
    assert torch.allclose(got, w, atol=1e-12)
    # every coordinate moved by exactly lr per step (plus the decay), the defining property of sign updates
    assert torch.allclose((got - W0 * (1 - lr * wd) ** 2).abs(), torch.full_like(W0, 2 * lr), atol=0.02)


def _rms(x):
    return x.norm() / math.sqrt(x.numel())


def test_adafactor_reference_matrix_and_vector():
    lr, decay, eps1, eps2, d = 0.05, -0.8, 1e-30, 1e-3, 1.0
    got = _run(Adafactor, lr=lr, beta2_decay=decay, eps=(eps1, eps2), d=d)
    w, r, c = W0.clone(), torch.zeros(2, 1, dtype=torch.float64), torch.zeros(1, 3, dtype=torch.float64)
    for t, g in enumerate(G, 1):
        one_minus_b2 = t**decay
        alpha = max(eps2, _rms(w).item()) * min(lr, 1 / math.sqrt(t))
        r = r + one_minus_b2 * ((g * g).mean(1, keepdim=True) - r)
        c = c + one_minus_b2 * ((g * g).mean(0, keepdim=True) - c)
        v = r @ c / r.mean()
        u = g / v.sqrt()
        w = w - alpha * u / max(1.0, _rms(u).item() / d)
    assert torch.allclose(got, w, atol=1e-12)
    # agrees with torch's implementation of the same algorithm (which syncs on .item())
    ref = _run(torch.optim.Adafactor, lr=lr, beta2_decay=decay, eps=(eps1, eps2), d=d, foreach=False)
    assert torch.allclose(got, ref, atol=1e-12)
    vec = [g[0] for g in G]
    assert torch.allclose(_run(Adafactor, vec, W0[0], lr=lr), _run(torch.optim.Adafactor, vec, W0[0], lr=lr,
                                                                    foreach=False), atol=1e-12)


def test_newton_schulz_is_near_orthogonal():
    g = torch.Generator().manual_seed(0)
    for shape in [(64, 32), (32, 64), (48, 48)]:
        m = torch.randn(shape, generator=g) * 3
        o = newton_schulz(m, steps=5)
        s = torch.linalg.svdvals(o)
        # the quintic's coefficients push all singular values into roughly [0.7, 1.2]
        assert s.min() > 0.6 and s.max() < 1.25, s
        # and it keeps the singular vectors: O is close to U V^T of the input
        u, _, vh = torch.linalg.svd(m, full_matrices=False)
        assert torch.nn.functional.cosine_similarity(o.flatten(), (u @ vh).flatten(), dim=0) > 0.97


def test_muon_reference_and_adamw_groups():
    lr, mom, wd = 0.02, 0.95, 0.1
    hidden = torch.nn.Parameter(W0.clone().float())
    gain = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    opt = Muon([{"params": [hidden], "muon": True, "weight_decay": wd},
                {"params": [gain], "muon": False, "lr": 0.1, "weight_decay": 0.0}],
               lr=lr, momentum=mom, betas=(0.9, 0.99), eps=1e-8)
    w, buf = W0.clone().float(), torch.zeros(2, 3)
    gg, m, v = torch.tensor([0.3, -0.2]), torch.zeros(2), torch.zeros(2)
    for g in G:
        hidden.grad, gain.grad = g.float(), gg.clone()
        opt.step()
        buf = mom * buf + g.float()
        o = newton_schulz(g.float() + mom * buf)
        w = w * (1 - lr * wd) - lr * math.sqrt(max(1, 2 / 3)) * o
        m, v = 0.9 * m + 0.1 * gg, 0.99 * v + 0.01 * gg * gg
    assert torch.allclose(hidden.detach(), w, atol=1e-6)
    expected_gain = torch.tensor([1.0, 2.0]) - 0.1 * 2 * torch.sign(gg)  # Adam's first steps move by ~lr
    assert torch.allclose(gain.detach(), expected_gain, atol=1e-3)
    with pytest.raises(ValueError, match="muon groups take matrices"):
        Muon([{"params": [gain], "muon": True}])


def test_param_groups_no_decay_on_norms_and_muon_split():
    model = build_model(ModelConfig(num_hidden_layers=1))
    names = {id(p): n for n, p in model.named_parameters()}
    groups = param_groups(model, OptimizerConfig(name="adamw", weight_decay=0.1))
    for g in groups:
        for p in g["params"]:
            assert (g["weight_decay"] > 0) == (p.dim() >= 2), names[id(p)]
    mg = param_groups(model, OptimizerConfig(name="muon"))
    muon_names = {names[id(p)] for p in mg[0]["params"]}
    assert mg[0]["muon"] and "embed_tokens.weight" not in muon_names and "lm_head.weight" not in muon_names
    assert "layers.0.self_attn.q_proj.weight" in muon_names and mg[0]["lr"] == 0.02
    assert {names[id(p)] for p in mg[1]["params"]} == {"embed_tokens.weight", "lm_head.weight"}
    for name in ("adamw", "adafactor", "lion", "muon", "sgd"):
        opt = build_optimizer(model, OptimizerConfig(name=name))
        assert sum(len(g["params"]) for g in opt.param_groups) == len(list(model.parameters())), name


def test_clip_by_value_then_norm():
    a = torch.nn.Parameter(torch.zeros(3))
    b = torch.nn.Parameter(torch.zeros(2))
    a.grad, b.grad = torch.tensor([3.0, -0.5, 10.0]), torch.tensor([-4.0, 0.0])
    norm = clip_gradients([a, b], OptimizerConfig(grad_clip=1.0, grad_clip_value=2.0))
    # by value first: [2, -0.5, 2], [-2, 0] -> norm sqrt(12.25) = 3.5; then scaled to norm 1
    assert norm is not None and norm.item() == pytest.approx(3.5)
    assert a.grad is not None and torch.allclose(a.grad, torch.tensor([2.0, -0.5, 2.0]) / 3.5, atol=1e-5)
    assert clip_gradients([a], OptimizerConfig(grad_clip=0.0, grad_clip_value=0.0)) is None
