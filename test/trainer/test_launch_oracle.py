"""The launch contract the trainer computes (tpu_trainer/launch.py) against the real torch_tpu
wheel's `torch.tpu.distributed.set_tpu_launch_env`, for what a TPU VM tells each host: one host,
4 hosts of one slice, and 2 slices of 2 hosts.

The wheel reads the TPU devices from sysfs; this machine has none, so its PCI scan is given the
devices of the host under test (its own `_scan_pci_tpus`, returning that generation's count and
topology table). On several hosts the wheel finds this host's index in JOB_COMPLETION_INDEX (what
GKE's indexed Jobs set; a TPU VM's is TPU_WORKER_ID, which the trainer reads). It knows one slice
only: for a multislice host it is given the job-wide NNODES and MASTER_ADDR (it never replaces a
variable already set) and must agree on everything else. Each case runs in a fork of one process
that imported torch_tpu once (the wheel memoizes the variables it read). Needs the real wheel:
`scripts/python-env.sh` installs it into the trainer's venv."""

import json
import os
import re
from pathlib import Path

import pytest

from tpu_trainer import launch
from tpu_trainer.hardware import Tpus

NAMES = ("TORCH_TPU_SLICEBUILDER_ADDRESSES", "TORCH_TPU_TOPOLOGY", "NNODES", "NODE_RANK", "MASTER_ADDR",
         "MASTER_PORT")
PCI_ID = {"v6e": "0x006f", "v4": "0x005e", "tpu7x": "0x0076"}
LANGUAGE_SERVER_VARIABLES = Path(__file__).resolve().parents[2] / "language-server/src/service/recipe-env.ts"


@pytest.fixture(scope="module")
def wheel():
    """set_tpu_launch_env of the installed torch_tpu, called in a fork per case: env -> the variables it set."""
    from importlib.util import find_spec

    # Not a skip: without the wheel this test has no oracle, and a skipped oracle would pass for a checked one.
    assert find_spec("torch_tpu"), "torch_tpu is not installed (scripts/python-env.sh installs requirements-tpu.txt)"
    import torch
    import torch_tpu  # noqa: F401  registers torch.tpu (torch's autoload of it is off on a machine without a TPU)
    from torch_tpu._internal.utils import hardware

    def run(env: dict[str, str], generation: str, count: int, nproc: int) -> dict[str, str | None]:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: this case's environment and devices, then the wheel
            try:
                os.close(read)
                for k in [k for k in os.environ if k.startswith(("TPU_", "TORCH_TPU_", "MEGASCALE_"))
                          or k in (*NAMES, "JOB_COMPLETION_INDEX")]:
                    del os.environ[k]
                os.environ.update(env)
                table = hardware._TOPOLOGY_BY_TPU_PCI_DEVICE_ID[PCI_ID[generation]]
                hardware._scan_pci_tpus = lambda: (count, table)
                torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=nproc)  # type: ignore[attr-defined]
                out = {k: os.environ.get(k) for k in (*NAMES, "TORCH_TPU_XPROF_SESSION_ID")}
                os.write(write, json.dumps(out).encode())
            finally:
                os._exit(0)
        os.close(write)
        with os.fdopen(read) as f:
            raw = f.read()
        os.waitpid(pid, 0)
        assert raw, "set_tpu_launch_env failed in the child"
        return json.loads(raw)

    return run


def ours(env: dict[str, str], generation: str, count: int, nproc: int) -> dict[str, str]:
    plan = launch.launch_env(env, "tpu", nproc, port=29500, tpus=Tpus(count, generation))
    return {**plan.common, "WORLD_SIZE": plan.ranks[0]["WORLD_SIZE"]}


def test_one_host(wheel):
    env = {"TPU_WORKER_ID": "0", "TPU_WORKER_HOSTNAMES": "t1v-n-0", "TPU_ACCELERATOR_TYPE": "v6e-4"}
    got, want = ours(env, "v6e", 4, 4), wheel(env, "v6e", 4, 4)
    assert got["TORCH_TPU_TOPOLOGY"] == want["TORCH_TPU_TOPOLOGY"] == "2,2,1"
    # one unused local port per rank, chosen at launch: the same form, not the same numbers
    for addresses in (got["TORCH_TPU_SLICEBUILDER_ADDRESSES"], want["TORCH_TPU_SLICEBUILDER_ADDRESSES"]):
        parts = addresses.split(",")
        assert len(parts) == 4 and len(set(parts)) == 4 and all(re.fullmatch(r"localhost:\d+", p) for p in parts)
    assert got["WORLD_SIZE"] == "4"
    assert want["TORCH_TPU_XPROF_SESSION_ID"].isdigit() and got["TORCH_TPU_XPROF_SESSION_ID"].isdigit()


@pytest.mark.parametrize("worker", range(4))
def test_four_hosts(wheel, worker):
    hosts = "10.130.0.2,10.130.0.3,10.130.0.4,10.130.0.5"
    env = {"TPU_WORKER_ID": str(worker), "TPU_WORKER_HOSTNAMES": hosts, "TPU_ACCELERATOR_TYPE": "v6e-16",
           "TPW_RUN_ID": "20261128-1"}
    want = wheel({**env, "JOB_COMPLETION_INDEX": str(worker)}, "v6e", 4, 4)
    got = ours(env, "v6e", 4, 4)
    assert {k: got.get(k) for k in NAMES} == {k: want[k] for k in NAMES}
    assert got["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")[:5] == [
        "10.130.0.2:8070", "10.130.0.2:8071", "10.130.0.2:8072", "10.130.0.2:8073", "10.130.0.3:8070"]
    assert int(got["WORLD_SIZE"]) == len(want["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")) == 16
    assert got["TORCH_TPU_XPROF_SESSION_ID"] == "20261128-1"  # every host of the run shares the run's id


@pytest.mark.parametrize(("slice_id", "worker"), [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_two_slices_of_two_hosts(wheel, slice_id, worker):
    slices = [["10.0.0.2", "10.0.0.3"], ["10.0.1.2", "10.0.1.3"]]
    env = {"TPU_WORKER_ID": str(worker), "TPU_WORKER_HOSTNAMES": ",".join(slices[slice_id]),
           "TPU_ACCELERATOR_TYPE": "v4-16", "MEGASCALE_NUM_SLICES": "2", "MEGASCALE_SLICE_ID": str(slice_id),
           "MEGASCALE_COORDINATOR_ADDRESS": "10.0.0.2:8080", "MEGASCALE_PORT": "8080"}
    got = ours(env, "v4", 4, 4)
    assert (got["NNODES"], got["NODE_RANK"], got["MASTER_ADDR"]) == ("4", str(slice_id * 2 + worker), "10.0.0.2")
    assert got["WORLD_SIZE"] == "16"
    job = {"NNODES": got["NNODES"], "MASTER_ADDR": got["MASTER_ADDR"], "JOB_COMPLETION_INDEX": got["NODE_RANK"]}
    want = wheel({**env, **job}, "v4", 4, 4)
    assert {k: got.get(k) for k in NAMES} == {k: want[k] for k in NAMES}
    # the slicebuilder addresses are this slice's hosts only: the slices meet over DCN, not ICI
    assert got["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")[0] == f"{slices[slice_id][0]}:8070"


def test_tpu7x_host_topology_has_its_two_cores_per_chip(wheel):
    env = {"TPU_WORKER_ID": "0", "TPU_WORKER_HOSTNAMES": "t1v-n-0", "TPU_ACCELERATOR_TYPE": "tpu7x-8"}
    assert ours(env, "tpu7x", 8, 8)["TORCH_TPU_TOPOLOGY"] == wheel(env, "tpu7x", 8, 8)["TORCH_TPU_TOPOLOGY"]


def test_a_variable_set_by_the_recipe_is_kept():
    env = {"TPU_WORKER_ID": "1", "TPU_WORKER_HOSTNAMES": "a,b", "MASTER_PORT": "1234", "TORCH_TPU_BASE_PORT": "9000"}
    got = ours(env, "v6e", 4, 4)
    assert got["MASTER_PORT"] == "1234"
    assert got["TORCH_TPU_SLICEBUILDER_ADDRESSES"].startswith("a:9000,a:9001")


def test_the_language_server_knows_every_variable_torch_tpu_reads():
    """The recipe variables the language server completes (language-server/src/service/recipe-env.ts) are the
    TORCH_TPU_* names the installed wheel's environment reader holds, no more, no fewer."""
    from importlib.util import find_spec

    spec = find_spec("torch_tpu")
    assert spec and spec.submodule_search_locations, "torch_tpu is not installed"
    package = Path(next(iter(spec.submodule_search_locations)))
    readers = sorted((package / "_internal").glob("env_*.so"))
    assert readers, f"no env_*.so in {package / '_internal'}"
    wheel = {m.decode() for m in re.findall(rb"(?<=\x00)TORCH_TPU_[A-Z0-9_]+(?=\x00)", readers[0].read_bytes())}
    ours = set(re.findall(r"name: '(TORCH_TPU_[A-Z0-9_]+)'", LANGUAGE_SERVER_VARIABLES.read_text()))
    assert "TORCH_TPU_SLICEBUILDER_ADDRESSES" in wheel
    assert ours == wheel
