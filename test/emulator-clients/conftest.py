"""The local emulator, started through the built CLI (`node dist/cli.js emulator start`) in a temporary
TPW_HOME, and Google's own Python client (`google-cloud-tpu`, REST transport) pointed at it.

Credentials: when the emulator's endpoint file carries a bearer `token`, the client sends it as an OAuth
token (google.oauth2.credentials.Credentials); otherwise it goes anonymous.
"""

from __future__ import annotations

import http.client
import json
import os
import pathlib
import subprocess
from dataclasses import dataclass
from typing import Any, Iterator

import pytest
from google.auth.credentials import AnonymousCredentials, Credentials
from google.cloud import tpu_v2
from google.oauth2.credentials import Credentials as TokenCredentials

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = ROOT / "dist" / "cli.js"


@dataclass
class Emulator:
    host: str
    port: int
    project: str
    zone: str
    token: str | None
    home: pathlib.Path

    @property
    def parent(self) -> str:
        return f"projects/{self.project}/locations/{self.zone}"

    def credentials(self) -> Credentials:
        return TokenCredentials(self.token) if self.token else AnonymousCredentials()

    def raw(self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], Any, bytes]:
        """One HTTP request on a fresh connection: (status, headers, JSON body, what the server sent after it)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        hdrs = {"content-type": "application/json", **(headers or {})}
        if self.token:
            hdrs["authorization"] = f"Bearer {self.token}"
        try:
            conn.request(method, path, body=body, headers=hdrs)
            res = conn.getresponse()
            data = res.read()
            rest = b""
            if res.getheader("connection", "").lower() == "close" and conn.sock is not None:
                rest = conn.sock.recv(1)  # b"" once the server has closed its side cleanly
            return res.status, {k.lower(): v for k, v in res.getheaders()}, json.loads(data), rest
        finally:
            conn.close()


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
        yield Emulator(host=ep["host"], port=ep["restPort"], project=ep["project"], zone=ep["zones"][0], token=token if isinstance(token, str) and token else None, home=home)
    finally:
        _cli(env, "emulator", "stop")


@pytest.fixture(scope="session")
def client(emulator: Emulator) -> tpu_v2.TpuClient:
    return tpu_v2.TpuClient(
        transport="rest",
        credentials=emulator.credentials(),
        client_options={"api_endpoint": f"http://{emulator.host}:{emulator.port}"},
    )
