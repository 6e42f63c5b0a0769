"""Losses and optimizers on sharded (DTensor) state give their single-process results: cut
cross-entropy with lm_head's vocabulary split over 2 ranks (loss, d hidden, d weight), and
AdamW, Adafactor, Lion and Muon (Newton-Schulz on a matrix split over the ranks) stepping
DTensor parameters as FSDP2 lays them out. Two gloo processes on CPU, one spawn for all.

Tolerance: the sharded runs sum the same terms in another order (vocabulary halves, then an
all-reduce), which moves float32 results in the last bits only: 1e-5 relative; a wrong
offset or a missing reduction is off by orders of magnitude more."""

import os
import socket
import traceback
from pathlib import Path
from typing import Any, cast

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.tensor import DTensor

WORLD = 2
RTOL, ATOL = 1e-5, 1e-6


def close(got: torch.Tensor, want: torch.Tensor, msg: str = "") -> None:
    torch.testing.assert_close(got, want, rtol=RTOL, atol=ATOL, msg=msg or None)


def _check_cce(mesh) -> None:
    from torch.distributed.tensor import Shard, distribute_tensor

    from tpu_trainer.losses import cut_cross_entropy

    g = torch.Generator().manual_seed(0)
    h0, w0 = torch.randn(24, 16, generator=g), torch.randn(64, 16, generator=g) * 0.5
    targets = torch.randint(0, 64, (24,), generator=g)
    targets[3] = -100  # ignored
    cases: list[dict[str, Any]] = [{}, {"label_smoothing": 0.1, "z_loss": 1e-3, "chunk_elems": 7 * 32}]
    for kwargs in cases:
        h_ref, w_ref = h0.clone().requires_grad_(), w0.clone().requires_grad_()
        ref = cut_cross_entropy(h_ref, w_ref, targets, **kwargs)
        ref.backward()
        h = h0.clone().requires_grad_()
        w = distribute_tensor(w0.clone(), mesh, [Shard(0)]).requires_grad_()
        assert cast(DTensor, w).to_local().shape == (32, 16)  # each rank holds half the vocabulary
        loss = cut_cross_entropy(h, w, targets, **kwargs)
        loss.backward()
        close(loss, ref)
        assert h.grad is not None and h_ref.grad is not None and w_ref.grad is not None
        close(h.grad, h_ref.grad)
        close(cast(DTensor, w.grad).full_tensor(), w_ref.grad)


def _check_optimizers(mesh) -> None:
    from torch.distributed.tensor import Shard, distribute_tensor

    from tpu_trainer.config import OptimizerConfig
    from tpu_trainer.optim import build_optimizer, clip_gradients, init_state

    for name in ("adamw", "adafactor", "lion", "muon"):
        g = torch.Generator().manual_seed(1)
        shapes = {"layers.0.w": (8, 6), "layers.0.v": (6,), "lm_head.weight": (10, 6)}
        init = {k: torch.randn(s, generator=g) for k, s in shapes.items()}
        grads = [{k: torch.randn(s, generator=g) for k, s in shapes.items()} for _ in range(3)]
        cfg = OptimizerConfig(name=name, lr=0.05, muon_lr=0.05, weight_decay=0.1, grad_clip=1.0)
        results = []
        for sharded in (False, True):
            model = torch.nn.Module()
            model.layers = torch.nn.Module()
            model.lm_head = torch.nn.Module()
            for key, value in init.items():
                owner, attr = key.rsplit(".", 1)
                t = distribute_tensor(value.clone(), mesh, [Shard(0)]) if sharded else value.clone()
                model.get_submodule(owner.replace("layers.0", "layers")).register_parameter(
                    attr, torch.nn.Parameter(t))
            named = dict(model.named_parameters())
            opt = build_optimizer(model, cfg)
            init_state(opt)
            for step_grads in grads:
                for key, p in named.items():
                    gv = step_grads[key.replace("layers.", "layers.0.")]
                    p.grad = distribute_tensor(gv.clone(), mesh, [Shard(0)]) if sharded else gv.clone()
                clip_gradients(list(named.values()), cfg)
                opt.step()
            results.append({k: (cast(DTensor, p).full_tensor() if sharded else p).detach() for k, p in named.items()})
        for key in results[0]:
            close(results[1][key], results[0][key], f"{name} {key}")


def _worker(rank: int, port: int, out: str) -> None:
    try:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo")
        dist.init_process_group("gloo", rank=rank, world_size=WORLD)
        from torch.distributed.device_mesh import init_device_mesh

        mesh = init_device_mesh("cpu", (WORLD,))
        _check_cce(mesh)
        _check_optimizers(mesh)
        Path(out, f"ok{rank}").write_text("ok")
    except Exception:
        Path(out, f"err{rank}").write_text(traceback.format_exc())
        raise
    finally:
        # On every path, failures included: a process that ends with gloo's process group alive aborts in the
        # interpreter's teardown (SIGABRT, "terminate called without an active exception"), and the exception
        # that ended it would be reported as that signal.
        if dist.is_initialized():
            dist.destroy_process_group()


def test_cce_and_optimizers_on_sharded_state_match_one_process(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    try:
        mp.spawn(_worker, args=(port, str(tmp_path)), nprocs=WORLD, join=True)
    except mp.ProcessExitedException as e:
        errors = [p.read_text() for p in sorted(tmp_path.glob("err*"))]
        raise AssertionError(f"{e}; the ranks' errors: {errors or 'none written'}") from e
    errors = [p.read_text() for p in sorted(tmp_path.glob("err*"))]
    assert not errors, errors[0]
    assert sorted(p.name for p in tmp_path.glob("ok*")) == ["ok0", "ok1"]
