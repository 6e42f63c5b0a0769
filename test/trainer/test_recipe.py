"""recipes/tiny-llama.sh: shape of the file, and it runs with bash when the trainer is importable."""

import re
import subprocess

from _trainer_helpers import REPO, free_port, read_metrics

RECIPE = REPO / "recipes" / "tiny-llama.sh"


def test_recipe_shape():
    text = RECIPE.read_text()
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "PJRT_DEVICE" not in text  # the native path: torch_xla's variable would pick device=xla
    assert re.search(r"^export PYTHONUNBUFFERED=1$", text, re.M)
    # exactly one trainer command, its overrides on continuation lines
    commands = re.findall(r"^python3 -m tpu_trainer\.train \\$", text, re.M)
    assert len(commands) == 1
    body = text.split("python3 -m tpu_trainer.train \\\n", 1)[1]
    overrides = re.findall(r"^    (\S+=\S+) \\$", body, re.M)
    assert "model=tiny-llama" in overrides and "num_threads=1" in overrides
    assert "device=auto" in overrides and "nproc_per_node=2" in overrides


def test_recipe_runs_with_bash(tmp_path, sub_env):
    # Extra arguments are appended after the recipe's overrides (as TPU Workbench appends output_dir=):
    # two CPU ranks on this one host, FSDP2 over gloo, as on each of the emulator's workers.
    out = tmp_path / "out"
    p = subprocess.run(
        ["bash", str(RECIPE), "max_steps=3", f"coordinator_port={free_port()}", f"output_dir={out}"],
        cwd=REPO, env=sub_env, capture_output=True, text=True, timeout=300,
    )
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "model tiny-llama" in p.stdout and "summary status=ok steps=3" in p.stdout
    assert "mesh data=1 fsdp=2 tensor=1 expert=1" in p.stdout and "rank 0/2 (gloo)" in p.stdout
    assert [r["step"] for r in read_metrics(out)] == [1, 3]
