"""One process per local device: the launch contract of the native path, and the launcher.

PyTorch's model is one process per device joined by torch.distributed. Every rank reads the
rendezvous from torchrun's variables (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
MASTER_ADDR, MASTER_PORT, NNODES, NODE_RANK). TorchTPU adds three that every rank of a
slice must agree on, decided once per host before the ranks start (its
`torch.tpu.distributed.set_tpu_launch_env`):

  TORCH_TPU_SLICEBUILDER_ADDRESSES  one host:port per rank of the slice. Several hosts:
                                    <host>:<TORCH_TPU_BASE_PORT (8070) + i> for every host of
                                    TPU_WORKER_HOSTNAMES and every local device i; one host:
                                    localhost:<an unused port> per rank
  TORCH_TPU_TOPOLOGY                this host's chip mesh (hardware.HOST_TOPOLOGY)
  TORCH_TPU_XPROF_SESSION_ID        one profiling session id (here the run's id, so that every
                                    host of a run shares it; else the time in ns, as TorchTPU)

What each host knows is what a TPU VM tells it: TPU_WORKER_HOSTNAMES (its slice's hosts, in
worker order), TPU_WORKER_ID, and on a multislice run MEGASCALE_NUM_SLICES, MEGASCALE_SLICE_ID
and MEGASCALE_COORDINATOR_ADDRESS. The slicebuilder addresses and topology describe one slice
(an ICI domain; libtpu joins the slices over DCN from the MEGASCALE_* variables itself), while
the torch.distributed world spans every slice: NNODES = slices x hosts per slice, NODE_RANK =
slice x hosts per slice + TPU_WORKER_ID (slice-major, as the run pipeline numbers workers),
MASTER_ADDR = slice 0's first host. test/trainer/test_launch_oracle.py checks these against
the real wheel's set_tpu_launch_env. As there, a variable already set is never replaced, so a
recipe may pin any of them.

The same rendezvous serves CUDA (nccl) and CPU (gloo: the emulator's workers run several CPU
processes each); only TPU gets the TORCH_TPU_* variables.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .config import ConfigError
from .distributed import env_int, slices
from .hardware import Tpus

TPU_BASE_PORT = 8070  # TorchTPU's default TORCH_TPU_BASE_PORT
CHILD_MARKER = "TPW_LAUNCHED_RANK"  # set in the ranks the launcher starts: they must not launch again

RENDEZVOUS = ("NNODES", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT")
TPU_CONTRACT = ("TORCH_TPU_SLICEBUILDER_ADDRESSES", "TORCH_TPU_TOPOLOGY", "TORCH_TPU_XPROF_SESSION_ID")


@dataclass(frozen=True)
class Hosts:
    """Where this host is in the job, from the TPU VM's variables."""

    hostnames: tuple[str, ...] = ()  # this slice's hosts, in worker order
    worker: int = 0
    slices: int = 1
    slice_index: int = 0
    coordinator: str | None = None  # host of MEGASCALE_COORDINATOR_ADDRESS

    @property
    def per_slice(self) -> int:
        return max(len(self.hostnames), 1)

    @property
    def nnodes(self) -> int:
        return self.per_slice * self.slices

    @property
    def node_rank(self) -> int:
        return self.slice_index * self.per_slice + self.worker

    @property
    def master(self) -> str:
        if self.slices > 1 and self.coordinator:
            return self.coordinator
        return self.hostnames[0] if self.hostnames else "localhost"


def hosts_from(env: Mapping[str, str]) -> Hosts:
    raw = env.get("TPU_WORKER_HOSTNAMES", "")
    names = tuple(h.strip() for h in raw.split(",") if h.strip())
    worker = env_int(env, "TPU_WORKER_ID", env_int(env, "CLOUD_TPU_TASK_ID", 0))
    ms = slices(env)
    if names and worker >= len(names):
        raise ConfigError(f"TPU_WORKER_ID={worker} is not an index into the {len(names)} TPU_WORKER_HOSTNAMES")
    if ms.count > 1 and not ms.coordinator:
        raise ConfigError(f"MEGASCALE_NUM_SLICES={ms.count} but MEGASCALE_COORDINATOR_ADDRESS is not set: the "
                          f"workers of the {ms.count} slices need it to find each other")
    return Hosts(names, worker, ms.count, ms.index, ms.coordinator)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class LaunchPlan:
    """What every local rank is started with: the shared variables, then its own ranks."""

    common: dict[str, str]
    nproc: int
    node_rank: int
    world: int
    ranks: list[dict[str, str]] = field(default_factory=list)


def launch_env(env: Mapping[str, str], device: str, nproc: int, port: int, tpus: Tpus,
               pick_port: Callable[[], int] = free_port) -> LaunchPlan:
    """The variables of the launch contract for this host's `nproc` ranks (see the module doc)."""
    hosts = hosts_from(env)
    out: dict[str, str] = {}

    def once(name: str, make: Callable[[], str | None]) -> None:
        value = env.get(name) or make()
        if value is not None:
            out[name] = value

    if device == "tpu":
        once("TORCH_TPU_XPROF_SESSION_ID", lambda: env.get("TPW_RUN_ID") or str(time.time_ns()))
        if len(hosts.hostnames) > 1 or "JOB_COMPLETION_INDEX" in env:
            base = env_int(env, "TORCH_TPU_BASE_PORT", TPU_BASE_PORT)
            per_host = env_int(env, "TORCH_TPU_DEVICES_PER_HOST", nproc)
            once("TORCH_TPU_SLICEBUILDER_ADDRESSES",
                 lambda: ",".join(f"{h}:{base + i}" for h in hosts.hostnames for i in range(per_host)))
            once("TORCH_TPU_TOPOLOGY", tpus.topology)
        else:
            once("TORCH_TPU_SLICEBUILDER_ADDRESSES",
                 lambda: ",".join(f"localhost:{pick_port()}" for _ in range(nproc)))

            def single_host_topology() -> str:
                topology = tpus.topology(nproc)
                if topology is None:
                    raise ConfigError(f"device=tpu: no TPU topology for {nproc} device(s) of this host "
                                      f"({tpus.count} {tpus.generation or 'TPU'} device(s) found)")
                return topology

            once("TORCH_TPU_TOPOLOGY", single_host_topology)
    once("NNODES", lambda: str(hosts.nnodes))
    once("NODE_RANK", lambda: str(hosts.node_rank))
    once("MASTER_ADDR", lambda: hosts.master)
    once("MASTER_PORT", lambda: str(port))
    nnodes, node_rank = int(out["NNODES"]), int(out["NODE_RANK"])
    world = nnodes * nproc
    plan = LaunchPlan(out, nproc, node_rank, world)
    for local in range(nproc):
        plan.ranks.append({"RANK": str(node_rank * nproc + local), "LOCAL_RANK": str(local),
                           "WORLD_SIZE": str(world), "LOCAL_WORLD_SIZE": str(nproc), "GROUP_RANK": str(node_rank)})
    return plan


def local_devices(device: str) -> int:
    """Ranks to start on this host by default: one per TPU device or GPU; one on CPU."""
    if device == "tpu":
        from .hardware import local_tpus

        return max(env_int(os.environ, "TORCH_TPU_DEVICES_PER_HOST", local_tpus().count), 1)
    if device == "cuda":
        import torch

        return max(torch.cuda.device_count(), 1)
    return 1


def is_launched_rank(env: Mapping[str, str] = os.environ) -> bool:
    return CHILD_MARKER in env


def worst_exit(codes: list[int]) -> int:
    """One exit code for the host: a preemption (75) wins, so the run resumes; else the first failure."""
    from .preemption import PREEMPTED_EXIT_CODE

    if PREEMPTED_EXIT_CODE in codes:
        return PREEMPTED_EXIT_CODE
    return next((c for c in codes if c != 0), 0)


def run_ranks(plan: LaunchPlan, argv: list[str], base_env: Mapping[str, str] | None = None) -> int:
    """Start `python -m tpu_trainer.train argv` once per local rank with the plan's variables and wait.

    SIGTERM (a preemption notice sent to this process alone) is passed on, so every rank saves;
    a rank that fails stops the others, which would otherwise wait for it in a collective."""
    env = dict(base_env if base_env is not None else os.environ)
    procs: list[subprocess.Popen[bytes]] = []
    for rank_env in plan.ranks:
        child = {**env, **plan.common, **rank_env, CHILD_MARKER: rank_env["RANK"]}
        procs.append(subprocess.Popen([sys.executable, "-m", "tpu_trainer.train", *argv], env=child))

    def forward(signum: int, frame: object) -> None:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signum)

    previous = signal.signal(signal.SIGTERM, forward)
    # SIGINT from a terminal or the run's Stop reaches every rank of the process group already.
    previous_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        codes: list[int | None] = [None] * len(procs)
        while any(c is None for c in codes):
            for i, p in enumerate(procs):
                if codes[i] is None:
                    codes[i] = p.poll()
            failed = [c for c in codes if c not in (None, 0)]
            if failed and any(c is None for c in codes):
                time.sleep(2)  # let the others notice a preemption and finish their save
                for p in procs:
                    if p.poll() is None:
                        p.terminate()
                for p in procs:
                    try:
                        p.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        p.kill()
                codes = [p.wait() for p in procs]
                break
            time.sleep(0.05)
        return worst_exit([c if c is not None else 1 for c in codes])
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
