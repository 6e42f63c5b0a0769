"""Google's Python client for OS Login (`google-cloud-os-login`, REST transport) against the emulator's oslogin/v1
subset, with Python's google-cloud-compute turning OS Login on for the project (projects.setCommonInstanceMetadata)
and OpenSSH logging in to a TPU VM's worker. The emulator's credentials stand for one fixed account (its endpoint
file's `account`, tpw-emulator-user@example.com); Google's POSIX name for a user account is its email with every
non-alphanumeric character as "_". Under OS Login a VM lets in that user with the keys imported through
users.importSshPublicKey, and no one else."""

from __future__ import annotations

import json
import pathlib
import subprocess
from typing import Any

import pytest
from google.api_core import exceptions
from google.cloud import compute_v1, oslogin_v1
from google.cloud.oslogin_v1 import common

from compute_helpers import client_opts, wait_operation
from tpw_emulator import Emulator

ACCOUNT = "tpw-emulator-user@example.com"
USERNAME = "tpw_emulator_user_example_com"


def _endpoint(emulator: Emulator) -> dict[str, Any]:
    """The emulator's endpoint file (JSON)."""
    return json.loads((emulator.home / "emulator" / "endpoint.json").read_text())


def _set_project_os_login(emulator: Emulator, value: str | None) -> None:
    projects = compute_v1.ProjectsClient(**client_opts(emulator))
    meta = projects.get(project=emulator.project).common_instance_metadata
    items = [i for i in meta.items if i.key != "enable-oslogin"]
    if value is not None:
        items.append(compute_v1.Items(key="enable-oslogin", value=value))
    op = projects.set_common_instance_metadata(
        project=emulator.project, metadata_resource=compute_v1.Metadata(fingerprint=meta.fingerprint, items=items)
    )
    wait_operation(emulator, op)


def _ssh(host: str, port: int, user: str, key: pathlib.Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            "ssh",
            "-i",
            str(key),
            "-p",
            str(port),
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "BatchMode=yes",
            "-o",
            "IdentitiesOnly=yes",
            f"{user}@{host}",
            "echo w$TPU_WORKER_ID",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_endpoint_names_the_fixed_account(emulator: Emulator) -> None:
    assert _endpoint(emulator)["account"] == ACCOUNT


def test_import_key_and_ssh_under_os_login(emulator: Emulator, tmp_path: pathlib.Path) -> None:
    ep = _endpoint(emulator)
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "py@oslogin", "-f", str(key)], check=True)
    pub = key.with_suffix(".pub").read_text().strip()

    instances = compute_v1.InstancesClient(**client_opts(emulator))
    p, z = emulator.project, emulator.zone
    wait_operation(
        emulator,
        instances.insert(
            project=p,
            zone=z,
            instance_resource=compute_v1.Instance(
                name="py-osl", machine_type=f"zones/{z}/machineTypes/tpu7x-standard-4t"
            ),
        ),
    )
    host = instances.get(project=p, zone=z, instance="py-osl").network_interfaces[0].network_i_p
    oslogin = oslogin_v1.OsLoginServiceClient(transport="rest", **client_opts(emulator))
    try:
        _set_project_os_login(emulator, "TRUE")
        # Not imported yet: OS Login knows no such key, and the VM lets nobody in with it.
        assert _ssh(host, int(ep["sshPort"]), USERNAME, key).returncode == 255

        got = oslogin.import_ssh_public_key(
            parent=f"users/{ACCOUNT}", ssh_public_key=common.SshPublicKey(key=pub), project_id=p
        )
        posix = got.login_profile.posix_accounts[0]
        assert (posix.username, posix.primary, posix.operating_system_type) == (
            USERNAME,
            True,
            common.OperatingSystemType.LINUX,
        )
        fingerprints = [fp for fp, k in got.login_profile.ssh_public_keys.items() if k.key == pub]
        assert len(fingerprints) == 1
        profile = oslogin.get_login_profile(
            request=oslogin_v1.GetLoginProfileRequest(name=f"users/{ACCOUNT}", project_id=p)
        )
        assert profile.name == ACCOUNT and fingerprints[0] in profile.ssh_public_keys

        ok = _ssh(host, int(ep["sshPort"]), USERNAME, key)
        assert (ok.returncode, ok.stdout) == (0, "w0\n"), ok.stderr
        # The emulator's own user is not an OS Login user: refused even with the emulator's own key.
        assert (
            _ssh(host, int(ep["sshPort"]), str(ep["username"]), pathlib.Path(str(ep["clientKeyPath"]))).returncode
            == 255
        )

        # A deleted key no longer opens the VM.
        oslogin.delete_ssh_public_key(name=f"users/{ACCOUNT}/sshPublicKeys/{fingerprints[0]}")
        with pytest.raises(exceptions.NotFound):
            oslogin.get_ssh_public_key(name=f"users/{ACCOUNT}/sshPublicKeys/{fingerprints[0]}")
        assert _ssh(host, int(ep["sshPort"]), USERNAME, key).returncode == 255
    finally:
        _set_project_os_login(emulator, None)
        wait_operation(emulator, instances.delete(project=p, zone=z, instance="py-osl"))


def test_other_accounts_are_forbidden(emulator: Emulator) -> None:
    oslogin = oslogin_v1.OsLoginServiceClient(transport="rest", **client_opts(emulator))
    with pytest.raises(exceptions.Forbidden, match=ACCOUNT):
        oslogin.get_login_profile(name="users/someone-else@example.com")
    with pytest.raises(exceptions.BadRequest):
        oslogin.import_ssh_public_key(
            parent=f"users/{ACCOUNT}", ssh_public_key=common.SshPublicKey(key="not a key"), project_id=emulator.project
        )
