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


@pytest.fixture
def sub_env():
    from _trainer_helpers import clean_env

    return clean_env()
