"""Regenerate test/trainer/data/tiny_loss_curve.json after an intended change to
the model, optimizer, schedule or data:

    PYTHONPATH=trainer python test/trainer/regen_loss_curve.py

Review the diff of the JSON before committing it: a change you did not intend
shows up here first.
"""

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "trainer"))
sys.path.insert(0, str(Path(__file__).parent))

import torch

from _trainer_helpers import CURVE_FILE, CURVE_LR, CURVE_SETTINGS, CURVE_WARMUP, curve_run


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        losses = curve_run(Path(tmp))
    CURVE_FILE.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "about": "tiny-llama loss per step; regenerate with test/trainer/regen_loss_curve.py",
        "settings": {**CURVE_SETTINGS, "optimizer.lr": CURVE_LR, "scheduler.warmup_steps": CURVE_WARMUP},
        "torch": torch.__version__,
        "losses": losses,
    }
    CURVE_FILE.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {CURVE_FILE}: {len(losses)} losses, {losses[0]:.4f} -> {losses[-1]:.4f}")


if __name__ == "__main__":
    main()
