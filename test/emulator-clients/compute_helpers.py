"""What the Compute Engine and OS Login client tests share: client options aimed at the emulator, waiting for an
operation, and the built CLI on the emulator's home."""

from __future__ import annotations

import os
import pathlib
import subprocess
from typing import Any

from google.cloud import compute_v1

from tpw_emulator import Emulator

ROOT = pathlib.Path(__file__).resolve().parents[2]


def client_opts(emulator: Emulator) -> dict[str, Any]:
    """Keyword arguments for any of Google's REST clients, aimed at the emulator with its bearer token."""
    return {"credentials": emulator.credentials(),
            "client_options": {"api_endpoint": f"http://{emulator.host}:{emulator.port}"}}


def wait_operation(emulator: Emulator, op: object) -> None:
    """Waits with operations.wait on the emulator. (The client's own `.result()` polls through an operations client
    it makes without the caller's api_endpoint, so it would ask compute.googleapis.com.)"""
    name = op.name  # type: ignore[attr-defined]
    zone, region = getattr(op, "zone", ""), getattr(op, "region", "")
    opts, project = client_opts(emulator), emulator.project
    for _ in range(60):
        if zone:
            got = compute_v1.ZoneOperationsClient(**opts).wait(
                project=project, zone=zone.rsplit("/", 1)[-1], operation=name)
        elif region:
            got = compute_v1.RegionOperationsClient(**opts).wait(
                project=project, region=region.rsplit("/", 1)[-1], operation=name)
        else:
            got = compute_v1.GlobalOperationsClient(**opts).wait(project=project, operation=name)
        if got.status == compute_v1.Operation.Status.DONE:
            assert not got.error.errors, got.error
            return
    raise AssertionError(f"operation {name} not done")


def tpw(emulator: Emulator, *args: str) -> subprocess.CompletedProcess[str]:
    """The built CLI (`node dist/cli.js`) on the emulator's TPW_HOME, as a user would run `tpw`."""
    return subprocess.run(["node", str(ROOT / "dist" / "cli.js"), *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "TPW_HOME": str(emulator.home)}, timeout=300)
