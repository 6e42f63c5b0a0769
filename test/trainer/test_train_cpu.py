"""In-process training on plain PyTorch CPU: learning, metrics.jsonl contract, summary, profile."""

import json
import math

import pytest

from _trainer_helpers import read_metrics, tiny_config
from tpu_trainer.metrics import flops_per_token
from tpu_trainer.train import train


@pytest.fixture(scope="module")
def run30(tmp_path_factory):
    """One 30-step run shared by the tests below (worker id 3, as on the 4th TPU host)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("TPU_WORKER_ID", "3")
    out = tmp_path_factory.mktemp("run30")
    try:
        summary = train(tiny_config(out, max_steps=30, logging_steps=5, global_batch_size=8, block_size=64))
    finally:
        mp.undo()
    return out, summary, read_metrics(out)


def test_loss_goes_down(run30):
    _, _, records = run30
    losses = [r["loss"] for r in records]
    first, last = sum(losses[:2]) / 2, sum(losses[-2:]) / 2
    # From ~ln(256)=5.55 to below 3.3 (byte entropy of English text) in 30 steps.
    assert first > 5.0, losses
    assert last < first - 2.0, losses


def test_metrics_jsonl_has_documented_fields(run30):
    out, _, records = run30
    assert [r["step"] for r in records] == [1, 5, 10, 15, 20, 25, 30]
    # Which fields, of which types: test_metrics_schema.py, against the record's one schema. Here: the values.
    for r in records:
        assert math.isfinite(r["loss"]) and r["lr"] > 0
        assert r["step_time_s"] > 0 and r["tokens_per_s"] > 0
        assert r["mfu"] is None  # CPU: peak FLOP/s unknown, documented as null
        assert r["mem_bytes"] > 10 * 2**20 and r["mem_kind"] == "host_rss"
        assert r["worker"] == 3 and r["device"] == "cpu" and r["compiles"] is None
        assert r["tokens"] == r["step"] * 8 * 64
        assert r["grad_norm"] > 0
    # The warmup peak is reached at step 10 and the cosine decays after it.
    lrs = {r["step"]: r["lr"] for r in records}
    assert lrs[10] == pytest.approx(1e-2) and lrs[30] < lrs[20] < lrs[10]
    # each line is one object: a tail -f reader can parse line by line
    assert all(line.startswith("{") for line in (out / "metrics.jsonl").read_text().splitlines())


def test_summary_written(run30):
    out, summary, records = run30
    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk["status"] == "ok" and on_disk["steps"] == 30
    assert on_disk["final_loss"] == pytest.approx(records[-1]["loss"])
    assert summary["worker"] == 3 and summary["tokens_per_s"] > 0


def test_mfu_uses_configured_peak(tmp_path):
    cfg = tiny_config(tmp_path, max_steps=3, logging_steps=1, peak_flops_per_device=1e12)
    train(cfg)
    for r in read_metrics(tmp_path):
        expected = r["tokens_per_s"] * flops_per_token(cfg.model, cfg.block_size) / 1e12
        assert r["mfu"] == pytest.approx(expected, rel=1e-9)
        assert 0 < r["mfu"] < 1


def test_torch_profile_written(tmp_path):
    summary = train(tiny_config(tmp_path, max_steps=4, profile_step=2, profile_steps=2))
    traces = list((tmp_path / "profile" / "plugins" / "profile").glob("*/*.pt.trace.json"))
    assert len(traces) == 1 and summary["profile"] == str(traces[0])
    events = json.loads(traces[0].read_text())["traceEvents"]
    # One step annotation per profiled step: where the Profiles tab and `tpw profile` take steps from.
    steps = sorted(e["name"] for e in events
                   if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#"))
    assert steps == ["ProfilerStep#0", "ProfilerStep#1"]


def test_same_seed_same_run_other_seed_differs(tmp_path):
    a = train(tiny_config(tmp_path / "a", max_steps=3, seed=7))["final_loss"]
    b = train(tiny_config(tmp_path / "b", max_steps=3, seed=7))["final_loss"]
    c = train(tiny_config(tmp_path / "c", max_steps=3, seed=8))["final_loss"]
    assert a == b and a != c


def test_tiny_mixtral_loss_falls(tmp_path):
    from _trainer_helpers import compose

    cfg = compose(["model=tiny-mixtral", "device=cpu", "num_threads=1", "max_steps=30", "logging_steps=5",
                   "global_batch_size=8", "block_size=64", "optimizer.lr=1e-2", "checkpoint.enabled=false",
                   f"output_dir={tmp_path}"])
    train(cfg)
    losses = [r["loss"] for r in read_metrics(tmp_path)]
    assert losses[-1] < losses[0] - 1.0, losses


def test_profile_duration_bounds_the_capture_in_time(tmp_path):
    # 1 ms from step 2: the capture ends at the first step boundary after, i.e. it covers step 2 only,
    # where profile_steps=50 alone would have run to the end.
    from pathlib import Path

    def matmuls(summary):
        trace = json.loads(Path(summary["profile"]).read_text())
        return sum(1 for e in trace["traceEvents"] if e.get("name") in ("aten::mm", "aten::addmm", "aten::bmm"))

    short = train(tiny_config(tmp_path / "a", max_steps=6, profile_step=2, profile_steps=50, profile_duration=1))
    long = train(tiny_config(tmp_path / "b", max_steps=6, profile_step=2, profile_steps=4))
    assert matmuls(short) > 0 and matmuls(short) * 3 < matmuls(long), (matmuls(short), matmuls(long))


@pytest.mark.xla
def test_failed_xla_run_still_writes_the_metrics_report(tmp_path):
    from _trainer_helpers import clean_env, run_trainer

    out = tmp_path / "run"
    proc = run_trainer(["max_steps=2", "checkpoint.dir=/proc/tpw-not-writable", f"output_dir={out}"],
                       clean_env(PJRT_DEVICE="CPU"), timeout=300)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "/proc/tpw-not-writable" in proc.stderr
    report = out / "xla_metrics.txt"
    assert report.exists() and "Metric:" in report.read_text() and f"xla metrics report: {report}" in proc.stderr


def test_compiled_layers_train_as_eager(tmp_path):
    """compile=true (torch.compile of each decoder layer, inductor on CPU) runs the same steps as eager: the
    first loss is the same model's on the same batch, and the curve stays with eager's (inductor fuses and
    reorders float ops, so not bit for bit: 1e-4 relative is far below a step's change of the loss)."""
    import torch._dynamo

    def run(name: str, **extra) -> list[float]:
        cfg = tiny_config(tmp_path / name, max_steps=3, logging_steps=1, global_batch_size=2, block_size=16, **extra)
        cfg.checkpoint.enabled = False
        train(cfg)
        return [r["loss"] for r in read_metrics(tmp_path / name)]

    eager = run("eager")
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    compiled = run("compiled", compile=True)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] >= 1, "a layer was compiled"
    assert len(compiled) == 3 and compiled == pytest.approx(eager, rel=1e-4)
    torch._dynamo.reset()
