"""Shared setup for the trainer tests.

Run from the repository root:  python -m pytest test/trainer -q
The package is used from the checkout (trainer/ on sys.path) unless it is installed.
"""

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TRAINER = REPO / "trainer"
if str(TRAINER) not in sys.path:
    sys.path.insert(0, str(TRAINER))
sys.path.insert(0, str(Path(__file__).parent))

# Before any test module imports torch: the package turns torch's device-backend autoload off on a
# machine without a TPU, so that an installed torch_tpu does not cost every test process seconds.
import tpu_trainer  # noqa: E402, F401


@pytest.fixture
def sub_env():
    from _trainer_helpers import clean_env

    return clean_env()


# The fast tier (`npm run test:fast`) runs the trainer tests with `-m "not slow"`. A test module that starts
# processes (the trainer as a command, torch's spawn, gloo process groups) is slow as a whole: marked here from its
# source, so a new test lands in the right tier by what it does, with no list to keep.
_SLOW_SOURCE = ("subprocess", "mp.spawn", "torch.multiprocessing", "run_trainer", "sub_env")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: starts processes; left out of the fast tier (npm run test:fast)")
    # torch_xla (device=xla, legacy) pins torch 2.9 and TorchTPU needs torch >= 2.11, so they live in two
    # venvs: scripts/test-suite.sh runs `-m "not xla"` in the trainer's venv and `-m xla` in $TPW_VENV-xla.
    config.addinivalue_line("markers", "xla: needs torch_xla; runs in the legacy venv ($TPW_VENV-xla)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    slow_modules: dict[Path, bool] = {}
    for item in items:
        module = Path(str(item.fspath))
        if module not in slow_modules:
            source = module.read_text(encoding="utf-8")
            slow_modules[module] = any(word in source for word in _SLOW_SOURCE)
        if slow_modules[module]:
            item.add_marker(pytest.mark.slow)
