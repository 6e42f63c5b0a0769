"""Sharded save on a 4-device XLA:CPU mesh (4x1) and load onto a different mesh shape (2x2)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from _trainer_helpers import REPO, clean_env

pytestmark = pytest.mark.xla

WORKER = Path(__file__).parent / "spmd_ckpt_worker.py"


def _run(mode, mesh, ckpt, out):
    env = clean_env(PJRT_DEVICE="CPU", CPU_NUM_DEVICES="4")
    p = subprocess.run([sys.executable, str(WORKER), mode, mesh, str(ckpt), str(out)], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-4000:]
    return json.loads(Path(out).read_text())


def test_spmd_save_4x1_load_2x2_reshards(tmp_path):
    saved = _run("save", "4x1", tmp_path / "ckpt", tmp_path / "save.json")
    loaded = _run("load", "2x2", tmp_path / "ckpt", tmp_path / "load.json")
    assert saved["sharding"].startswith("{devices=[4,1]") and loaded["sharding"].startswith("{devices=[2,2]")
    assert ".complete" in saved["files"] and ".metadata" in saved["files"]
    # the loading model was initialised with another seed: equal sums mean the values came from the checkpoint
    assert loaded["params"] == saved["params"]
    assert loaded["exp_avg_q"] == saved["exp_avg_q"] != 0.0
    assert loaded["step"] == saved["step"] == 1 and loaded["lr"] == saved["lr"]
    assert loaded["next_batch"] == saved["next_batch"]  # the data position travels with it


def test_spmd_async_save_snapshots_before_training_goes_on(tmp_path):
    saved = _run("save-async", "4x1", tmp_path / "ckpt", tmp_path / "save.json")
    loaded = _run("load", "2x2", tmp_path / "ckpt", tmp_path / "load.json")
    assert ".complete" in saved["files"] and ".metadata" in saved["files"]
    # the model trained on while the writer ran; the checkpoint holds the state of the save
    assert saved["params_after"] != saved["params"]
    assert loaded["params"] == saved["params"] and loaded["exp_avg_q"] == saved["exp_avg_q"]
    assert loaded["next_batch"] == saved["next_batch"] and loaded["step"] == 1
