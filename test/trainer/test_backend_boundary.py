"""The backend boundary: torch_xla is imported by backends/xla.py alone, the private torch_xla
APIs it wraps still exist in the installed torch_xla, the plain-CPU path runs without
torch_xla, and the model knows nothing of parallelism (parallelize.py applies it)."""

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from _trainer_helpers import REPO, clean_env

PACKAGE = REPO / "trainer" / "tpu_trainer"
XLA_MODULE = PACKAGE / "backends" / "xla.py"


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports (absolute names; relative imports resolved against the package)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{parent}.{base}" if base else parent
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
            found.add(str(node.args[0].value))
    return found


def package_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_only_the_xla_backend_imports_torch_xla():
    offenders = {
        str(path.relative_to(PACKAGE)): sorted(m for m in imported_modules(path) if m.split(".")[0] == "torch_xla")
        for path in package_files() if path != XLA_MODULE
    }
    assert {k: v for k, v in offenders.items() if v} == {}
    assert any(m.startswith("torch_xla") for m in imported_modules(XLA_MODULE))  # the scan sees imports at all


def test_only_the_native_backend_imports_torch_tpu():
    # torch_tpu's import costs seconds and claims the TPU: only backends/native.py may import it, for device=tpu.
    native = PACKAGE / "backends" / "native.py"
    offenders = {
        str(path.relative_to(PACKAGE)): sorted(m for m in imported_modules(path) if m.split(".")[0] == "torch_tpu")
        for path in package_files() if path != native
    }
    assert {k: v for k, v in offenders.items() if v} == {}
    assert "torch_tpu" in imported_modules(native)


def test_nothing_imports_the_xla_backend_statically():
    # backends/__init__.py loads it by name only when device=xla is chosen, so plain CPU needs no torch_xla.
    offenders = [str(p.relative_to(PACKAGE)) for p in package_files()
                 if any(m == "tpu_trainer.backends.xla" for m in imported_modules(p))]
    assert offenders == []


def test_the_model_knows_nothing_of_parallelism():
    for path in (PACKAGE / "model").rglob("*.py"):
        imports = imported_modules(path)
        assert not [m for m in imports if m.startswith(("tpu_trainer.backends", "tpu_trainer.parallelize",
                                                        "tpu_trainer.sharding", "torch.distributed"))], path
        tree = ast.parse(path.read_text())
        read = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        assert not read & {"sharding", "remat", "attention_kernel"}, (path, read & {"sharding", "remat"})


def _resolve(dotted: str) -> object:
    """Import the longest importable module prefix of `dotted`, then follow attributes; an
    attribute set in __init__ is looked up on an instance made without arguments."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            if not hasattr(obj, name) and isinstance(obj, type):
                obj = obj()
            obj = getattr(obj, name)
        return obj
    raise ImportError(dotted)


@pytest.mark.xla
def test_wrapped_private_torch_xla_apis_still_exist():
    pytest.importorskip("torch_xla")  # a requirement of the suite; this names it if missing
    from tpu_trainer.backends import xla

    missing = []
    for dotted in xla.PRIVATE_APIS:
        try:
            _resolve(dotted)
        except (ImportError, AttributeError) as e:
            missing.append(f"{dotted}: {e}")
    assert missing == [], "torch_xla moved private APIs that backends/xla.py uses:\n" + "\n".join(missing)


@pytest.mark.xla
def test_every_private_torch_xla_name_used_is_listed():
    from tpu_trainer.backends import xla

    listed = {part for dotted in xla.PRIVATE_APIS for part in dotted.split(".")}
    tree = ast.parse(XLA_MODULE.read_text())
    used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
            and n.attr.startswith("_") and not n.attr.startswith("__")}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("torch_xla"):
            used.update(p for p in node.module.split(".") if p.startswith("_"))
            used.update(a.name for a in node.names if a.name.startswith("_"))
    assert used - listed == set(), "list these in PRIVATE_APIS so the test above checks them"
    assert used, "the scan found no private names at all"


FLUSH_PROBE = r"""
import time
from tpu_trainer import backends
backend = backends.select("xla")
seen = []
def slow(value):
    time.sleep(0.5)
    seen.append(value)
backend.add_step_closure(slow, (1,))
backend.sync()
backend.flush_step_closures()
print("seen", seen)
"""


@pytest.mark.xla
def test_flush_waits_for_xla_step_closures():
    # flush_step_closures reaches torch_xla's closure queue through private APIs: it must wait
    # for a closure still running, or records logged just before a checkpoint would be lost.
    p = subprocess.run([sys.executable, "-c", FLUSH_PROBE], cwd=REPO, env=clean_env(PJRT_DEVICE="CPU"),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "seen [1]" in p.stdout, p.stdout


NO_XLA_PROBE = r"""
import sys, tempfile
class NoTorchXla:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "torch_xla":
            raise ModuleNotFoundError("torch_xla is blocked in this test", name=name)
sys.meta_path.insert(0, NoTorchXla())
from tpu_trainer.config import TrainConfig
from tpu_trainer.train import train
out = tempfile.mkdtemp()
summary = train(TrainConfig(output_dir=out, device="auto", max_steps=2, global_batch_size=2, block_size=16))
print("status", summary["status"], "device", summary["device"], "xla loaded", "torch_xla" in sys.modules)
"""


def test_plain_cpu_runs_without_torch_xla():
    p = subprocess.run([sys.executable, "-c", NO_XLA_PROBE], cwd=REPO, env=clean_env(PJRT_DEVICE="CPU"),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "status ok device cpu xla loaded False" in p.stdout, p.stdout[-2000:]


def test_parallelize_applies_kernel_and_remat_from_outside():
    from tpu_trainer import backends
    from tpu_trainer.config import ModelConfig
    from tpu_trainer.model import build_model
    from tpu_trainer.model.llama import Attention, eager_attention, run_in_order, sdpa_attention
    from tpu_trainer.parallelize import parallelize

    cfg = ModelConfig()
    model = build_model(cfg)
    attn = [m for m in model.modules() if isinstance(m, Attention)]
    assert attn and all(m.attention_fn is sdpa_attention for m in attn) and model.run_layers is run_in_order
    cfg.attention_kernel, cfg.remat.activation_checkpoint = "eager", True
    parallelize(model, backends.select("cpu"), cfg)
    assert all(m.attention_fn is eager_attention for m in attn)
    assert model.run_layers is not run_in_order
