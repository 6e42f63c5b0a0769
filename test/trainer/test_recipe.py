"""recipes/tiny-llama.sh: shape of the file, and it runs with bash when the trainer is importable."""

import re
import subprocess

from _trainer_helpers import REPO, read_metrics

RECIPE = REPO / "recipes" / "tiny-llama.sh"


def test_recipe_shape():
    text = RECIPE.read_text()
    assert text.startswith("#!/usr/bin/env bash\n")
    assert re.search(r"^export PJRT_DEVICE=CPU$", text, re.M)
    assert re.search(r"^export PYTHONUNBUFFERED=1$", text, re.M)
    # exactly one trainer command, its overrides on continuation lines
    commands = re.findall(r"^python3 -m tpu_trainer\.train \\$", text, re.M)
    assert len(commands) == 1
    body = text.split("python3 -m tpu_trainer.train \\\n", 1)[1]
    overrides = re.findall(r"^    (\S+=\S+) \\$", body, re.M)
    assert "model=tiny-llama" in overrides and "num_threads=1" in overrides


def test_recipe_runs_with_bash(tmp_path, sub_env):
    # Extra arguments are appended after the recipe's overrides (as TPU Workbench
    # appends output_dir=); device=cpu keeps this test fast, test_xla covers XLA.
    out = tmp_path / "out"
    p = subprocess.run(
        ["bash", str(RECIPE), "max_steps=3", "device=cpu", f"output_dir={out}"],
        cwd=REPO, env=sub_env, capture_output=True, text=True, timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert "model tiny-llama" in p.stdout and "summary status=ok steps=3" in p.stdout
    assert [r["step"] for r in read_metrics(out)] == [1, 3]
