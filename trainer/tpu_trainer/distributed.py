"""Data parallelism across hosts over a gloo process group, for multi-host runs
without a TPU pod runtime: the emulator's workers (each a process on loopback,
told TPU_WORKER_ID and TPU_WORKER_HOSTNAMES like a TPU VM's workers) or CPU hosts.

Every rank draws the same global batch and trains on its own rows of it; after
backward the gradients (and the step's loss) are averaged over the group in one
all-reduce, so every host applies the same update, keeps the same parameters,
and logs the same loss. With equal row counts per rank the averaged gradient is
exactly the single-process gradient of the whole batch (up to float rounding).

On a real TPU pod the hosts instead form one SPMD program through torch_xla's
runtime (backends/xla.py); this module then stays off.
"""

import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

from .config import ConfigError


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


@dataclass
class DataParallel:
    rank: int = 0
    world: int = 1

    @property
    def active(self) -> bool:
        return self.world > 1

    def rows(self, global_batch: int) -> slice:
        """This rank's rows of the global batch."""
        per = global_batch // self.world
        return slice(self.rank * per, (self.rank + 1) * per)

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

    def close(self) -> None:
        if self.active and dist.is_initialized():
            dist.destroy_process_group()


def setup(mode: str, worker: int, is_tpu_runtime: bool, port: int, timeout_s: int, global_batch: int) -> DataParallel:
    """Join the hosts of TPU_WORKER_HOSTNAMES (mode gloo, or auto with several hosts off a TPU)."""
    hosts = worker_hostnames()
    if mode == "off" or (mode == "auto" and (len(hosts) < 2 or is_tpu_runtime)):
        return DataParallel()
    if len(hosts) < 2:
        raise ConfigError("distributed=gloo needs TPU_WORKER_HOSTNAMES to list at least two hosts")
    world = len(hosts)
    if not 0 <= worker < world:
        raise ConfigError(f"TPU_WORKER_ID={worker} is not an index into the {world} TPU_WORKER_HOSTNAMES")
    if global_batch % world:
        raise ConfigError(f"global_batch_size={global_batch} does not split evenly over {world} hosts")
    # gloo picks the interface to talk on from the address it binds; on the emulator every
    # worker has its own loopback address, so bind to ours rather than the hostname's.
    os.environ.setdefault("GLOO_SOCKET_IFNAME", _loopback_ifname(hosts[worker]) or "")
    if not os.environ["GLOO_SOCKET_IFNAME"]:
        del os.environ["GLOO_SOCKET_IFNAME"]
    try:
        dist.init_process_group(
            "gloo", init_method=f"tcp://{hosts[0]}:{port}", rank=worker, world_size=world,
            timeout=timedelta(seconds=timeout_s),
        )
    except (RuntimeError, dist.DistStoreError) as e:
        raise RuntimeError(
            f"worker {worker}: could not join the {world} workers' gloo group at worker 0 "
            f"({hosts[0]}:{port}) within distributed_timeout_s={timeout_s}: {str(e).splitlines()[0]}"
        ) from e
    return DataParallel(rank=worker, world=world)


def _loopback_ifname(host: str) -> str | None:
    return "lo" if host.startswith("127.") or host in ("localhost", "::1") else None
