"""The hydra entry point as a subprocess: overrides, outputs, and errors that name the key."""

import json
import re

import yaml

from _trainer_helpers import run_trainer


def test_entry_point_runs_with_overrides(tmp_path, sub_env):
    out = tmp_path / "run"
    sub_env["TPU_WORKER_ID"] = "2"
    p = run_trainer(
        ["model=tiny-llama", "max_steps=4", "logging_steps=2", "global_batch_size=2", "block_size=16",
         "device=cpu", "optimizer.lr=5e-3", "model.num_hidden_layers=1", f"output_dir={out}"],
        sub_env,
    )
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("tpu_trainer: worker 2 device cpu")
    steps = [int(m.group(1)) for m in map(re.compile(r"^step (\d+) loss [\d.]+ lr ").match, lines) if m]
    assert steps == [1, 2, 4]
    assert lines[-1].startswith("summary status=ok steps=4 ")
    records = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2, 4] and records[0]["worker"] == 2
    # hydra recorded the composed config next to the metrics
    composed = yaml.safe_load((out / ".hydra" / "config.yaml").read_text())
    assert composed["model"]["num_hidden_layers"] == 1 and composed["optimizer"]["lr"] == 5e-3
    assert abs(records[0]["lr"] - 5e-3 / 10) < 1e-12  # warmup step 1 of 10


def test_unknown_key_is_named_with_suggestion(tmp_path, sub_env):
    p = run_trainer(["max_step=20", f"output_dir={tmp_path}"], sub_env)
    assert p.returncode == 2
    assert "unknown config key 'max_step'" in p.stderr and "did you mean 'max_steps'" in p.stderr
    assert not (tmp_path / "metrics.jsonl").exists()


def test_wrong_type_is_named(tmp_path, sub_env):
    p = run_trainer(["max_steps=abc", f"output_dir={tmp_path}"], sub_env)
    assert p.returncode != 0
    assert "max_steps" in p.stderr and "abc" in p.stderr


def test_bad_value_is_named(tmp_path, sub_env):
    p = run_trainer(["device=gpu", f"output_dir={tmp_path}"], sub_env)
    assert p.returncode == 2
    assert "config error: device='gpu' is not one of: auto, tpu, cuda, cpu, xla" in p.stderr


def test_model_group_and_cfg_job(sub_env):
    p = run_trainer(["--cfg", "job", "model=mixtral-8x7b", "global_batch_size=256"], sub_env)
    assert p.returncode == 0, p.stderr
    cfg = yaml.safe_load(p.stdout)
    assert cfg["model"]["name"] == "mixtral-8x7b" and cfg["model"]["num_local_experts"] == 8
    assert cfg["global_batch_size"] == 256


def test_sigint_stops_cleanly(tmp_path, sub_env):
    """TPU Workbench stops a run with SIGINT: the trainer finishes its files and exits 130."""
    import signal
    import subprocess
    import sys
    import time

    from _trainer_helpers import REPO

    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tpu_trainer.train", "max_steps=1000000", "logging_steps=1", "device=cpu",
         "global_batch_size=2", "block_size=16", f"output_dir={out}"],
        cwd=REPO, env=sub_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    metrics = out / "metrics.jsonl"
    deadline = time.time() + 600  # an upper bound: the loop ends at the third record
    while time.time() < deadline and not (metrics.exists() and metrics.read_text().count("\n") >= 3):
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 130, stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "interrupted" and 3 <= summary["steps"] < 1000000
    assert "summary status=interrupted" in stdout
    assert all(json.loads(line) for line in metrics.read_text().splitlines())  # no torn last line


def test_a_bad_override_is_refused_before_torch_loads(sub_env):
    """`python -m tpu_trainer.train` checks the override line before importing torch (seconds on a busy host)."""
    import subprocess
    import sys

    from _trainer_helpers import REPO

    probe = ("import runpy, sys\n"
             "sys.argv = ['train', 'max_step=20']\n"
             "try:\n    runpy.run_module('tpu_trainer.train', run_name='__main__', alter_sys=True)\n"
             "except SystemExit as e:\n    print('exit', e.code, 'torch' in sys.modules)\n")
    p = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=sub_env, capture_output=True, text=True,
                       timeout=120)
    assert p.stdout.strip() == "exit 2 False", p.stdout + p.stderr[-2000:]
    assert "did you mean 'max_steps'" in p.stderr


def test_sigint_before_the_first_step_is_one_line(monkeypatch, capsys):
    """A Stop while the model is built or compiled (before train()'s loop): exit 130 and one line, no traceback."""
    import pytest

    from tpu_trainer import train

    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(train, "_hydra_entry", interrupted)
    monkeypatch.setattr("sys.argv", ["tpu_trainer.train", "model=tiny-llama"])
    with pytest.raises(SystemExit) as stop:
        train.main()
    assert stop.value.code == 130
    err = capsys.readouterr().err
    assert err == "stopped by SIGINT before training started\n"
    assert stop.value.__suppress_context__, "no KeyboardInterrupt traceback chained to the exit"
