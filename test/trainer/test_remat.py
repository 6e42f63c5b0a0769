"""Rematerialisation changes memory, never the maths: activation checkpointing per layer (plain
torch and torch_xla) and scan over layers (torch_xla) give the losses of the plain layer loop."""

import subprocess
import sys

import pytest

from _trainer_helpers import REPO, clean_env, read_metrics

COMMON = ["model=tiny-llama", "max_steps=3", "logging_steps=1", "global_batch_size=4", "block_size=32",
          "checkpoint.enabled=false", "seed=5", "optimizer.lr=1e-2", "num_threads=1"]


def _losses(tmp_path, name, extra, xla):
    out = tmp_path / name
    env = clean_env(**({"PJRT_DEVICE": "CPU"} if xla else {}))
    args = [*COMMON, *extra, f"output_dir={out}", "device=xla" if xla else "device=cpu"]
    proc = subprocess.run([sys.executable, "-m", "tpu_trainer.train", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return [r["loss"] for r in read_metrics(out)], proc.stdout


def test_checkpointing_on_plain_torch(tmp_path):
    base, _ = _losses(tmp_path, "none", [], xla=False)
    remat, out = _losses(tmp_path, "llama", ["model/remat=llama"], xla=False)
    assert "remat llama" in out
    assert remat == pytest.approx(base, rel=1e-6)


@pytest.mark.parametrize("remat", ["llama", "llama-scan"])
@pytest.mark.xla
def test_checkpointing_and_scan_on_xla(tmp_path, remat):
    base, _ = _losses(tmp_path, "none", [], xla=True)
    got, out = _losses(tmp_path, remat, [f"model/remat={remat}"], xla=True)
    assert f"remat {remat}" in out and "scan is an XLA feature" not in out
    assert got == pytest.approx(base, rel=1e-5)


def test_offload_off_tpu_says_so(tmp_path):
    _, out = _losses(tmp_path, "offload", ["model/remat=llama-scan-offload"], xla=False)
    assert "host offload is a torch_xla feature; activations stay in cpu memory" in out
    assert "scan is a torch_xla feature; the layers run in a loop" in out
