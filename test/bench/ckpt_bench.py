"""Checkpoint save/restore time for a model state of N parameters on CPU, sync vs async.

    python test/bench/ckpt_bench.py                    # 1e9 fp32 parameters (4 GB), under /tmp
    python test/bench/ckpt_bench.py --params 5e7 --dir /tmp/ck --json /tmp/ckpt.json

Uses the trainer's Checkpointer (DCP FileSystemWriter, atomic rename, keep-last-K).
"blocked" is the time save() holds the training loop: the whole write for a sync
save; for an async save only the copy of the state into host memory (the write
then runs on a background thread; "total" is until it is committed). Each mode
saves twice and reports the second save (a run's steady state); the first async
save also allocates the host staging buffers and is reported as well. Restore is
dcp.load into a preallocated state of the same layout.
"""

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[2] / "trainer"))

import torch  # noqa: E402

from tpu_trainer.checkpoint import Checkpointer  # noqa: E402
from tpu_trainer.config import CheckpointConfig  # noqa: E402


def make_state(n_params: int, width: int = 4096) -> dict:
    # Llama-like: a few dozen large matrices (rows x 4096), fp32.
    rows = 4096
    per = rows * width
    n = max(1, round(n_params / per))
    return {"model": {f"layers.{i}.weight": torch.randn(rows, width) for i in range(n)}, "step": torch.tensor(1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--params", type=float, default=1e9)
    ap.add_argument("--dir", default="/tmp/tpw-ckpt-bench")
    ap.add_argument("--json")
    a = ap.parse_args()
    state = make_state(int(a.params))
    n = sum(t.numel() for t in state["model"].values())
    gib = n * 4 / 2**30
    shutil.rmtree(a.dir, ignore_errors=True)
    results = {"params": n, "gib": gib}
    for mode in ("sync", "async"):
        # Two saves: the first async one also allocates its host staging buffers; the
        # second (every later save of a run) reuses them. The figure is the second.
        ck = Checkpointer(CheckpointConfig(async_save=mode == "async", keep=1), f"{a.dir}/{mode}")
        for step in (1, 2):
            t0 = time.perf_counter()
            ck.save(step, state)
            blocked = time.perf_counter() - t0
            ck.wait()
            total = time.perf_counter() - t0
            results[mode if step == 2 else f"{mode}_first"] = {"blocked_s": blocked, "total_s": total}
        ck.close()
    ck = Checkpointer(CheckpointConfig(), f"{a.dir}/sync")
    template = {"model": {k: torch.empty_like(v) for k, v in state["model"].items()}, "step": torch.tensor(0)}
    t0 = time.perf_counter()
    latest = ck.latest()
    assert latest is not None, "the sync checkpoints saved above are gone"
    loaded = ck.load(latest, template)
    results["restore_s"] = time.perf_counter() - t0
    assert all(torch.equal(loaded["model"][k], v) for k, v in state["model"].items())
    print(f"params {n / 1e9:.3f}B ({gib:.2f} GiB fp32)  sync save: blocked {results['sync']['blocked_s']:.2f}s  "
          f"async save: blocked {results['async']['blocked_s']:.2f}s "
          f"(written after {results['async']['total_s']:.2f}s; "
          f"first save {results['async_first']['blocked_s']:.2f}s)"
          f"  restore {results['restore_s']:.2f}s  blocked ratio async/sync "
          f"{results['async']['blocked_s'] / results['sync']['blocked_s']:.3f}", flush=True)
    shutil.rmtree(a.dir, ignore_errors=True)
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
