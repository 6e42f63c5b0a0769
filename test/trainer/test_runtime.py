"""The TPU runtime the trainer expects on a VM: TPU7x accelerator types read as torch_xla reads them,
and a torch_xla that does not know TPU7x chips refused before it fails far from the cause."""

import subprocess
import sys

import pytest

from _trainer_helpers import REPO, clean_env
from tpu_trainer import runtime
from tpu_trainer.metrics import peak_flops


@pytest.fixture
def xla_tpu():
    """torch_xla's TPU module: imported here, in the legacy venv's tests only (the trainer's venv has no torch_xla)."""
    from torch_xla._internal import tpu

    return tpu


@pytest.mark.parametrize("accel", ["tpu7x-8", "tpu7x-16", "tpu7x-256", "v6e-8", "v5p-128", "v5litepod-16", "v4-8"])
@pytest.mark.xla
def test_generation_agrees_with_torch_xla(monkeypatch, accel, xla_tpu):
    """torch_xla's own parser of TPU_ACCELERATOR_TYPE (the real thing) gives the generation number we imply."""
    monkeypatch.setattr(xla_tpu, "get_tpu_env", lambda: {"ACCELERATOR_TYPE": accel})
    gen = runtime.generation(accel)
    assert gen is not None
    assert xla_tpu.version() == int(gen.lstrip("tpuv")[0])
    assert runtime.is_tpu7x({"TPU_ACCELERATOR_TYPE": accel}) == (xla_tpu.version() == 7)


@pytest.mark.xla
def test_the_installed_torch_xla_knows_tpu7x(xla_tpu):
    assert runtime.TPU7X_PCI_DEVICE_ID in xla_tpu._TPU_PCI_DEVICE_IDS
    assert runtime.check({"TPU_ACCELERATOR_TYPE": "tpu7x-8"}, "2.9.0", xla_tpu._TPU_PCI_DEVICE_IDS) == []


@pytest.mark.xla
def test_an_older_torch_xla_on_tpu7x_is_named(xla_tpu):
    older = [i for i in xla_tpu._TPU_PCI_DEVICE_IDS if i != runtime.TPU7X_PCI_DEVICE_ID]
    problems = runtime.check({"TPU_ACCELERATOR_TYPE": "tpu7x-8"}, "2.5.1", older)
    assert len(problems) == 1
    assert "TPU7x (TPU_ACCELERATOR_TYPE=tpu7x-8)" in problems[0] and "torch_xla 2.5.1" in problems[0]
    assert runtime.check({"TPU_ACCELERATOR_TYPE": "v6e-8"}, "2.5.1", older) == []  # v6e is known to it


def test_mfu_peak_from_the_tpu7x_accelerator_type():
    """On TPU the backend's device kind is TPU_ACCELERATOR_TYPE: a TPU7x VM's 8 devices get half a chip each."""
    assert peak_flops("tpu7x-8") == 2307e12 / 2


@pytest.mark.xla
def test_the_trainer_refuses_an_unknown_tpu7x_before_starting(tmp_path):
    """The check runs where the XLA backend is chosen: a torch_xla without TPU7x, made so by removing its
    id for this process only, stops the run with the sentence (no TPU here, so nothing else could say it)."""
    code = (
        "import sys; from torch_xla._internal import tpu; tpu._TPU_PCI_DEVICE_IDS.remove('0x0076');"
        "from tpu_trainer.train import main; main()"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "device=xla", "max_steps=1", f"output_dir={tmp_path}"],
        cwd=REPO, env=clean_env(PJRT_DEVICE="TPU", TPU_ACCELERATOR_TYPE="tpu7x-8"),
        capture_output=True, text=True, timeout=180,
    )
    assert proc.returncode != 0
    assert "this VM is a TPU7x (TPU_ACCELERATOR_TYPE=tpu7x-8) but the installed torch_xla" in proc.stderr, \
        proc.stderr[-2000:]
