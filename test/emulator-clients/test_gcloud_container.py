"""gcloud's GKE commands (`gcloud container clusters list/describe/get-credentials`, `node-pools list`) against
the emulator's GKE API, and the kubeconfig get-credentials writes used by the real kubectl, whose
gke-gcloud-auth-plugin hands it gcloud's token: the emulator's. gcloud, its auth plugin and kubectl are not on
PyPI, so a machine without them skips these (never counted as passed). The cluster needs the Kubernetes binaries
of scripts/k8s-binaries.sh."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tpw_emulator import Emulator

GCLOUD = shutil.which("gcloud")
KUBECTL = shutil.which("kubectl")
PLUGIN = shutil.which("gke-gcloud-auth-plugin")
pytestmark = pytest.mark.skipif(None in (GCLOUD, KUBECTL, PLUGIN),
                                reason="gcloud, kubectl or gke-gcloud-auth-plugin is not installed")

CLUSTER = "gc-gke"

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def gcloud_env(emulator: Emulator, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    config = tmp_path_factory.mktemp("gcloud-gke-config")
    return emulator.gcloud_env(config, CLOUDSDK_API_ENDPOINT_OVERRIDES_CONTAINER=f"http://{emulator.host}:{emulator.port}/",
                               KUBECONFIG=str(config / "kubeconfig"), USE_GKE_GCLOUD_AUTH_PLUGIN="True")


@pytest.fixture(scope="module")
def gcloud(emulator: Emulator, gcloud_env: dict[str, str]) -> Run:
    """`gcloud container ARGS`; the cluster (one v5litepod-16 node pool) is made first through the REST API."""
    parent = f"/v1/projects/{emulator.project}/locations/{emulator.zone}"
    pool = {"name": "tpu", "initialNodeCount": 4, "config": {"machineType": "ct5lp-hightpu-4t"},
            "placementPolicy": {"type": "COMPACT", "tpuTopology": "4x4"}}
    body = {"cluster": {"name": CLUSTER, "nodePools": [pool]}}
    status, _, op, _ = emulator.raw("POST", f"{parent}/clusters", json.dumps(body).encode())
    assert status == 200, op
    deadline = time.monotonic() + 300
    while True:
        _, _, got, _ = emulator.raw("GET", f"{parent}/operations/{op['name']}")
        if got["status"] == "DONE":
            assert "error" not in got, got
            break
        assert time.monotonic() < deadline, got
        time.sleep(0.5)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        assert GCLOUD is not None
        return subprocess.run([GCLOUD, "container", *args], env=gcloud_env, capture_output=True, text=True, timeout=180)

    return run


def test_clusters_list_and_describe(gcloud: Run, emulator: Emulator) -> None:
    listed = gcloud("clusters", "list", "--format=json")
    assert listed.returncode == 0, listed.stderr
    clusters = json.loads(listed.stdout)
    c = next(x for x in clusters if x["name"] == CLUSTER)
    assert c["status"] == "RUNNING"
    assert c["location"] == emulator.zone
    described = gcloud("clusters", "describe", CLUSTER, "--zone", emulator.zone,
                       "--format=value(endpoint,currentMasterVersion)")
    assert described.returncode == 0, described.stderr
    endpoint, version = described.stdout.split()
    assert re.match(r"^127\.\d+\.\d+\.\d+:\d+$", endpoint), endpoint
    assert version.startswith("1.37.2-gke.")
    pools = gcloud("node-pools", "list", "--cluster", CLUSTER, "--zone", emulator.zone,
                   "--format=value(name,config.machineType,placementPolicy.tpuTopology)")
    assert pools.returncode == 0, pools.stderr
    assert pools.stdout.split() == ["tpu", "ct5lp-hightpu-4t", "4x4"]


def test_describe_of_an_unknown_cluster_fails_naming_it(gcloud: Run, emulator: Emulator) -> None:
    missing = gcloud("clusters", "describe", "nope", "--zone", emulator.zone)
    assert missing.returncode != 0
    assert "nope" in missing.stderr


def test_get_credentials_then_kubectl_through_the_auth_plugin(gcloud: Run, emulator: Emulator,
                                                              gcloud_env: dict[str, str]) -> None:
    got = gcloud("clusters", "get-credentials", CLUSTER, "--zone", emulator.zone)
    assert got.returncode == 0, got.stderr
    config = Path(gcloud_env["KUBECONFIG"]).read_text()
    assert "gke-gcloud-auth-plugin" in config
    assert KUBECTL is not None
    nodes = subprocess.run([KUBECTL, "get", "nodes", "-o", "json"], env=gcloud_env,
                           capture_output=True, text=True, timeout=120)
    assert nodes.returncode == 0, nodes.stderr
    items = json.loads(nodes.stdout)["items"]
    assert len(items) == 4
    assert {n["metadata"]["labels"]["cloud.google.com/gke-tpu-accelerator"] for n in items} == {"tpu-v5-lite-podslice"}
    who = subprocess.run([KUBECTL, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"], env=gcloud_env,
                         capture_output=True, text=True, timeout=60)
    assert who.stdout == "tpw-emulator-user@example.com", who.stderr
