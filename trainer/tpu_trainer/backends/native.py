"""Native PyTorch: TorchTPU (`device=tpu`), CUDA (`device=cuda`) and CPU (`device=cpu`), one code path.

One process per device (launch.py starts them), joined by torch.distributed: TorchTPU's
`tpu_dist` backend, nccl or gloo. The mesh is a DeviceMesh with the axes of config.MESH_AXES,
sized by ici_mesh x dcn_mesh over the world (on TPU laid out by TorchTPU's
`topology_aware_mesh`, which knows the chips' physical order and the slices); parallelize.py
applies FSDP2 and DTensor tensor parallelism to the model over it. Host-side decisions (stop
on preemption, agree on the resume step) and DCP's plan exchange go over gloo groups of their
own, so they never wait on the device, and a checkpoint written on another thread never
interleaves with the training collectives.

torch_tpu is imported here only, and only for device=tpu: its import costs seconds and
claims the TPU, so `import torch` elsewhere must not load it (tpu_trainer/__init__.py turns
torch's backend autoload off where no TPU can be used).
"""

from __future__ import annotations

import logging
import math
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from .. import sharding as sh
from ..config import MESH_AXES, ConfigError, MeshConfig, RematConfig, ShardingConfig
from ..hardware import has_nvidia_gpu, local_tpus
from ..metrics import host_rss_bytes
from ..model.llama import LayerRunner, run_in_order
from .base import Backend, ShardedCheckpointing, note_once, torch_checkpointed_layers

PG_BACKENDS = {"tpu": "tpu_dist", "cuda": "nccl", "cpu": "gloo"}

# DTensor logs a hint at every gradient-norm reduction over fsdp x tensor (two all-reduces, one per mesh
# dimension); the reduction is right, and the hint would repeat on every rank at every step.
logging.getLogger("torch.distributed.tensor._redistribute").setLevel(logging.ERROR)


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    return int(raw) if raw.isdigit() else default


def refuse_without(device: str) -> None:
    """device=tpu or cuda where there is none: a one-line ConfigError naming what is missing."""
    if device == "tpu":
        from importlib.util import find_spec

        if not local_tpus().count:
            raise ConfigError("device=tpu but this machine has no TPU (no Google TPU PCI device open under "
                              "/dev/vfio); use device=auto or device=cpu here")
        if find_spec("torch_tpu") is None:
            raise ConfigError("device=tpu but torch_tpu is not installed (pip install torch_tpu; "
                              "scripts/python-env.sh with TPW_TPU=1 on a TPU VM)")
    if device == "cuda" and not (has_nvidia_gpu() and torch.cuda.is_available()):
        raise ConfigError("device=cuda but torch sees no CUDA GPU on this machine; use device=auto or device=cpu")


def select(device: str, timeout_s: int = 180) -> NativeBackend:
    """Join the process group the launcher described (or run alone) and pick this rank's device."""
    refuse_without(device)
    rank, world, local = _env_int("RANK", 0), _env_int("WORLD_SIZE", 1), _env_int("LOCAL_RANK", 0)
    if device == "tpu":
        import torch_tpu  # noqa: F401  registers the tpu device and the tpu_dist backend

        dev = torch.device("tpu", local)
        kind = os.environ.get("TPU_ACCELERATOR_TYPE") or local_tpus().generation or "TPU"
    elif device == "cuda":
        torch.cuda.set_device(local)
        dev = torch.device("cuda", local)
        kind = torch.cuda.get_device_name(dev)
    else:
        dev, kind = torch.device("cpu"), "CPU"
    backend = NativeBackend(dev, kind, device if device == "cpu" else f"{device}:{kind}", num_devices=world,
                            rank=rank, local_rank=local, device_type=device)
    if world > 1:
        backend.join(timeout_s)
    return backend


@dataclass
class NativeBackend(Backend):
    device_type: str = "cpu"
    rank: int = 0
    local_rank: int = 0
    mesh: Any = None  # the DeviceMesh over every rank
    control: Any = None  # gloo group for host-side agreement
    ckpt_group: Any = None  # gloo group for DCP (used from the checkpoint writer thread)
    _deferred: list[tuple[Callable[..., None], tuple[Any, ...]]] = field(default_factory=list, repr=False)
    _profile: Any = field(default=None, repr=False)

    @property
    def world(self) -> int:
        return self.num_devices

    @property
    def pg_backend(self) -> str:
        return PG_BACKENDS[self.device_type]

    def device_mesh(self) -> Any:
        return self.mesh

    @property
    def is_tpu(self) -> bool:
        return self.device_type == "tpu"

    def join(self, timeout_s: int) -> None:
        master = f"{os.environ.get('MASTER_ADDR', 'localhost')}:{os.environ.get('MASTER_PORT', '29500')}"
        # gloo talks on the interface of the address it binds; the emulator's workers each have a loopback address.
        if master.startswith(("127.", "localhost")) and "GLOO_SOCKET_IFNAME" not in os.environ:
            os.environ["GLOO_SOCKET_IFNAME"] = "lo"
        try:
            dist.init_process_group(PG_BACKENDS[self.device_type], rank=self.rank, world_size=self.world,
                                    timeout=timedelta(seconds=timeout_s),
                                    device_id=self.device if self.device_type == "cuda" else None)
        except (RuntimeError, dist.DistStoreError) as e:
            where = "slice 0's worker 0" if _env_int("MEGASCALE_NUM_SLICES", 1) > 1 else "worker 0"
            raise RuntimeError(f"rank {self.rank}: could not join the {self.world} ranks' rendezvous on {where} "
                               f"({master}) within distributed_timeout_s={timeout_s}: {str(e).splitlines()[0]}") from e
        cpu_groups = self.device_type == "cpu"
        self.control = dist.group.WORLD if cpu_groups else dist.new_group(backend="gloo")
        self.ckpt_group = dist.new_group(backend="gloo")

    # -- the device and the step -------------------------------------------
    def sync(self) -> None:
        """End of a step: read the values of the step before (their device work has finished by now, or
        finishes while this step's work is already queued), so the host never waits on the step it just issued."""
        pending, self._deferred = self._deferred, []
        for fn, args in pending:
            fn(*args)

    def add_step_closure(self, fn: Callable[..., None], args: tuple[Any, ...]) -> None:
        if self.device_type == "cpu":
            fn(*args)
            return
        host = tuple(_to_host_async(a) for a in args)
        self._deferred.append((fn, host))

    def flush_step_closures(self) -> None:
        if self.device_type == "cuda":
            torch.cuda.synchronize()
        self.sync()

    def memory(self) -> tuple[int, str]:
        if self.device_type == "cuda":
            return int(torch.cuda.memory_allocated(self.device)), "device"
        if self.device_type == "tpu":
            try:
                return int(torch.tpu.memory_allocated(self.device)), "device"  # type: ignore[attr-defined]
            except (AttributeError, RuntimeError):
                pass
        return host_rss_bytes(), "host_rss"

    # -- layout -------------------------------------------------------------
    def build_mesh(self, ici: MeshConfig, dcn: MeshConfig) -> str:
        ici_shape, dcn_shape = sh.resolve_mesh(ici, dcn, self.world)
        self.mesh_shape = sh.device_mesh_shape(ici_shape, dcn_shape)
        if self.world == 1:
            return "none (one process)"
        if self.mesh_shape[MESH_AXES.index("expert")] > 1:
            raise ConfigError("ici_mesh.expert / dcn_mesh.expert: expert parallelism runs on device=xla only; "
                              "on the native path put the devices on data, fsdp or tensor")
        from torch.distributed.device_mesh import DeviceMesh

        if self.is_tpu:
            import torch_tpu  # noqa: F401

            ranks = torch.tpu.distributed.topology_aware_mesh(  # type: ignore[attr-defined]
                "tpu", self.mesh_shape, dcn_mesh_shape=dcn_shape if math.prod(dcn_shape) > 1 else None)
        else:
            ranks = torch.from_numpy(rank_layout(ici_shape, dcn_shape))
        self.mesh = DeviceMesh(self.device_type, ranks, mesh_dim_names=MESH_AXES)
        return " ".join(f"{a}={n}" for a, n in zip(MESH_AXES, self.mesh_shape, strict=True))

    def check_batch(self, global_batch: int, sharding: ShardingConfig) -> None:
        check_batch_split(global_batch, self.dp_degree())

    def dp_degree(self) -> int:
        if not self.mesh_shape:
            return 1
        return self.mesh_shape[0] * self.mesh_shape[1]

    def rows(self, global_batch: int) -> slice:
        """This rank's rows: its place along data x fsdp (ranks of one tensor-parallel group share rows)."""
        if self.mesh is None:
            return slice(0, global_batch)
        coord = self.mesh.get_coordinate()
        dp_rank = coord[0] * self.mesh_shape[1] + coord[1]
        per = global_batch // self.dp_degree()
        return slice(dp_rank * per, (dp_rank + 1) * per)

    def shard_model(self, model: torch.nn.Module, sharding: ShardingConfig) -> dict[str, sh.Spec | None]:
        # The layout is parallelize.py's (FSDP2 and tensor parallelism); the XLA rules are still checked.
        return super().shard_model(model, sharding)

    # -- agreement between ranks (host values, gloo) -------------------------------
    def any(self, flag: bool) -> bool:
        if self.control is None:
            return flag
        t = torch.tensor([1 if flag else 0], dtype=torch.int64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.control)
        return bool(t.item())

    def agree(self, value: int, what: str) -> None:
        if self.control is None:
            return
        t = torch.tensor([value, -value], dtype=torch.int64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.control)
        if int(t[0]) != -int(t[1]):
            raise RuntimeError(f"ranks disagree on {what}: values from {-int(t[1])} to {int(t[0])}")

    def mean_over_ranks(self, value: torch.Tensor) -> torch.Tensor:
        """The mean of a per-rank scalar over every rank (for the logged loss), without a host sync."""
        if self.world == 1:
            return value
        out = value.detach().float().clone()
        dist.all_reduce(out)  # SUM: gloo has no AVG
        return out / self.world

    def close(self) -> None:
        if dist.is_initialized():
            dist.destroy_process_group()

    # -- kernels and rematerialisation ----------------------------------------------
    def layer_runner(self, remat: RematConfig) -> LayerRunner:
        if remat.offload_tensors:
            note_once(f"model.remat.offload_tensors={list(remat.offload_tensors)}: host offload is a torch_xla "
                      f"feature; activations stay in {self.device.type} memory")
        if remat.scan_layers:
            note_once("model.remat.scan_layers: scan is a torch_xla feature; the layers run in a loop "
                      "(compile=true compiles each layer once)")
        return torch_checkpointed_layers() if remat.activation_checkpoint else run_in_order

    def compile_backend(self) -> str:
        # TorchTPU registers its own torch.compile backend; inductor elsewhere.
        return "tpu" if self.is_tpu else "inductor"

    # -- profiler, checkpoints ---------------------------------------------------
    def start_trace(self, profile_dir: Path) -> None:
        activities = [torch.profiler.ProfilerActivity.CPU]
        config = None
        if self.device_type == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        if self.is_tpu:
            # TorchTPU's handler: an XPlane per rank (<host>_<rank>.xplane.pb) in TensorBoard's layout.
            activities.append(torch.profiler.ProfilerActivity.PrivateUse1)
            config = torch.tpu.profiler.TpuProfilerConfig(  # type: ignore[attr-defined]
                run_dir=str(profile_dir), worker_rank=str(self.rank))
        # A schedule that always records makes torch.profiler mark steps (`ProfilerStep#N`, from
        # trace_step), which the Profiles tab takes steps from; without one it marks none.
        self._profile = torch.profiler.profile(activities=activities, experimental_config=config,
                                               schedule=lambda _step: torch.profiler.ProfilerAction.RECORD,
                                               acc_events=True)
        self._profile.__enter__()

    def trace_step(self) -> None:
        if self._profile is not None:
            self._profile.step()

    def stop_trace(self, profile_dir: Path) -> Path | None:
        self.flush_step_closures()
        self._profile.__exit__(None, None, None)
        profile, self._profile = self._profile, None
        if self.is_tpu:
            found = sorted(profile_dir.glob("**/*.xplane.pb"), key=lambda p: p.stat().st_mtime)
            return found[-1] if found else None
        out = profile_dir / "plugins" / "profile" / time.strftime("%Y_%m_%d_%H_%M_%S")
        out.mkdir(parents=True, exist_ok=True)
        suffix = f"_{self.rank}" if self.world > 1 else ""
        written = out / f"{socket.gethostname()}{suffix}.pt.trace.json"
        profile.export_chrome_trace(str(written))
        return written

    def sharded_checkpointing(self) -> ShardedCheckpointing | None:
        return DcpGroupCheckpointing(self.ckpt_group, self.rank) if self.world > 1 else None


def check_batch_split(global_batch: int, dp_ranks: int) -> None:
    if global_batch % dp_ranks:
        raise ConfigError(f"global_batch_size={global_batch} does not split evenly over the {dp_ranks} "
                          f"data-parallel ranks (data x fsdp) of the mesh")


def rank_layout(ici_shape: tuple[int, ...], dcn_shape: tuple[int, ...]) -> np.ndarray:
    """Global ranks on the mesh: ranks are slice-major (the launcher's NODE_RANK), so along each
    axis the slice (dcn) index is the outer part of the position and the in-slice (ici) index the inner."""
    n = len(ici_shape)
    ranks = np.arange(math.prod(dcn_shape) * math.prod(ici_shape)).reshape(*dcn_shape, *ici_shape)
    interleaved = ranks.transpose([i for pair in zip(range(n), range(n, 2 * n), strict=True) for i in pair])
    return interleaved.reshape([d * i for d, i in zip(dcn_shape, ici_shape, strict=True)])


def _to_host_async(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and value.device.type != "cpu":
        return value.detach().to("cpu", non_blocking=True)
    return value


@dataclass
class DcpGroupCheckpointing:
    """DCP over a gloo group of the checkpoint's own: the default planners save each rank's DTensor
    shards once and reshard on load to whatever mesh the model has now (another world size too)."""

    group: Any
    rank: int
    _stager: Any = field(default=None, repr=False)

    @property
    def coordinator(self) -> bool:
        return self.rank == 0

    def process_group(self) -> Any:
        return self.group

    def planners(self) -> tuple[Any, Any]:
        from torch.distributed.checkpoint import DefaultLoadPlanner, DefaultSavePlanner

        return DefaultSavePlanner(), DefaultLoadPlanner()

    def barrier(self) -> None:
        dist.barrier(group=self.group)

    def to_host(self, state: dict[str, Any]) -> dict[str, Any]:
        """DCP's own stager: every DTensor's local shard copied to host memory (kept, pinned, and reused
        from one save to the next where there is a GPU to pin for)."""
        if self._stager is None:
            from torch.distributed.checkpoint.staging import BlockingAsyncStager

            self._stager = BlockingAsyncStager(cache_staged_state_dict=torch.cuda.is_available())
        staged: dict[str, Any] = self._stager.stage(state)
        return staged
