"""Optional writers (TensorBoard, W&B): used when installed, otherwise disabled with a
clear message and the run goes on; metrics.jsonl is kept across a resume."""

import json
from typing import Any

import pytest

from _trainer_helpers import read_metrics, tiny_config
from tpu_trainer.metrics import MetricsWriter
from tpu_trainer.train import train


def test_tensorboard_and_wandb_for_real(tmp_path, monkeypatch):
    """Both libraries installed (trainer/requirements.txt), W&B offline: what they wrote, read back with
    their own readers, is what metrics.jsonl says."""
    monkeypatch.setenv("WANDB_SILENT", "true")
    cfg = tiny_config(tmp_path, max_steps=3, logging_steps=1)
    cfg.logging.tensorboard = True
    cfg.logging.wandb = True
    cfg.checkpoint.enabled = False
    summary = train(cfg)
    assert summary["logging_disabled"] is None
    records = read_metrics(tmp_path)
    assert [r["step"] for r in records] == [1, 2, 3]

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(tmp_path / "tb"))
    acc.Reload()
    assert {"loss", "lr", "tokens_per_s", "grad_norm"} <= set(acc.Tags()["scalars"])
    events = acc.Scalars("loss")
    assert [e.step for e in events] == [1, 2, 3]
    assert [e.value for e in events] == pytest.approx([r["loss"] for r in records], rel=1e-6)

    # The offline run's record file is what `wandb sync` uploads; W&B's Go core writes it and the Python
    # package no longer ships a reader, but each history item carries its value as a JSON string.
    (run,) = (tmp_path / "wandb").glob("offline-run-*")
    (records_file,) = run.glob("run-*.wandb")
    raw = records_file.read_bytes()
    for r in records:
        assert json.dumps(r["loss"]).encode() in raw and json.dumps(r["lr"]).encode() in raw, r


def test_missing_writer_package_is_named_and_the_run_goes_on(tmp_path, capsys, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_wandb(name, *args, **kwargs):
        if name == "wandb" or name.startswith("wandb."):
            raise ImportError("No module named 'wandb'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_wandb)
    cfg = tiny_config(tmp_path, max_steps=2, logging_steps=1)
    cfg.logging.wandb = True
    cfg.checkpoint.enabled = False
    summary = train(cfg)
    assert "logging.wandb=true but the wandb package is not installed" in capsys.readouterr().err
    assert summary["logging_disabled"] == ["wandb"] and [r["step"] for r in read_metrics(tmp_path)] == [1, 2]


def test_metrics_writer_keeps_records_up_to_resume_step(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps({"step": s, "loss": 1.0}) + "\n" for s in range(1, 8)) + '{"step": 8, "lo')
    w = MetricsWriter(path, keep_until_step=5)
    w.write({"step": 6, "loss": 2.0})
    w.close()
    assert [json.loads(line)["step"] for line in path.read_text().splitlines()] == [1, 2, 3, 4, 5, 6]
    MetricsWriter(path).close()  # a fresh run truncates
    assert path.read_text() == ""


def test_metrics_writer_echoes_records_for_a_pod_log(tmp_path, monkeypatch, capsys):
    """On GKE (TPW_METRICS_ECHO set) each record also goes to stdout after the prefix, exactly as written to the file:
    the run view reads a pod's metrics from its log (extension/src/core/run/gke-follow.ts)."""
    monkeypatch.setenv("TPW_METRICS_ECHO", "tpw-metric ")
    path = tmp_path / "metrics.jsonl"
    w = MetricsWriter(path)
    w.write({"step": 1, "loss": 2.5})
    w.close()
    echoed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("tpw-metric ")]
    assert [line.removeprefix("tpw-metric ") for line in echoed] == path.read_text().splitlines()
    monkeypatch.delenv("TPW_METRICS_ECHO")
    MetricsWriter(tmp_path / "quiet.jsonl").write({"step": 1, "loss": 1.0})
    assert "tpw-metric" not in capsys.readouterr().out


def test_writers_call_tensorboard_and_wandb_apis(tmp_path, monkeypatch):
    """The glue to both libraries, against stand-ins that record calls (neither package is a dependency)."""
    import sys
    import types

    from tpu_trainer import backends
    from tpu_trainer.config import LoggingConfig
    from tpu_trainer.loggers import StepLogger

    calls: list[tuple[Any, ...]] = []

    class SummaryWriter:
        def __init__(self, log_dir):
            calls.append(("tb_init", log_dir))

        def add_scalar(self, key, value, step):
            calls.append(("tb", key, value, step))

        def flush(self):
            pass

        def close(self):
            calls.append(("tb_close",))

    class Run:
        def log(self, data, step):
            calls.append(("wandb", data, step))

        def finish(self):
            calls.append(("wandb_finish",))

    def init(**kw):
        calls.append(("wandb_init", kw))
        return Run()

    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", types.SimpleNamespace(SummaryWriter=SummaryWriter))
    monkeypatch.setitem(sys.modules, "wandb", types.SimpleNamespace(init=init))
    import torch

    logger = StepLogger(tmp_path, LoggingConfig(tensorboard=True, wandb=True, wandb_project="p"),
                        backend=backends.select("cpu"),
                        run_config={"seed": 1})
    logger.log({"step": 7, "loss": torch.tensor(2.5), "lr": 0.1, "device": "cpu"})
    logger.close()
    assert ("tb_init", str(tmp_path / "tb")) in calls
    assert ("tb", "loss", 2.5, 7) in calls and ("tb", "lr", 0.1, 7) in calls
    init_kw = next(c[1] for c in calls if c[0] == "wandb_init")
    assert init_kw["mode"] == "offline" and init_kw["project"] == "p" and init_kw["config"] == {"seed": 1}
    assert ("wandb", {"loss": 2.5, "lr": 0.1, "device": "cpu"}, 7) in calls
    assert ("tb_close",) in calls and ("wandb_finish",) in calls
    assert [json.loads(x)["loss"] for x in (tmp_path / "metrics.jsonl").read_text().splitlines()] == [2.5]
