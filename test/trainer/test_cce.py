"""Cut cross-entropy against the naive `logits = h @ W.T; cross_entropy(logits)`:
loss and gradients (hidden and weight) over random shapes and options."""

import pytest
import torch

from tpu_trainer.losses import cut_cross_entropy, naive_linear_cross_entropy

CASES = [
    # n tokens, hidden, vocab, label_smoothing, z_loss, chunk_elems (small: forces many chunks and a ragged last one)
    (1, 8, 5, 0.0, 0.0, 1 << 20),
    (37, 16, 101, 0.0, 0.0, 101 * 4),
    (64, 8, 50, 0.1, 0.0, 50 * 7),
    (50, 24, 300, 0.0, 1e-3, 300 * 9),
    (129, 32, 77, 0.2, 1e-2, 77 * 128),
]


def _pair(fn, h, w, t, **kw):
    h = h.detach().clone().requires_grad_(True)
    w = w.detach().clone().requires_grad_(True)
    loss = fn(h, w, t, **kw)
    loss.backward()
    return loss.detach(), h.grad, w.grad


@pytest.mark.parametrize(("n", "d", "v", "ls", "z", "chunk"), CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cce_matches_naive(n, d, v, ls, z, chunk, dtype):
    g = torch.Generator().manual_seed(n * 1000 + v)
    h = torch.randn(n, d, generator=g, dtype=dtype)
    w = torch.randn(v, d, generator=g, dtype=dtype) * 0.5
    t = torch.randint(0, v, (n,), generator=g)
    if n > 3:
        t[torch.randperm(n, generator=g)[: n // 4]] = -100  # ignore_index rows
    kw = {"label_smoothing": ls, "z_loss": z}
    a = _pair(cut_cross_entropy, h, w, t, chunk_elems=chunk, **kw)
    b = _pair(naive_linear_cross_entropy, h, w, t, **kw)
    # CCE accumulates in fp32 whatever the input dtype; the naive loss in fp64 is the reference.
    tol = 2e-5 if dtype == torch.float32 else 1e-5
    assert torch.allclose(a[0].double(), b[0].double(), rtol=tol, atol=tol), (a[0], b[0])
    assert torch.allclose(a[1], b[1], rtol=1e-4, atol=tol), (a[1] - b[1]).abs().max()
    assert torch.allclose(a[2], b[2], rtol=1e-4, atol=tol), (a[2] - b[2]).abs().max()
    assert a[1].dtype == dtype and a[2].dtype == dtype


def test_cce_shift_and_grad_output_scaling():
    g = torch.Generator().manual_seed(0)
    h = torch.randn(2, 9, 16, generator=g)
    w = torch.randn(40, 16, generator=g)
    ids = torch.randint(0, 40, (2, 9), generator=g)
    # shift: position t predicts id t+1, exactly like slicing by hand
    a = cut_cross_entropy(h, w, ids, shift=True)
    b = naive_linear_cross_entropy(h[:, :-1], w, ids[:, 1:])
    assert torch.allclose(a, b, atol=1e-5)
    # backward honours a non-unit upstream gradient (3 * loss)
    hh = h.clone().requires_grad_(True)
    (3 * cut_cross_entropy(hh, w, ids, chunk_elems=64)).backward()
    hn = h.clone().requires_grad_(True)
    (3 * naive_linear_cross_entropy(hn, w, ids)).backward()
    assert hh.grad is not None and hn.grad is not None
    assert torch.allclose(hh.grad, hn.grad, atol=1e-5)


def test_cce_all_ignored_and_no_grad():
    h, w = torch.randn(6, 4), torch.randn(10, 4)
    t = torch.full((6,), -100)
    assert cut_cross_entropy(h, w, t).item() == 0.0  # no NaN from 0/0
    with torch.no_grad():  # eval path: no gradient buffers are built
        t2 = torch.randint(0, 10, (6,))
        assert torch.allclose(cut_cross_entropy(h, w, t2), naive_linear_cross_entropy(h, w, t2), atol=1e-6)


def test_cce_bf16_inputs_accumulate_in_fp32():
    g = torch.Generator().manual_seed(1)
    h = torch.randn(64, 32, generator=g).bfloat16()
    w = (torch.randn(500, 32, generator=g) * 0.3).bfloat16()
    t = torch.randint(0, 500, (64,), generator=g)
    a = _pair(cut_cross_entropy, h, w, t, chunk_elems=500 * 16)
    b = _pair(naive_linear_cross_entropy, h.double(), w.double(), t)
    assert a[1].dtype == torch.bfloat16
    assert abs(a[0].item() - b[0].item()) < 1e-4  # the bf16 products are exact in fp32
    assert torch.allclose(a[2].float(), b[2].float(), atol=2e-3, rtol=2e-2)


_XLA_SCRIPT = r"""
import json, torch, torch_xla
from tpu_trainer.losses import cut_cross_entropy, naive_linear_cross_entropy
g = torch.Generator().manual_seed(3)
h = torch.randn(45, 16, generator=g); w = torch.randn(70, 16, generator=g) * 0.5
t = torch.randint(0, 70, (45,), generator=g); t[::7] = -100
out = {}
for name, dev, fn, kw in (("xla", torch_xla.device(), cut_cross_entropy, dict(chunk_elems=70 * 8, label_smoothing=0.1)),
                          ("ref", torch.device("cpu"), naive_linear_cross_entropy, dict(label_smoothing=0.1))):
    hd = h.to(dev).requires_grad_(True); wd = w.to(dev).requires_grad_(True)
    loss = fn(hd, wd, t.to(dev), **kw); loss.backward()
    out[name] = [loss.item(), hd.grad.cpu().tolist(), wd.grad.cpu().tolist()]
print(json.dumps(out))
"""


@pytest.mark.xla
def test_cce_on_xla_matches_naive():
    """The traced path (no reused buffers: XLA places them) on an XLA:CPU device, ragged last chunk included."""
    import json
    import subprocess
    import sys

    from _trainer_helpers import REPO, clean_env

    p = subprocess.run([sys.executable, "-c", _XLA_SCRIPT], cwd=REPO, env=clean_env(PJRT_DEVICE="CPU"),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    (lx, dhx, dwx), (lr, dhr, dwr) = out["xla"], out["ref"]
    assert lx == pytest.approx(lr, rel=1e-5)
    assert torch.allclose(torch.tensor(dhx), torch.tensor(dhr), rtol=1e-4, atol=1e-6)
    assert torch.allclose(torch.tensor(dwx), torch.tensor(dwr), rtol=1e-4, atol=1e-6)


def test_automatic_chunk_size():
    from tpu_trainer.losses.cut_cross_entropy import _chunk_rows

    assert _chunk_rows(8192, 128256, 0) == (1 << 26) // 128256 == 523  # 2^26 logits
    assert _chunk_rows(8192, 256000, 0) == 512  # never fewer than 512 tokens
    assert _chunk_rows(100, 256000, 0) == 100  # nor more than there are
    assert _chunk_rows(8192, 1000, 64 * 1000) == 64  # an explicit size is taken as given
