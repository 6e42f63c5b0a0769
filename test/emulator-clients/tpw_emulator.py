"""The emulator as the Python tests see it: where its REST API listens, its credentials, raw HTTP."""

from __future__ import annotations

import http.client
import json
import os
import pathlib
from dataclasses import dataclass
from typing import Any

from google.auth.credentials import AnonymousCredentials, Credentials
from google.oauth2.credentials import Credentials as TokenCredentials


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

    def gcloud_env(self, config: pathlib.Path, **overrides: str) -> dict[str, str]:
        """gcloud's environment: its own config folder, the emulator's token as a static access token, no prompts,
        and `overrides` (the API endpoints to point at the emulator)."""
        token_file = config / "token"
        token_file.write_text(self.token or "local-emulator")
        return {
            **os.environ,
            "CLOUDSDK_CONFIG": str(config),
            "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE": str(token_file),
            "CLOUDSDK_CORE_PROJECT": self.project,
            "CLOUDSDK_CORE_DISABLE_PROMPTS": "1",
            "CLOUDSDK_CORE_DISABLE_USAGE_REPORTING": "1",
            "CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK": "1",
            **overrides,
        }

    def credentials(self) -> Credentials:
        return TokenCredentials(self.token) if self.token else AnonymousCredentials()

    def raw(self, method: str, path: str, body: bytes | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], Any, bytes]:
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
