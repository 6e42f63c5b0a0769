"""The torch_xla path on XLA:CPU (PJRT_DEVICE=CPU): same numbers as plain PyTorch,
no recompilation after step 1, metrics report and xplane profile written."""

import json

import pytest

from _trainer_helpers import clean_env, read_metrics, run_trainer, tiny_config
from tpu_trainer.train import train

pytestmark = pytest.mark.xla

ARGS = ["max_steps=5", "logging_steps=1", "global_batch_size=4", "block_size=32", "optimizer.lr=1e-2",
        "scheduler.warmup_steps=10", "num_threads=1"]


@pytest.fixture(scope="module")
def xla_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("xla")
    # The recipe's XLA:CPU flags: single-threaded ops, cheap LLVM optimisation (compile time dominates).
    env = clean_env(
        PJRT_DEVICE="CPU",
        XLA_FLAGS="--xla_cpu_multi_thread_eigen=false --xla_backend_optimization_level=0 "
        "--xla_llvm_disable_expensive_passes=true",
    )
    # device=auto: PJRT_DEVICE set and torch_xla importable -> the XLA path
    p = run_trainer([*ARGS, f"output_dir={out}", "profile_step=3", "profile_steps=1"], env, timeout=400)
    return out, p


def test_xla_run_succeeds_on_xla_device(xla_run):
    out, p = xla_run
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "device xla:CPU" in p.stdout.splitlines()[0]
    records = read_metrics(out)
    assert [r["step"] for r in records] == [1, 2, 3, 4, 5]
    assert all(r["device"] == "xla:CPU" for r in records)


def test_xla_matches_plain_torch(xla_run, tmp_path):
    """Same init (built on the host, then moved) and same batches: the losses agree."""
    out, _ = xla_run
    xla_losses = [r["loss"] for r in read_metrics(out)]
    cpu_cfg = tiny_config(tmp_path, max_steps=5, logging_steps=1, global_batch_size=4, block_size=32)
    train(cpu_cfg)
    cpu_losses = [r["loss"] for r in read_metrics(tmp_path)]
    assert xla_losses == pytest.approx(cpu_losses, abs=2e-3)


def test_xla_compiles_once(xla_run):
    """One compile for the optimizer-state init and one for the step, and none after step 1:
    the optimizer state is created before step 1 and the lr never hits a special scalar."""
    out, _ = xla_run
    compiles = [r["compiles"] for r in read_metrics(out)]
    assert compiles[0] <= 2 and len(set(compiles)) == 1, compiles
    report = (out / "xla_metrics.txt").read_text()
    assert "CompileTime" in report and "ExecuteTime" in report
    summary = json.loads((out / "summary.json").read_text())
    assert summary["xla_metrics"] == str(out / "xla_metrics.txt")


def test_xla_unlogged_steps_run_the_same_graph(tmp_path):
    """Steps that log nothing (2 and 3 here) must trace the graph the logged ones do: the
    loss and grad norm stay live through the sync, so no third graph is compiled."""
    env = clean_env(
        PJRT_DEVICE="CPU",
        XLA_FLAGS="--xla_cpu_multi_thread_eigen=false --xla_backend_optimization_level=0 "
        "--xla_llvm_disable_expensive_passes=true",
    )
    args = [a for a in ARGS if not a.startswith(("max_steps=", "logging_steps="))]
    p = run_trainer([*args, "max_steps=5", "logging_steps=4", f"output_dir={tmp_path}"], env, timeout=400)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    records = read_metrics(tmp_path)
    assert [r["step"] for r in records] == [1, 4, 5]
    assert len({r["compiles"] for r in records}) == 1, [(r["step"], r["compiles"]) for r in records]


def test_xla_profile_in_tensorboard_layout(xla_run):
    out, _ = xla_run
    planes = list((out / "profile" / "plugins" / "profile").glob("*/*.xplane.pb"))
    assert len(planes) == 1 and planes[0].stat().st_size > 1000
    # The profiled step is marked as torch_xla's StepTrace marks one (a TraceMe train_step with the
    # stats _r and step_num), so that xprof, and tpw profile, find the capture's steps:
    # test/fixtures/profiles/real/cpu/cpu-trainer-torch-xla.* compares the two on such a capture.
    data = planes[0].read_bytes()
    assert all(name in data for name in (b"train_step", b"step_num", b"_r")), "no step marker in the capture"
