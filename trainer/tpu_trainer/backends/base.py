"""The backend interface: what the trainer asks of the framework that runs it.

A backend owns the device and everything that differs between frameworks: the
device mesh and how parameters and batches are laid out on it, the end of a
step, attention kernels and rematerialisation, the memory query and compile
counter, the profiler, deferred reads of device values (step closures),
preemption notices and sharded checkpoints. train.py, parallelize.py,
checkpoint.py, loggers.py and preemption.py talk to this interface only, so a
new framework is one new module beside native.py and xla.py.

The defaults here are what plain (eager) PyTorch does: nothing to trace, nothing
to shard, values readable at once.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch
from torch.utils.checkpoint import checkpoint as torch_checkpoint

from .. import sharding as sh
from ..config import MeshConfig, RematConfig, ShardingConfig
from ..metrics import host_rss_bytes
from ..model.llama import AttentionFn, LayerRunner, eager_attention, run_in_order, sdpa_attention

_NOTED: set[str] = set()


def host_leader() -> bool:
    """Whether this process speaks for its host: the only one, or local rank 0 of the ranks the
    launcher started (the others train silently: one log, one metrics.jsonl per host)."""
    return os.environ.get("LOCAL_RANK", "0") == "0"


def note_once(msg: str) -> None:
    """A log line printed once per host (fallbacks the user should know about, not every step)."""
    if msg not in _NOTED:
        _NOTED.add(msg)
        if host_leader():
            print(msg, flush=True)


PORTABLE_ATTENTION: dict[str, AttentionFn] = {"sdpa": sdpa_attention, "eager": eager_attention}

# Checkpoints one layer call: (layer, x, cos, sin) -> x, recomputed in the backward pass.
CheckpointFn = Callable[..., torch.Tensor]


def checkpointed_layers(checkpoint: CheckpointFn,
                        saved_tensors: Callable[[], AbstractContextManager[Any]] | None = None) -> LayerRunner:
    """A layer runner that recomputes each layer in the backward pass. With `saved_tensors`,
    what checkpointing keeps (each layer's input) is saved under those hooks (host offload)."""

    def run(layers: torch.nn.ModuleList, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        if not torch.is_grad_enabled():
            return run_in_order(layers, x, cos, sin)
        for layer in layers:
            if saved_tensors is not None:
                with saved_tensors():
                    x = checkpoint(layer, x, cos, sin)
            else:
                x = checkpoint(layer, x, cos, sin)
        return x

    return run


class ShardedCheckpointing(Protocol):
    """How a backend whose parameters are sharded over devices (SPMD) saves and loads them with
    torch.distributed.checkpoint: planners that write each device's shards and reshard on load."""

    def planners(self) -> tuple[Any, Any]:
        """(save planner, load planner); joins the process group DCP needs on first use."""
        ...

    def to_host(self, state: dict[str, Any]) -> dict[str, Any]:
        """A host-memory copy of every device's shards of `state`, for a write on another thread."""
        ...

    @property
    def coordinator(self) -> bool:
        """Whether this process commits a checkpoint (marks, renames, prunes) for every rank that wrote it."""
        ...

    def process_group(self) -> Any:
        """The group DCP exchanges its plans over (None: the default group)."""
        ...

    def barrier(self) -> None:
        """Wait for every process that writes the checkpoint (a no-op where each writes its own directory)."""
        ...


@dataclass
class Backend(ABC):
    device: torch.device
    kind: str  # device kind for the peak-FLOPs table, e.g. "TPU v4", "CPU"
    label: str  # short name for logs and metrics, e.g. "xla:TPU v4", "cpu"
    num_devices: int = 1  # devices this program drives (all hosts' under SPMD)
    num_hosts: int = 1  # processes in the SPMD program (TPU pod hosts)
    host_index: int = 0
    spmd: bool = False  # one program over a mesh of devices, parameters sharded over it
    mesh_shape: tuple[int, ...] = field(default=(), init=False)

    # -- the device and the step -------------------------------------------
    @property
    @abstractmethod
    def is_tpu(self) -> bool:
        """Whether the devices are TPUs (TPU-only kernels and host offload are available)."""

    @property
    def is_lazy(self) -> bool:
        """True when device values exist only after sync() ran the traced step (read them in step closures)."""
        return False

    def sync(self) -> None:
        """End of step: run (or dispatch) what the step traced. Eager backends have nothing to do."""

    def memory(self) -> tuple[int, str]:
        """(bytes, kind): device bytes in use where the runtime reports them, else host RSS."""
        return host_rss_bytes(), "host_rss"

    def compile_count(self) -> int | None:
        """Graph compilations so far (host-side counter, no device sync); None where nothing compiles."""
        return None

    def write_report(self, path: Path) -> Path | None:
        """The framework's own metrics report, written to `path`; None where it has none."""
        return None

    # -- layout: mesh, parameters, batches -------------------------------------
    def build_mesh(self, ici: MeshConfig, dcn: MeshConfig) -> str:
        """Create the device mesh (SPMD only); returns a description for the log."""
        return "none (one device per process)"

    def shard_model(self, model: torch.nn.Module, sharding: ShardingConfig) -> dict[str, sh.Spec | None]:
        """Lay every parameter out over the mesh by the sharding rules; returns name -> spec.
        Off SPMD the rules are still checked (a wrong-rank rule is a config error everywhere)."""
        return sh.param_specs([(n, tuple(p.shape)) for n, p in model.named_parameters()], sharding.parameters)

    def device_mesh(self) -> Any:
        """The torch DeviceMesh that parallelize.py applies FSDP2 and tensor parallelism over
        (native backends with more than one rank); None where the framework shards itself (SPMD)."""
        return None

    def check_batch(self, global_batch: int, sharding: ShardingConfig) -> None:
        """Raise ConfigError when the batch cannot be split over the mesh (SPMD only)."""

    def to_device(self, batch: list[torch.Tensor], sharding: ShardingConfig) -> list[torch.Tensor]:
        """Move this host's rows of a batch to the device (SPMD: each device gets its shard)."""
        return [t.to(self.device) for t in batch]

    # -- kernels and rematerialisation -------------------------------------------
    def attention(self, kernel: str) -> AttentionFn:
        """The causal attention function for `model.attention_kernel`. Kernels this backend does
        not have (a TPU recipe tried on CPU) fall back to SDPA, which computes the same thing."""
        if kernel == "auto":
            kernel = self.default_attention_kernel()
        if kernel in PORTABLE_ATTENTION:
            return PORTABLE_ATTENTION[kernel]
        fn = self.native_attention(kernel)
        if fn is None:
            note_once(f"model.attention_kernel={kernel} needs a TPU; using SDPA on {self.device.type}")
            return sdpa_attention
        return fn

    def default_attention_kernel(self) -> str:
        return "sdpa"

    def native_attention(self, kernel: str) -> AttentionFn | None:
        """A backend-specific kernel (splash_attention, flash_attention), or None where there is none."""
        return None

    @abstractmethod
    def layer_runner(self, remat: RematConfig) -> LayerRunner:
        """How the decoder layers run for `model.remat`: in order, checkpointed, scanned, offloaded."""

    def compile_backend(self) -> str:
        """torch.compile's backend for `compile=true`."""
        return "inductor"

    # -- host reads, profiler, preemption, checkpoints ------------------------------
    def add_step_closure(self, fn: Callable[..., None], args: tuple[Any, ...]) -> None:
        """Call fn(*args) once the values of this step can be read without stalling the device
        (lazy backends: after the step ran, on another thread). Eager: now."""
        fn(*args)

    def flush_step_closures(self) -> None:
        """Wait until every closure added so far has run."""

    @abstractmethod
    def start_trace(self, profile_dir: Path) -> None:
        """Start capturing a profile into profile_dir."""

    def trace_step(self) -> None:
        """A step ended and the capture goes on to the next (torch.profiler marks each step of its
        trace, `ProfilerStep#N`, which is where the run view's Profiles tab takes steps from)."""

    def step_annotation(self, step: int) -> AbstractContextManager[object]:
        """What marks one training step in the capture while a trace runs, so that profilers find
        the capture's steps (none here: torch.profiler's trace has no step grouping we read)."""
        return nullcontext()

    @abstractmethod
    def stop_trace(self, profile_dir: Path) -> Path | None:
        """Stop the capture; returns the trace file written under profile_dir/plugins/profile/<ts>/."""

    def preemption_notice(self) -> Callable[[int], bool] | None:
        """A check, called at each step boundary with the step, that is true once the platform
        announced a preemption (beyond SIGTERM, which preemption.py handles itself); None: none."""
        return None

    def sharded_checkpointing(self) -> ShardedCheckpointing | None:
        """Checkpoint I/O for parameters sharded over devices; None when every process holds whole tensors."""
        return None


def torch_checkpointed_layers() -> LayerRunner:
    """Per-layer activation checkpointing with torch.utils.checkpoint (eager backends)."""

    def checkpoint(layer: torch.nn.Module, *args: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = torch_checkpoint(layer, *args, use_reentrant=False)
        return out

    return checkpointed_layers(checkpoint)
