"""The debug-size model against a stored loss curve.

Catches unintended changes to the model, init, optimizer, schedule or data
order. After an intended change: PYTHONPATH=trainer python test/trainer/regen_loss_curve.py
"""

import json

from _trainer_helpers import CURVE_FILE, CURVE_LR, CURVE_SETTINGS, CURVE_WARMUP, curve_run

# float32 on CPU: the last digits move with the CPU's vector width and the BLAS
# build; a behavioural change moves the curve by far more than this.
ABS_TOL = 5e-3


def test_stored_curve_matches_settings():
    stored = json.loads(CURVE_FILE.read_text())
    expected = {**CURVE_SETTINGS, "optimizer.lr": CURVE_LR, "scheduler.warmup_steps": CURVE_WARMUP}
    assert stored["settings"] == expected, "settings changed: regenerate the curve"
    assert len(stored["losses"]) == CURVE_SETTINGS["max_steps"]


def test_loss_curve_matches_stored(tmp_path):
    stored = json.loads(CURVE_FILE.read_text())["losses"]
    got = curve_run(tmp_path)
    assert len(got) == len(stored)
    worst = max(abs(a - b) for a, b in zip(got, stored, strict=True))
    assert worst <= ABS_TOL, f"max |loss - stored| = {worst:.2e} > {ABS_TOL}\ngot    {got}\nstored {stored}"
