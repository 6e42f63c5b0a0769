"""One side of the SPMD checkpoint test, run in its own process on an XLA:CPU mesh.

    PJRT_DEVICE=CPU CPU_NUM_DEVICES=4 python spmd_ckpt_worker.py save|save-async|load ROWSxCOLS CKPT_DIR OUT_JSON

save: a tiny Llama whose 2-D weights are sharded over a ROWSxCOLS mesh takes one
AdamW step and is checkpointed through the trainer's Checkpointer (SPMD planners,
gloo process group). load: a differently initialised model, sharded over another
mesh shape, loads it (each device reads only its own shard: reshard on load).
Both write what they hold (host copies) to OUT_JSON for the test to compare.
"""

import json
import sys

import numpy as np
import torch
import torch_xla
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr

from tpu_trainer import data as data_lib
from tpu_trainer.backends.xla import SpmdCheckpointing
from tpu_trainer.checkpoint import Checkpointer, capture, restore
from tpu_trainer.config import CheckpointConfig, DataConfig, ModelConfig, OptimizerConfig, SchedulerConfig
from tpu_trainer.model import build_model
from tpu_trainer.optim import build_optimizer, build_scheduler, init_state


def q_of(model):
    return model.layers[0].self_attn.q_proj.weight


def _snapshot(model, opt, batches, q) -> dict:
    """What the checkpoint of this moment must hold (the data position included, without consuming it)."""
    gen_state, drawn = batches.gen.get_state(), batches.drawn
    nxt = next(batches)[0].tolist()
    batches.gen.set_state(gen_state)
    batches.drawn = drawn
    return {
        "step": 1,
        "params": {n: p.detach().cpu().double().sum().item() for n, p in model.named_parameters()},
        "exp_avg_q": opt.state[q]["exp_avg"].cpu().double().sum().item(),
        "lr": opt.param_groups[0]["lr"],
        "next_batch": nxt,
    }


def main(mode: str, shape: str, ckpt_dir: str, out: str) -> None:
    xr.use_spmd()
    rows, cols = (int(x) for x in shape.split("x"))
    mesh = xs.Mesh(np.arange(xr.global_runtime_device_count()), (rows, cols), ("a", "b"))
    dev = torch_xla.device()
    torch.manual_seed(0 if mode.startswith("save") else 1)
    model = build_model(ModelConfig()).to(dev)
    for p in model.parameters():
        if p.dim() == 2:
            xs.mark_sharding(p, mesh, ("a", "b"))
    opt = build_optimizer(model, OptimizerConfig(lr=1e-2))
    init_state(opt)
    sched = build_scheduler(opt, SchedulerConfig(), 10)
    batches = data_lib.batches(DataConfig(), 256, 2, 16, seed=3)
    ckpt = Checkpointer(CheckpointConfig(), ckpt_dir, sharded=SpmdCheckpointing())
    step = 0
    at_save = None
    if mode.startswith("save"):
        x, y = next(batches)
        model(x.to(dev), y.to(dev)).backward()
        opt.step()
        sched.step()
        torch_xla.sync()
        step = 1
        if mode == "save":
            ckpt.save(step, capture(model, opt, sched, batches, step), blocking=True)
        else:
            at_save = _snapshot(model, opt, batches, q_of(model))
            ckpt.save(step, capture(model, opt, sched, batches, step), blocking=False)
            blocked = ckpt.last_blocked_s
            # keep training while the writer thread runs: the checkpoint must not see this step
            x, y = next(batches)
            model(x.to(dev), y.to(dev)).backward()
            opt.step()
            torch_xla.sync()
            ckpt.wait()
            after = {n: p.detach().cpu().double().sum().item() for n, p in model.named_parameters()}
            at_save.update(blocked_s=blocked, params_after=after)
    else:
        url = ckpt.latest()
        assert url is not None, f"no complete checkpoint in {ckpt_dir}"
        state = ckpt.load(url, capture(model, opt, sched, batches, 0))
        step = restore(state, model, opt, sched, batches)
        torch_xla.sync()
    q = q_of(model)
    result = at_save or {
        "step": step,
        "params": {n: p.detach().cpu().double().sum().item() for n, p in model.named_parameters()},
        "exp_avg_q": opt.state[q]["exp_avg"].cpu().double().sum().item(),
        "lr": opt.param_groups[0]["lr"],
        "next_batch": next(batches)[0].tolist(),
        "sharding": torch_xla._XLAC._get_xla_sharding_spec(q),
    }
    result["files"] = sorted(p.split("/")[-1] for p in ckpt.fs.ls(ckpt.base + f"/step_{1:08d}", detail=False))
    result["sharding"] = torch_xla._XLAC._get_xla_sharding_spec(q)
    ckpt.close()
    with open(out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(*sys.argv[1:5])
