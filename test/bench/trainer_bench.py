"""Framework overhead of the trainer: tokens/s of the tiny models on CPU, ours (train(), as a
recipe runs it: config, logging every 10 steps, metrics.jsonl, scheduler, clipping) against a
plain PyTorch loop over the same model, batches and AdamW, in the same process, interleaved;
then the native path's sharded case: ours with nproc_per_node=2 (the launcher, FSDP2 over gloo,
DCP off) against a plain FSDP2 loop of 2 gloo ranks (fully_shard per layer and the root, as
torchtitan applies it), the two interleaved run by run.

    bash scripts/bench.sh trainer
    # which runs: python3 test/bench/trainer_bench.py --json test-artifacts/bench/trainer.json
Env: BENCH_TRAINER_REPS (5), BENCH_TRAINER_STEPS (60; the first 10 are warm-up and not timed),
BENCH_TRAINER_FSDP_REPS (3), BENCH_TRAINER_PARTS (single,fsdp: which of the two tables).
"""

import contextlib
import io
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "trainer"))
# isort: off
import tpu_trainer  # noqa: F401  before torch: torch_tpu's autoload off where there is no TPU
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
# isort: on

from tpu_trainer import data as data_lib
from tpu_trainer.config import TrainConfig
from tpu_trainer.model import build_model
from tpu_trainer.train import train

REPO = Path(__file__).resolve().parents[2]
REPS = int(os.environ.get("BENCH_TRAINER_REPS", "5"))
FSDP_REPS = int(os.environ.get("BENCH_TRAINER_FSDP_REPS", "3"))
RANKS = 2
PARTS = os.environ.get("BENCH_TRAINER_PARTS", "single,fsdp").split(",")
STEPS = int(os.environ.get("BENCH_TRAINER_STEPS", "60"))
WARMUP = 10
BATCH, BLOCK = 8, 128


def _cfg(preset: str, out: str) -> TrainConfig:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "trainer"))
    from _trainer_helpers import compose

    return compose([f"model={preset}", "device=cpu", f"max_steps={STEPS}", "logging_steps=10",
                    f"global_batch_size={BATCH}", f"block_size={BLOCK}", "checkpoint.enabled=false",
                    "scheduler.warmup_steps=5", "num_threads=0", f"output_dir={out}"])


def ours(preset: str) -> float:
    with tempfile.TemporaryDirectory() as out:
        cfg = _cfg(preset, out)
        with contextlib.redirect_stdout(io.StringIO()):  # the per-step log lines; metrics.jsonl has the figures
            train(cfg)
        rows = [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines()]
    # steady state: from the first logged step at or after WARMUP to the last
    timed = [r for r in rows if r["step"] > WARMUP]
    t = sum(r["step_time_s"] * 10 for r in timed)  # each record covers 10 steps
    return len(timed) * 10 * BATCH * BLOCK / t


def plain(preset: str) -> float:
    cfg = _cfg(preset, "/tmp/unused")
    torch.manual_seed(cfg.seed)
    model = build_model(cfg.model).train()
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.optimizer.lr, betas=(0.9, 0.95), weight_decay=0.1)
    batches = data_lib.batches(cfg.data, cfg.model.vocab_size, BATCH, BLOCK, cfg.seed)
    t0 = None
    for step in range(1, STEPS + 1):
        if step == WARMUP + 1:
            t0 = time.perf_counter()
        x, y = next(batches)
        loss = F.cross_entropy(model(x).float().view(-1, cfg.model.vocab_size), y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step % 10 == 0:
            loss.item()  # a plain loop reads its loss when it prints it
    assert t0 is not None, f"BENCH_TRAINER_STEPS ({STEPS}) must exceed the {WARMUP} warm-up steps"
    return (STEPS - WARMUP) * BATCH * BLOCK / (time.perf_counter() - t0)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ours_fsdp(preset: str) -> float:
    """`python -m tpu_trainer.train nproc_per_node=2`: the launcher, 2 ranks, FSDP2; tokens/s from metrics.jsonl."""
    with tempfile.TemporaryDirectory() as out:
        args = [f"model={preset}", "device=cpu", f"nproc_per_node={RANKS}", "num_threads=1", f"max_steps={STEPS}",
                "logging_steps=10", f"global_batch_size={BATCH}", f"block_size={BLOCK}", "checkpoint.enabled=false",
                "scheduler.warmup_steps=5", f"coordinator_port={_port()}", f"output_dir={out}"]
        env = {**os.environ, "PYTHONPATH": str(REPO / "trainer")}
        subprocess.run([sys.executable, "-m", "tpu_trainer.train", *args], cwd=REPO, env=env, check=True,
                       stdout=subprocess.DEVNULL)
        rows = [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines()]
    timed = [r for r in rows if r["step"] > WARMUP]
    return len(timed) * 10 * BATCH * BLOCK / sum(r["step_time_s"] * 10 for r in timed)


def _plain_fsdp_rank(rank: int, preset: str, port: int, result: str) -> None:
    from torch.distributed.fsdp import fully_shard

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=RANKS)
    cfg = _cfg(preset, "/tmp/unused")
    torch.manual_seed(cfg.seed)
    model = build_model(cfg.model).train()
    for layer in model.layers:
        fully_shard(layer)
    fully_shard(model)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.optimizer.lr, betas=(0.9, 0.95), weight_decay=0.1)
    batches = data_lib.batches(cfg.data, cfg.model.vocab_size, BATCH, BLOCK, cfg.seed)
    rows = slice(rank * BATCH // RANKS, (rank + 1) * BATCH // RANKS)
    t0 = 0.0
    for step in range(1, STEPS + 1):
        if step == WARMUP + 1:
            t0 = time.perf_counter()
        x, y = next(batches)
        loss = model(x[rows], y[rows])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step % 10 == 0:
            loss.item()
    if rank == 0:
        Path(result).write_text(str((STEPS - WARMUP) * BATCH * BLOCK / (time.perf_counter() - t0)))
    dist.destroy_process_group()


def plain_fsdp(preset: str) -> float:
    with tempfile.TemporaryDirectory() as out:
        result = str(Path(out) / "tps")
        mp.spawn(_plain_fsdp_rank, args=(preset, _port(), result), nprocs=RANKS, join=True)
        return float(Path(result).read_text())


def main() -> None:
    results: dict[str, object] = {}
    print(f"| model | ours tokens/s (median of {REPS}) | plain loop tokens/s | overhead |")
    print("| --- | ---: | ---: | ---: |")
    for preset in ("tiny-llama", "tiny-mixtral") if "single" in PARTS else ():
        a, b = [], []
        for _ in range(REPS):  # interleaved, so drift in machine load hits both alike
            a.append(ours(preset))
            b.append(plain(preset))
        ma, mb = statistics.median(a), statistics.median(b)
        results[preset] = {"ours": a, "plain": b}
        print(f"| {preset} | {ma:,.0f} | {mb:,.0f} | {(mb / ma - 1) * 100:+.1f}% |", flush=True)
    print(f"\n| model, {RANKS} gloo ranks | ours tokens/s (median of {FSDP_REPS}) | plain FSDP2 loop tokens/s "
          "| overhead |")
    print("| --- | ---: | ---: | ---: |")
    for preset in ("tiny-llama",) if "fsdp" in PARTS else ():
        a, b = [], []
        for _ in range(FSDP_REPS):
            a.append(ours_fsdp(preset))
            b.append(plain_fsdp(preset))
        ma, mb = statistics.median(a), statistics.median(b)
        results[f"{preset}-fsdp{RANKS}"] = {"ours": a, "plain": b}
        print(f"| {preset} | {ma:,.0f} | {mb:,.0f} | {(mb / ma - 1) * 100:+.1f}% |", flush=True)
    json_arg = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else "test-artifacts/bench/trainer.json"
    out = Path(json_arg)
    out.parent.mkdir(parents=True, exist_ok=True)
    results["config"] = {"reps": REPS, "steps": STEPS, "warmup": WARMUP, "batch": BATCH, "block": BLOCK,
                         "threads": torch.get_num_threads(), "torch": torch.__version__}
    out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
