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
    torch_pins = [x for x in lines if re.match(r"^(torch|torch_xla|torch_tpu)==", x)]
    assert torch_pins == ["torch==2.11.0"]  # the oldest torch TorchTPU supports; torch_xla has its own venv
    assert "hydra-core==1.3.8" in lines
    assert not any(x.lower().startswith(("nvidia-", "triton")) for x in lines)


def test_torch_tpu_and_torch_xla_pins_fit_their_torch():
    """torch_tpu 0.2.0 supports torch 2.11 to 2.15; torch_xla 2.9.0 pins torch 2.9.0: two venvs."""
    tpu = (REPO / "trainer" / "requirements-tpu.txt").read_text()
    assert re.search(r"^torch_tpu==0\.2\.0$", tpu, re.M) and re.search(r"^libtpu==0\.0\.5\d$", tpu, re.M)
    xla = [x for x in (REPO / "trainer" / "requirements-xla.txt").read_text().splitlines() if x and x[0] != "#"]
    assert xla == ["torch==2.9.0", "torch_xla==2.9.0"]
    script = SCRIPT.read_text()
    # the wheel and the legacy venv are test-time installs: only test_tools() installs them, and only
    # TPW_PYTHON_ENV=all (what `npm test` runs) calls it; the demo's runtime install has neither
    tools = script[script.index("test_tools() {"):]
    tools = tools[:tools.index("\n}\n")]
    assert "install_xla" in tools and "install_torch_tpu" in tools
    calls = [line.strip() for line in script.splitlines()
             if "test_tools" in line and "() {" not in line and not line.lstrip().startswith("#")]
    assert calls and all(c.startswith('[[ "$SCOPE" == all ]] && test_tools') for c in calls), calls


def test_rejects_unknown_scope(tmp_path):
    p = subprocess.run(
        ["bash", str(SCRIPT)], env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TPW_PYTHON_ENV": "demo",
                                    "TPW_VENV": str(tmp_path / "v")},
        capture_output=True, text=True,
    )
    assert p.returncode == 2 and "runtime or all" in p.stderr
    assert not (tmp_path / "v").exists()


def test_check_tools_are_pinned_installed_and_run_in_ci():
    checks = REPO / "trainer" / "requirements-checks.txt"
    lines = [x.strip() for x in checks.read_text().splitlines() if x.strip() and not x.startswith("#")]
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+==[\w.]+", x) for x in lines), lines
    assert {x.split("==")[0] for x in lines} >= {"ruff", "mypy"}
    assert "requirements-checks.txt" in SCRIPT.read_text()
    # CI runs the checks before the trainer's tests, and a finding fails the step.
    test_all = (REPO / "scripts" / "test-all.sh").read_text()
    assert test_all.index("step python-checks npm run -s check:python") < test_all.index("step trainer-main ")
    scripts = json.loads((REPO / "package.json").read_text())["scripts"]
    assert scripts["check:python"] == "bash scripts/python-checks.sh"
    assert "exit $status" in (REPO / "scripts" / "python-checks.sh").read_text()
