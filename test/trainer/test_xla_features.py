"""On XLA:CPU: cut cross-entropy and Muon trace and match plain PyTorch; a checkpoint
written on XLA resumes on XLA; logging goes through step closures (every step arrives)."""

import pytest

from _trainer_helpers import clean_env, read_metrics, run_trainer, tiny_config
from tpu_trainer.train import train

pytestmark = pytest.mark.xla

COMMON = ["global_batch_size=4", "block_size=32", "num_threads=1", "logging_steps=1", "optimizer=muon",
          "optimizer.lr=1e-2", "loss=cut_cross_entropy", "loss.chunk_elems=10240", "scheduler.name=constant",
          "scheduler.warmup_steps=0"]


def test_xla_cce_muon_checkpoint_resume(tmp_path):
    env = clean_env(PJRT_DEVICE="CPU", XLA_FLAGS="--xla_cpu_multi_thread_eigen=false "
                    "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true")
    out = tmp_path / "xla"
    a = run_trainer([*COMMON, "max_steps=3", f"output_dir={out}"], env, timeout=400)
    assert a.returncode == 0, a.stdout[-3000:] + a.stderr[-3000:]
    assert "device xla:CPU" in a.stdout and (out / "checkpoints" / "step_00000003" / ".complete").exists()
    b = run_trainer([*COMMON, "max_steps=5", "resume=auto", f"output_dir={out}"], env, timeout=400)
    assert b.returncode == 0, b.stdout[-3000:] + b.stderr[-3000:]
    assert "at step 3" in b.stdout
    records = read_metrics(out)
    assert [r["step"] for r in records] == [1, 2, 3, 4, 5] and all(r["device"] == "xla:CPU" for r in records)
    # the resumed process compiles its step graph once and never again
    assert len({r["compiles"] for r in records[3:]}) == 1

    cfg = tiny_config(tmp_path / "cpu", max_steps=5, logging_steps=1, global_batch_size=4, block_size=32)
    cfg.optimizer.name, cfg.loss.name, cfg.loss.chunk_elems = "muon", "cut_cross_entropy", 10240
    cfg.scheduler.name, cfg.scheduler.warmup_steps = "constant", 0
    train(cfg)
    cpu = [r["loss"] for r in read_metrics(tmp_path / "cpu")]
    assert [r["loss"] for r in records] == pytest.approx(cpu, abs=2e-3)
