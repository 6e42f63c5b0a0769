"""The local emulator, started through the built CLI (`node dist/cli.js emulator start`) in a temporary
TPW_HOME, and Google's own Python client (`google-cloud-tpu`, REST transport) pointed at it.

Credentials: when the emulator's endpoint file carries a bearer `token`, the client sends it as an OAuth
token (google.oauth2.credentials.Credentials); otherwise it goes anonymous.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
from collections.abc import Iterator

import pytest
from google.cloud import tpu_v2

from tpw_emulator import Emulator

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = ROOT / "dist" / "cli.js"


def _cli(env: dict[str, str], *args: str) -> str:
    out = subprocess.run(["node", str(CLI), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(f"tpw {' '.join(args)} failed ({out.returncode}): {out.stderr or out.stdout}")
    return out.stdout


@pytest.fixture(scope="session")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    if not CLI.exists():
        subprocess.run(["node", "scripts/build.mjs"], cwd=ROOT, check=True, timeout=300)
    home = tmp_path_factory.mktemp("tpw-home")
    env = {**os.environ, "TPW_HOME": str(home)}
    _cli(env, "emulator", "start")
    try:
        ep = json.loads((home / "emulator" / "endpoint.json").read_text())
        token = ep.get("token")
        yield Emulator(host=ep["host"], port=ep["restPort"], project=ep["project"], zone=ep["zones"][0],
                       token=token if isinstance(token, str) and token else None, home=home)
    finally:
        _cli(env, "emulator", "stop")


@pytest.fixture(scope="session")
def client(emulator: Emulator) -> tpu_v2.TpuClient:
    return tpu_v2.TpuClient(
        transport="rest",
        credentials=emulator.credentials(),
        client_options={"api_endpoint": f"http://{emulator.host}:{emulator.port}"},
    )
