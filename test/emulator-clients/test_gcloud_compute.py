"""The real gcloud's `gcloud compute …` against the emulator's Compute Engine (issue 33), where gcloud is installed:
every command `tpw vm create --dry-run` prints runs unchanged and makes the resources `tpw vm create` makes, field
for field; lists without a zone (gcloud asks `aggregated/…` for them), `--zones` (gcloud's batch endpoint),
`--filter`, `--limit` / `--page-size`; describe, labels, metadata, stop/start, delete of every kind; and
`gcloud compute ssh` into a VM, with the project's keys and under OS Login. gcloud is not on PyPI or in Debian's
archive, so a machine without it skips these (they are never counted as passed)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from compute_helpers import tpw
from tpw_emulator import Emulator

GCLOUD = shutil.which("gcloud")
SSH = shutil.which("ssh")
pytestmark = pytest.mark.skipif(GCLOUD is None, reason="gcloud is not installed on this machine")

Gcloud = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def gcloud(emulator: Emulator, tmp_path_factory: pytest.TempPathFactory) -> Gcloud:
    """Runs `gcloud ARGS` (argv as given) with its own config and home, the emulator as Compute Engine and OS Login,
    and its bearer token as the access token."""
    config = tmp_path_factory.mktemp("gcloud-compute-config")
    home = tmp_path_factory.mktemp("gcloud-compute-home")
    token_file = config / "token"
    token_file.write_text(emulator.token or "local-emulator")
    base = f"http://{emulator.host}:{emulator.port}"
    # The emulator's workers share one SSH port on their loopback addresses (not 22): an `ssh` ahead of OpenSSH's
    # on PATH adds it, as a `Port` line in the user's ~/.ssh/config would; gcloud itself runs unchanged.
    ep = json.loads((emulator.home / "emulator" / "endpoint.json").read_text())
    shim = config / "bin"
    shim.mkdir()
    (shim / "ssh").write_text(f'#!/bin/sh\nexec {SSH} -o Port={int(ep["sshPort"])} "$@"\n')
    (shim / "ssh").chmod(0o755)
    env = {
        **os.environ,
        "HOME": str(home),
        "PATH": f"{shim}:{os.environ.get('PATH', '')}",
        "CLOUDSDK_CONFIG": str(config),
        "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE": str(token_file),
        "CLOUDSDK_CORE_PROJECT": emulator.project,
        "CLOUDSDK_CORE_ACCOUNT": str(ep.get("account", "tpw-emulator-user@example.com")),
        "CLOUDSDK_CORE_DISABLE_PROMPTS": "1",
        "CLOUDSDK_CORE_DISABLE_USAGE_REPORTING": "1",
        "CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK": "1",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE": f"{base}/compute/v1/",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_OSLOGIN": f"{base}/",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_TPU": f"{base}/",
    }

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        assert GCLOUD is not None
        argv = [GCLOUD, *args[1:]] if args and args[0] == "gcloud" else [GCLOUD, *args]
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)

    return run


def ok(p: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert p.returncode == 0, f"{' '.join(p.args)}\n{p.stderr[-3000:]}"
    return p


def dry_run(emulator: Emulator, name: str, flags: list[str]) -> list[str]:
    """The `gcloud compute …` lines `tpw vm create NAME FLAGS --dry-run` prints."""
    p = tpw(emulator, "vm", "create", name, *flags, "--zone", emulator.zone, "--dry-run")
    assert p.returncode == 0, p.stderr
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("gcloud ")]
    assert lines, p.stdout
    return lines


def described(gcloud: Gcloud, *args: str) -> Any:
    """`gcloud compute ARGS --format=json`, parsed (a resource, or a list of them)."""
    return json.loads(ok(gcloud("compute", *args, "--format=json")).stdout)


# What differs between two resources made the same way: their names, ids, times, addresses and fingerprints.
VARYING = re.compile(r"(^|\.)(id|name|baseInstanceName|creationTimestamp|lastStartTimestamp|fingerprint|"
                     r"labelFingerprint|networkIP|natIP|selfLink|instanceGroup|status|currentActions|targetSize)$")


def flat(d: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(d, dict):
        return {k: v for key, sub in d.items() for k, v in flat(sub, f"{prefix}.{key}" if prefix else key).items()}
    if isinstance(d, list):
        return {k: v for i, sub in enumerate(d) for k, v in flat(sub, f"{prefix}[{i}]").items()}
    return {prefix: d}


def same_resource(a: dict[str, Any], b: dict[str, Any], name_a: str, name_b: str) -> list[tuple[str, Any, Any]]:
    """The fields that differ, once each side's own name reads NAME (an image family named as gcloud's zonal view
    of it, `zones/-/imageFamilyViews/F`, is the family `global/images/family/F`)."""
    def norm(v: Any, name: str) -> Any:
        if not isinstance(v, str):
            return v
        return re.sub(r"zones/-/imageFamilyViews/", "global/images/family/", v.replace(name, "NAME"))
    fa = {k: norm(v, name_a) for k, v in flat(a).items() if not VARYING.search(k)}
    fb = {k: norm(v, name_b) for k, v in flat(b).items() if not VARYING.search(k)}
    return [(k, fa.get(k), fb.get(k)) for k in sorted(set(fa) | set(fb)) if fa.get(k) != fb.get(k)]


@pytest.mark.parametrize(
    ("name", "flags"),
    [
        ("gcc-std", ["--type", "tpu7x-8"]),
        ("gcc-spot", ["--type", "tpu7x-8", "--spot", "--label", "team=ml"]),
        ("gcc-flex", ["--type", "tpu7x-8", "--flex-start", "--max-run-duration", "2h"]),
    ],
)
def test_dry_run_vm_commands_run_unchanged_and_make_what_tpw_makes(emulator: Emulator, gcloud: Gcloud, name: str,
                                                                   flags: list[str]) -> None:
    lines = dry_run(emulator, name, flags)
    assert len(lines) == 1 and re.match(r"gcloud (alpha )?compute instances create ", lines[0])
    ok(gcloud(*shlex.split(lines[0])))
    p = tpw(emulator, "vm", "create", f"{name}-t", *flags, "--zone", emulator.zone)
    assert p.returncode == 0, p.stderr
    z = f"--zone={emulator.zone}"
    ours = described(gcloud, "instances", "describe", f"{name}-t", z)
    theirs = described(gcloud, "instances", "describe", name, z)
    assert same_resource(theirs, ours, name, f"{name}-t") == []
    assert theirs["status"] == "RUNNING" and theirs["labels"]["tpw-accelerator-type"] == "tpu7x-8"


@pytest.mark.parametrize(
    ("name", "flags"),
    [("gcc-mig", ["--type", "tpu7x-16", "--label", "team=ml"]),
     ("gcc-fmig", ["--type", "tpu7x-16", "--flex-start", "--max-run-duration", "4h"])],
)
def test_dry_run_slice_commands_run_unchanged_and_make_what_tpw_makes(emulator: Emulator, gcloud: Gcloud, name: str,
                                                                      flags: list[str]) -> None:
    lines = dry_run(emulator, name, flags)
    assert [ln.split(" create ")[0] for ln in lines] == [
        "gcloud compute resource-policies", "gcloud beta compute instance-templates" if "--flex-start" in flags
        else "gcloud compute instance-templates", "gcloud compute instance-groups managed"]
    for line in lines:
        ok(gcloud(*shlex.split(line)))
    p = tpw(emulator, "vm", "create", f"{name}-t", *flags, "--zone", emulator.zone)
    assert p.returncode == 0, p.stderr
    region = emulator.zone.rsplit("-", 1)[0]
    for kind, args in [("resource-policies", ["{}-tpw-policy", f"--region={region}"]),
                       ("instance-templates", ["{}-tpw-template"]),
                       ("instance-groups managed", ["{}", f"--zone={emulator.zone}"])]:
        def of(n: str, kind: str = kind, args: list[str] = args) -> dict[str, Any]:
            return described(gcloud, *kind.split(), "describe", args[0].format(n), *args[1:])
        assert same_resource(of(name), of(f"{name}-t"), name, f"{name}-t") == [], kind
    # tpw sees the gcloud-made slice as one 2-host slice, as it sees its own.
    listed = {n["name"].rsplit("/", 1)[-1]: n for n in json.loads(tpw(emulator, "vm", "list", "--json").stdout)}
    assert listed[name]["acceleratorType"] == listed[f"{name}-t"]["acceleratorType"] == "tpu7x-16"
    assert len(listed[name]["networkEndpoints"]) == 2


@pytest.mark.parametrize(
    ("name", "flags", "verb"),
    [("gcc-tpu", ["--type", "v6e-8", "--spot"], "tpus tpu-vm create"),
     ("gcc-qr", ["--type", "v5litepod-16", "--slices", "2"], "tpus queued-resources create")],
)
def test_dry_run_cloud_tpu_commands_run_unchanged(emulator: Emulator, gcloud: Gcloud, name: str, flags: list[str],
                                                 verb: str) -> None:
    """Types of the Cloud TPU API: the `gcloud compute tpus …` line the dry run prints makes the VM (or the queued
    resource of a multislice group) that tpw would."""
    (line,) = dry_run(emulator, name, flags)
    assert line.startswith(f"gcloud compute {verb} {name} ")
    ok(gcloud(*shlex.split(line)))
    listed = {n["name"].rsplit("/", 1)[-1]: n for n in json.loads(tpw(emulator, "vm", "list", "--json").stdout)}
    made = [n for k, n in listed.items() if k == name or k.startswith(f"{name}-")]
    assert made and all(n["acceleratorType"] == flags[1] for n in made), listed.keys()


def test_lists_without_a_zone_filter_and_page(emulator: Emulator, gcloud: Gcloud) -> None:
    ok(gcloud("compute", "instances", "create", "gcc-east", "--zone=us-east1-d", "--machine-type=tpu7x-standard-4t",
              "--image-family=tpu-vm-ubuntu2204-base", "--image-project=ubuntu-os-accelerator-images"))
    everywhere = described(gcloud, "instances", "list")
    names = {i["name"] for i in everywhere}
    assert {"gcc-east", "gcc-std"} <= names  # two zones, one aggregated call
    assert {i["name"] for i in described(gcloud, "instances", "list", "--filter=zone:us-east1-d")} == {"gcc-east"}
    # --zones makes one call per zone through the batch endpoint; the name filter goes to the server as `name eq RE`.
    both = described(gcloud, "instances", "list", f"--zones={emulator.zone},us-east1-d", "--filter=name=gcc-east")
    assert [i["name"] for i in both] == ["gcc-east"]
    assert len(described(gcloud, "instances", "list", "--limit=2", "--page-size=1")) == 2
    labelled = described(gcloud, "instances", "list", "--filter=labels.team=ml AND status=RUNNING")
    assert {i["name"] for i in labelled} >= {"gcc-spot"}
    assert "gcc-mig-tpw-template" in {t["name"] for t in described(gcloud, "instance-templates", "list")}
    assert "gcc-mig-tpw-policy" in {p["name"] for p in described(gcloud, "resource-policies", "list")}
    migs = {m["name"]: m for m in described(gcloud, "instance-groups", "managed", "list")}
    assert migs["gcc-mig"]["targetSize"] == 2
    table = ok(gcloud("compute", "instance-groups", "managed", "list", "--filter=name=gcc-mig")).stdout
    assert re.search(r"gcc-mig\s+\S+\s+zone\s+gcc-mig\s+2\s+2\s+gcc-mig-tpw-template", table), table
    inserts = described(gcloud, "operations", "list", "--filter=operationType=insert AND targetLink~gcc-east")
    assert [o["status"] for o in inserts] == ["DONE"]
    types = described(gcloud, "machine-types", "list", f"--zones={emulator.zone}")
    assert "tpu7x-standard-4t" in {m["name"] for m in types}


def test_describe_change_and_delete_every_kind(emulator: Emulator, gcloud: Gcloud) -> None:
    z = f"--zone={emulator.zone}"
    ok(gcloud("compute", "instances", "add-labels", "gcc-std", z, "--labels=stage=dev"))
    ok(gcloud("compute", "instances", "add-metadata", "gcc-std", z, "--metadata=note=hello"))
    got = described(gcloud, "instances", "describe", "gcc-std", z)
    assert got["labels"]["stage"] == "dev" and {"key": "note", "value": "hello"} in got["metadata"]["items"]
    ok(gcloud("compute", "instances", "remove-labels", "gcc-std", z, "--labels=stage"))
    assert "stage" not in described(gcloud, "instances", "describe", "gcc-std", z)["labels"]
    ok(gcloud("compute", "instances", "stop", "gcc-std", z))
    assert described(gcloud, "instances", "describe", "gcc-std", z)["status"] == "TERMINATED"
    ok(gcloud("compute", "instances", "start", "gcc-std", z))
    assert described(gcloud, "instances", "describe", "gcc-std", z)["status"] == "RUNNING"
    members = described(gcloud, "instance-groups", "managed", "list-instances", "gcc-mig", z)
    assert len(members) == 2 and all(m["instanceStatus"] == "RUNNING" for m in members)
    assert described(gcloud, "instance-groups", "managed", "describe", "gcc-mig", z)["targetSize"] == 2
    # Two VMs in one delete: gcloud sends both calls in one batch.
    ok(gcloud("compute", "instances", "delete", "gcc-std", "gcc-spot", z, "--quiet"))
    ok(gcloud("compute", "instance-groups", "managed", "delete", "gcc-mig", z, "--quiet"))
    ok(gcloud("compute", "instance-templates", "delete", "gcc-mig-tpw-template", "--quiet"))
    region = emulator.zone.rsplit("-", 1)[0]
    ok(gcloud("compute", "resource-policies", "delete", "gcc-mig-tpw-policy", f"--region={region}", "--quiet"))
    names = {n["name"].rsplit("/", 1)[-1] for n in json.loads(tpw(emulator, "vm", "list", "--json").stdout)}
    assert not {"gcc-std", "gcc-spot", "gcc-mig"} & names


@pytest.mark.skipif(SSH is None, reason="OpenSSH's ssh client is not installed")
def test_gcloud_compute_ssh_as_tpw_prints_it(emulator: Emulator, gcloud: Gcloud, tmp_path: Path) -> None:
    """The command the explorer copies for a worker (`gcloud compute ssh VM --zone= --project=`), with a --command:
    gcloud puts its key in the project's metadata, the VM's guest agent (the emulator's worker) takes it."""
    ok(gcloud("compute", "instances", "create", "gcc-ssh", f"--zone={emulator.zone}",
              "--machine-type=tpu7x-standard-4t", "--image-family=tpu-vm-ubuntu2204-base",
              "--image-project=ubuntu-os-accelerator-images"))
    command = f"gcloud compute ssh gcc-ssh --zone={emulator.zone} --project={emulator.project}"
    p = ok(gcloud(*shlex.split(command), "--command=echo worker=$TPU_WORKER_ID host=$(hostname)"))
    assert "worker=0 host=" in p.stdout
    # Under OS Login gcloud imports the key through OS Login instead, and the worker asks OS Login at login.
    ok(gcloud("compute", "project-info", "add-metadata", "--metadata=enable-oslogin=TRUE"))
    try:
        p = ok(gcloud(*shlex.split(command), "--command=echo os-login-ok"))
        assert "os-login-ok" in p.stdout
    finally:
        ok(gcloud("compute", "project-info", "remove-metadata", "--keys=enable-oslogin"))
