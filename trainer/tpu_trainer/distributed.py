"""The hosts and slices of a run, and how the ranks act as one group.

NativeRanks (at the end) is the native path's group: one process per device, FSDP2 inside.
The rest is the torch_xla (legacy) path's data parallelism across hosts over a gloo process
group, for multi-host runs without a TPU pod runtime: the emulator's workers (each a process on loopback,
told TPU_WORKER_ID and TPU_WORKER_HOSTNAMES like a TPU VM's workers) or CPU hosts.

Every rank draws the same global batch and trains on its own rows of it; after
backward the gradients (and the step's loss) are averaged over the group in one
all-reduce, so every host applies the same update, keeps the same parameters,
and logs the same loss. With equal row counts per rank the averaged gradient is
exactly the single-process gradient of the whole batch (up to float rounding).

Multislice: the TPU runtime tells each host of an N-slice run MEGASCALE_NUM_SLICES,
MEGASCALE_SLICE_ID and MEGASCALE_COORDINATOR_ADDRESS (host:port of slice 0's first
worker; MEGASCALE_PORT is that port), while TPU_WORKER_ID / TPU_WORKER_HOSTNAMES stay
per slice. Without a TPU runtime the slices' hosts join one gloo group, slice-major
(rank = slice * hosts_per_slice + worker), so the across-slice axis is data parallelism
over gloo like the rest, and slice s trains on the s-th block of rows of each batch:
the outermost (dcn_mesh) split of the batch. The dcn_mesh must then span exactly the
slices the runtime says there are.

On a real TPU pod the hosts instead form one SPMD program through torch_xla's
runtime (backends/xla.py: dcn_mesh becomes the slice dimension of its hybrid mesh);
this module then stays off.
"""

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

import torch
import torch.distributed as dist

from .config import MESH_AXES, ConfigError, MeshConfig


def worker_id() -> int:
    """This host's index in a multi-host TPU slice (set on TPU VMs and by the TPU Workbench emulator)."""
    for var in ("TPU_WORKER_ID", "CLOUD_TPU_TASK_ID"):
        value = os.environ.get(var, "").strip()
        if value.isdigit():
            return int(value)
    return 0


def worker_hostnames() -> list[str]:
    raw = os.environ.get("TPU_WORKER_HOSTNAMES", "").strip()
    return [h.strip() for h in raw.split(",") if h.strip()] if raw else []


@dataclass(frozen=True)
class Slices:
    """The multislice settings the TPU runtime exports (one slice when they are absent)."""

    count: int = 1
    index: int = 0
    coordinator: str | None = None  # host of slice 0's worker 0 (MEGASCALE_COORDINATOR_ADDRESS without the port)


def env_int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit():
        raise ConfigError(f"{name}={raw!r} is not a whole number (the TPU runtime sets it)")
    return int(raw)


def host_of(address: str) -> str:
    """'10.0.0.2:8080' -> '10.0.0.2'; '[::1]:8080' -> '::1'; a bare host stays as it is."""
    if address.startswith("["):
        return address[1:].split("]", 1)[0]
    return address.rsplit(":", 1)[0] if address.count(":") == 1 else address


def slices(env: Mapping[str, str] = os.environ) -> Slices:
    """This host's slice from MEGASCALE_NUM_SLICES / MEGASCALE_SLICE_ID / MEGASCALE_COORDINATOR_ADDRESS."""
    count = env_int(env, "MEGASCALE_NUM_SLICES", 1)
    index = env_int(env, "MEGASCALE_SLICE_ID", 0)
    if count < 1:
        raise ConfigError("MEGASCALE_NUM_SLICES=0: a multislice run has at least one slice")
    if index >= count:
        raise ConfigError(f"MEGASCALE_SLICE_ID={index} is not an index into the {count} slices of "
                          f"MEGASCALE_NUM_SLICES")
    address = env.get("MEGASCALE_COORDINATOR_ADDRESS", "").strip()
    return Slices(count, index, host_of(address) if address else None)


def dcn_slices(dcn: MeshConfig) -> int:
    """How many slices dcn_mesh spans (the product of its axes; -1 is refused later by resolve_mesh)."""
    return math.prod(max(getattr(dcn, a), 1) for a in MESH_AXES)


def check_dcn(dcn: MeshConfig, ms: Slices, gloo: bool) -> None:
    """dcn_mesh must span the slices there are: those MEGASCALE_NUM_SLICES names or, under gloo
    with none named, the one slice every host is in. (On a TPU VM the runtime may read the
    multislice settings from metadata instead of the environment; torch_xla checks the mesh there.)"""
    wanted = dcn_slices(dcn)
    shown = " ".join(f"{a}={getattr(dcn, a)}" for a in MESH_AXES if getattr(dcn, a) != 1) or "all axes 1"
    if ms.count > 1 and wanted != ms.count:
        raise ConfigError(
            f"dcn_mesh ({shown}) spans {wanted} slice(s) but MEGASCALE_NUM_SLICES={ms.count}; make the "
            f"dcn_mesh axes multiply to {ms.count} (e.g. dcn_mesh.fsdp={ms.count} or dcn_mesh.data={ms.count})"
        )
    if gloo and ms.count == 1 and wanted > 1:
        raise ConfigError(
            f"dcn_mesh ({shown}) asks for {wanted} slices but MEGASCALE_NUM_SLICES is not set, so all "
            f"the hosts of TPU_WORKER_HOSTNAMES are one slice; set dcn_mesh back to 1 or run on {wanted} slices"
        )


@dataclass
class DataParallel:
    rank: int = 0
    world: int = 1
    slices: int = 1  # slices in the group (ranks are slice-major)
    slice_index: int = 0

    @property
    def active(self) -> bool:
        return self.world > 1

    def rows(self, global_batch: int) -> slice:
        """This rank's rows of the global batch."""
        per = global_batch // self.world
        return slice(self.rank * per, (self.rank + 1) * per)

    def report(self, loss: torch.Tensor) -> torch.Tensor:
        """The loss to log: `average` returned the group's mean already."""
        return loss

    def average(self, grads: Iterable[torch.Tensor | None], loss: torch.Tensor) -> torch.Tensor:
        """Average the gradients in place and return the averaged loss, in one all-reduce.

        Tensors on an XLA device are brought to the host for gloo (that cuts the graph:
        multi-host gloo is for CPU hosts and the emulator, where it costs little)."""
        if not self.active:
            return loss
        present = [g for g in grads if g is not None]
        flat = torch.cat([g.reshape(-1).float() for g in present] + [loss.detach().reshape(1).float()]).cpu()
        dist.all_reduce(flat)
        flat /= self.world
        offset = 0
        device = loss.device
        for g in present:
            n = g.numel()
            g.copy_(flat[offset:offset + n].view_as(g).to(device=device, dtype=g.dtype))
            offset += n
        return flat[offset].to(device)

    def any(self, flag: bool) -> bool:
        """True on every rank when it is true on any: decisions that end the loop (a preemption
        notice reaching one host first) must be taken by all, or the others wait in an all-reduce."""
        if not self.active:
            return flag
        t = torch.tensor([1 if flag else 0], dtype=torch.int64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return bool(t.item())

    def agree(self, value: int, what: str) -> None:
        """Fail clearly when ranks disagree (e.g. resumed from different checkpoint steps)."""
        if not self.active:
            return
        t = torch.tensor([value, -value], dtype=torch.int64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        if int(t[0]) != -int(t[1]):
            raise RuntimeError(f"workers disagree on {what}: values from {-int(t[1])} to {int(t[0])}")

    def describe(self) -> str:
        """For the run's header line."""
        where = f" slice {self.slice_index}/{self.slices}" if self.slices > 1 else ""
        return f"data-parallel rank {self.rank}/{self.world}{where} (gloo)"

    def close(self) -> None:
        if self.active and dist.is_initialized():
            dist.destroy_process_group()


def setup(mode: str, worker: int, is_tpu_runtime: bool, port: int, timeout_s: int, global_batch: int,
          dcn: MeshConfig | None = None) -> DataParallel:
    """Join the hosts of TPU_WORKER_HOSTNAMES, of every slice MEGASCALE_NUM_SLICES names
    (mode gloo, or auto with several hosts off a TPU)."""
    hosts = worker_hostnames()
    ms = slices()
    per_slice = max(len(hosts), 1)
    world = per_slice * ms.count
    gloo = mode == "gloo" or (mode == "auto" and world > 1 and not is_tpu_runtime)
    check_dcn(dcn or MeshConfig(), ms, gloo)
    if not gloo:
        return DataParallel()
    if world < 2:
        raise ConfigError("distributed=gloo needs TPU_WORKER_HOSTNAMES to list at least two hosts "
                          "(or MEGASCALE_NUM_SLICES above 1)")
    if not 0 <= worker < per_slice:
        raise ConfigError(f"TPU_WORKER_ID={worker} is not an index into the {per_slice} TPU_WORKER_HOSTNAMES")
    if global_batch % world:
        what = f"{world} hosts" if ms.count == 1 else f"{world} hosts ({ms.count} slices of {per_slice})"
        raise ConfigError(f"global_batch_size={global_batch} does not split evenly over {what}")
    if ms.count > 1 and not ms.coordinator:
        raise ConfigError(f"MEGASCALE_NUM_SLICES={ms.count} but MEGASCALE_COORDINATOR_ADDRESS is not set: "
                          f"the workers of the {ms.count} slices need it to find each other")
    rank = ms.index * per_slice + worker
    first = ms.coordinator if ms.count > 1 and ms.coordinator else hosts[0]
    mine = hosts[worker] if hosts else first
    # gloo picks the interface to talk on from the address it binds; on the emulator every
    # worker has its own loopback address, so bind to ours rather than the hostname's.
    os.environ.setdefault("GLOO_SOCKET_IFNAME", _loopback_ifname(mine) or "")
    if not os.environ["GLOO_SOCKET_IFNAME"]:
        del os.environ["GLOO_SOCKET_IFNAME"]
    try:
        dist.init_process_group(
            "gloo", init_method=f"tcp://{first}:{port}", rank=rank, world_size=world,
            timeout=timedelta(seconds=timeout_s),
        )
    except (RuntimeError, dist.DistStoreError) as e:
        at = "worker 0" if ms.count == 1 else "slice 0's worker 0"
        raise RuntimeError(
            f"worker {worker}{f' of slice {ms.index}' if ms.count > 1 else ''}: could not join the {world} "
            f"workers' gloo group at {at} ({first}:{port}) within distributed_timeout_s={timeout_s}: "
            f"{str(e).splitlines()[0]}"
        ) from e
    return DataParallel(rank=rank, world=world, slices=ms.count, slice_index=ms.index)


def _loopback_ifname(host: str) -> str | None:
    return "lo" if host.startswith("127.") or host in ("localhost", "::1") else None


class NativeRanks(DataParallel):
    """The ranks of the native path (backends/native.py), seen as the loop sees a group: FSDP2 has
    averaged the gradients already, so `average` leaves them; the loss logged is the mean over
    every rank; stop and resume decisions go over the backend's gloo control group."""

    def __init__(self, backend: "NativeLike"):
        super().__init__(rank=backend.rank, world=backend.num_devices, slices=slices().count,
                         slice_index=slices().index)
        self.backend = backend

    def rows(self, global_batch: int) -> slice:
        return self.backend.rows(global_batch)

    def average(self, grads: Iterable[torch.Tensor | None], loss: torch.Tensor) -> torch.Tensor:
        return loss

    def report(self, loss: torch.Tensor) -> torch.Tensor:
        return self.backend.mean_over_ranks(loss)

    def any(self, flag: bool) -> bool:
        return self.backend.any(flag)

    def agree(self, value: int, what: str) -> None:
        self.backend.agree(value, what)

    def describe(self) -> str:
        where = f" slice {self.slice_index}/{self.slices}" if self.slices > 1 else ""
        return f"rank {self.rank}/{self.world}{where} ({self.backend.pg_backend})"

    def close(self) -> None:
        self.backend.close()


class NativeLike(Protocol):
    """What NativeRanks needs of backends/native.py's NativeBackend (not imported here: it imports torch_tpu lazily)."""

    rank: int
    num_devices: int

    @property
    def pg_backend(self) -> str: ...

    def rows(self, global_batch: int) -> slice: ...
    def mean_over_ranks(self, value: torch.Tensor) -> torch.Tensor: ...
    def any(self, flag: bool) -> bool: ...
    def agree(self, value: int, what: str) -> None: ...
    def close(self) -> None: ...
