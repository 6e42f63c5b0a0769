"""Losses by name (each against its formula) and the schedules (warmup, then linear,
cosine, warmup-stable-decay, constant); a training run with each loss."""

import itertools
import math

import pytest
import torch
import torch.nn.functional as F

from _trainer_helpers import read_metrics, tiny_config
from tpu_trainer.config import ConfigError, LossConfig, SchedulerConfig, validate
from tpu_trainer.losses import LOSSES, build_loss
from tpu_trainer.schedules import lr_multiplier
from tpu_trainer.train import train


@pytest.fixture
def batch():
    g = torch.Generator().manual_seed(0)
    h = torch.randn(3, 5, 8, generator=g, dtype=torch.float64)
    w = torch.randn(11, 8, generator=g, dtype=torch.float64)
    t = torch.randint(0, 11, (3, 5), generator=g)
    t[0, 0] = -100
    return h, w, t


def _by_hand(h, w, t, eps=0.0, z=0.0, gamma=None):
    logits = (h @ w.t()).reshape(-1, w.shape[0])
    t = t.reshape(-1)
    keep = t != -100
    logits, t = logits[keep], t[keep]
    logp = torch.log_softmax(logits, -1)
    nll = -logp.gather(1, t[:, None]).squeeze(1)
    if gamma is not None:
        pt = (-nll).exp()
        return ((1 - pt) ** gamma * nll).mean()
    loss = (1 - eps) * nll + eps * (-logp.mean(-1))
    return (loss + z * torch.logsumexp(logits, -1) ** 2).mean()


def test_each_loss_matches_its_formula(batch):
    h, w, t = batch
    cases = {
        "cross_entropy": (LossConfig(), {}),
        "label_smoothing": (LossConfig(name="label_smoothing", label_smoothing=0.1), {"eps": 0.1}),
        "z_loss": (LossConfig(name="z_loss", z_loss=1e-2), {"z": 1e-2}),
        "focal": (LossConfig(name="focal", focal_gamma=2.0), {"gamma": 2.0}),
        "cut_cross_entropy": (LossConfig(name="cut_cross_entropy", label_smoothing=0.1, z_loss=1e-2),
                              {"eps": 0.1, "z": 1e-2}),
    }
    assert set(cases) == set(LOSSES)
    for name, (cfg, kw) in cases.items():
        got = build_loss(cfg)(h, w, t)
        assert got.item() == pytest.approx(_by_hand(h, w, t, **kw).item(), rel=1e-5), name
    # focal with gamma 0 is plain cross-entropy
    assert build_loss(LossConfig(name="focal", focal_gamma=0.0))(h, w, t).item() == pytest.approx(
        F.cross_entropy((h @ w.t()).reshape(-1, 11), t.reshape(-1)).item(), rel=1e-6)


def test_named_losses_need_their_coefficient(tmp_path):
    cfg = tiny_config(tmp_path)
    cfg.loss.name = "z_loss"
    with pytest.raises(ConfigError, match=r"loss\.z_loss"):
        validate(cfg)


def test_training_with_cut_cross_entropy_matches_cross_entropy(tmp_path):
    runs = {}
    for name in ("cross_entropy", "cut_cross_entropy"):
        cfg = tiny_config(tmp_path / name, max_steps=6, logging_steps=1, global_batch_size=4, block_size=32)
        cfg.loss.name = name
        cfg.loss.chunk_elems = 256 * 40  # several chunks per batch
        cfg.checkpoint.enabled = False
        train(cfg)
        runs[name] = [r["loss"] for r in read_metrics(tmp_path / name)]
    assert runs["cut_cross_entropy"] == pytest.approx(runs["cross_entropy"], abs=1e-4)


def _sched(name, **kw):
    return SchedulerConfig(name=name, warmup_steps=kw.pop("warmup", 4), min_lr_ratio=0.1, **kw)


def test_schedules_share_warmup_and_reach_their_floor():
    for name in ("constant", "linear", "cosine", "wsd"):
        cfg = _sched(name)
        assert [lr_multiplier(s, cfg, 20) for s in range(4)] == [0.25, 0.5, 0.75, 1.0], name
        end = lr_multiplier(20, cfg, 20)
        assert end == pytest.approx(1.0 if name == "constant" else 0.1), name
    lin, cos = _sched("linear"), _sched("cosine")
    assert lr_multiplier(12, lin, 20) == pytest.approx(0.1 + 0.9 * 0.5)  # halfway through the decay
    assert lr_multiplier(12, cos, 20) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi / 2)))


def test_warmup_stable_decay_shape():
    cfg = _sched("wsd", decay_ratio=0.25)  # 100 steps: warmup 4, stable to 75, linear decay over 75..100
    mults = [lr_multiplier(s, cfg, 100) for s in range(101)]
    assert all(m == 1.0 for m in mults[4:76])
    assert mults[75] == 1.0 and mults[100] == pytest.approx(0.1)
    assert mults[88] == pytest.approx(1 - 0.9 * 13 / 25)
    assert all(a >= b for a, b in itertools.pairwise(mults[75:]))
