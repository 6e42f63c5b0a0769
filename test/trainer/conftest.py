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


def pytest_configure(config):
    # torch_xla (device=xla, legacy) pins torch 2.9 and TorchTPU needs torch >= 2.11, so they live in two
    # venvs: scripts/test-suite.sh runs `-m "not xla"` in the trainer's venv and `-m xla` in $TPW_VENV-xla.
    config.addinivalue_line("markers", "xla: needs torch_xla; runs in the legacy venv ($TPW_VENV-xla)")


@pytest.fixture
def sub_env():
    from _trainer_helpers import clean_env

    return clean_env()
