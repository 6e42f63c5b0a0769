"""scripts/python-env.sh: the parts that can be checked without building a venv
(building one takes minutes and GBs; the lead's CI runs the script itself)."""

import json
import re
import subprocess

from _trainer_helpers import REPO

SCRIPT = REPO / "scripts" / "python-env.sh"
REQ = REPO / "trainer" / "requirements.txt"


def test_script_syntax():
    assert subprocess.run(["bash", "-n", str(SCRIPT)]).returncode == 0


def test_rejects_unknown_mode(tmp_path):
    p = subprocess.run(
        ["bash", str(SCRIPT)], env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TPW_TORCH_INSTALL": "fast",
                                    "TPW_VENV": str(tmp_path / "v")},
        capture_output=True, text=True,
    )
    assert p.returncode == 2 and "lean or full" in p.stderr
    assert not (tmp_path / "v").exists()


def test_requirements_are_pinned_and_split_cleanly():
    lines = [x.strip() for x in REQ.read_text().splitlines() if x.strip() and not x.startswith("#")]
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+==[\w.]+", x) for x in lines), lines
    torch_pins = [x for x in lines if re.match(r"^(torch|torch_xla)==", x)]
    assert torch_pins == ["torch==2.9.0", "torch_xla==2.9.0"]
    assert "hydra-core==1.3.8" in lines
    assert not any(x.lower().startswith(("nvidia-", "triton")) for x in lines)


def test_check_tools_are_pinned_installed_and_run_in_ci():
    checks = REPO / "trainer" / "requirements-checks.txt"
    lines = [x.strip() for x in checks.read_text().splitlines() if x.strip() and not x.startswith("#")]
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+==[\w.]+", x) for x in lines), lines
    assert {x.split("==")[0] for x in lines} >= {"ruff", "mypy"}
    assert "requirements-checks.txt" in SCRIPT.read_text()
    # CI runs the checks before the trainer's tests, and a finding fails the step.
    test_all = (REPO / "scripts" / "test-all.sh").read_text()
    assert test_all.index("step python-checks npm run -s check:python") < test_all.index("step trainer ")
    scripts = json.loads((REPO / "package.json").read_text())["scripts"]
    assert scripts["check:python"] == "bash scripts/python-checks.sh"
    assert "exit $status" in (REPO / "scripts" / "python-checks.sh").read_text()
