"""The gcloud CLI (`gcloud compute tpus …`) against the local emulator, where gcloud is installed: its table
columns, its `force=True`, and the errors it prints come from the emulator's answers. gcloud is not on PyPI
or in Debian's archive, so a machine without it skips these (they are never counted as passed)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tpw_emulator import Emulator

GCLOUD = shutil.which("gcloud")
pytestmark = pytest.mark.skipif(GCLOUD is None, reason="gcloud is not installed on this machine")


@pytest.fixture(scope="module")
def gcloud(emulator: Emulator, tmp_path_factory: pytest.TempPathFactory):
    """Runs `gcloud compute tpus ARGS` with its own config dir, the emulator as the TPU endpoint and a static token."""
    env = emulator.gcloud_env(tmp_path_factory.mktemp("gcloud-config"),
                              CLOUDSDK_API_ENDPOINT_OVERRIDES_TPU=f"http://{emulator.host}:{emulator.port}/")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        assert GCLOUD is not None
        return subprocess.run([GCLOUD, "compute", "tpus", *args, "--zone", emulator.zone],
                              env=env, capture_output=True, text=True, timeout=180)

    return run


def test_create_then_list_shows_type_topology_and_network(gcloud) -> None:
    made = gcloud("tpu-vm", "create", "gc-slice",
                  "--accelerator-type", "v5litepod-16", "--version", "v2-alpha-tpuv5-lite")
    assert made.returncode == 0, made.stderr
    listed = gcloud("tpu-vm", "list")
    assert listed.returncode == 0, listed.stderr
    header, *rows = listed.stdout.splitlines()
    assert header.split()[:6] == ["NAME", "ZONE", "ACCELERATOR_TYPE", "TYPE", "TOPOLOGY", "NETWORK"]
    row = next(r for r in rows if r.startswith("gc-slice "))
    assert re.match(r"gc-slice\s+\S+\s+v5litepod-16\s+V5LITE_POD\s+4x4\s+default\s", row), row


def test_stop_of_a_multi_host_slice_fails_with_googles_error(gcloud) -> None:
    stopped = gcloud("tpu-vm", "stop", "gc-slice")
    assert stopped.returncode != 0
    assert "FAILED_PRECONDITION" in stopped.stderr and "multi-host" in stopped.stderr


def test_create_with_another_generations_runtime_fails_naming_both(gcloud) -> None:
    made = gcloud("tpu-vm", "create", "gc-bad", "--accelerator-type", "v6e-8", "--version", "tpu-ubuntu2204-base")
    assert made.returncode != 0
    assert re.search(r"INVALID_ARGUMENT: .*\"tpu-ubuntu2204-base\".*\"v6e-8\".*v2-alpha-tpuv6e",
                     made.stderr), made.stderr


def test_queued_resource_delete_force(gcloud, emulator: Emulator) -> None:
    made = gcloud("queued-resources", "create", "gc-qr", "--node-id", "gc-qr-node",
                  "--accelerator-type", "v6e-1", "--runtime-version", "v2-alpha-tpuv6e")
    assert made.returncode == 0, made.stderr
    deleted = gcloud("queued-resources", "delete", "gc-qr", "--force")  # sends force=True
    assert deleted.returncode == 0, deleted.stderr
    log = (Path(emulator.home) / "emulator" / "emulator.log").read_text()
    assert re.search(r"DELETE /v2/\S+/queuedResources/gc-qr\?\S*force=True\S* -> 200", log)
    listed = gcloud("queued-resources", "list")
    assert "gc-qr" not in listed.stdout
