"""torch_xla (Cloud TPU, or XLA on CPU): the one module of the trainer that imports torch_xla.

The rest of the package reaches torch_xla only through XlaBackend (backends/base.py's
interface). The private torch_xla APIs the trainer relies on are listed in
PRIVATE_APIS and used only here; test/trainer/test_backend_boundary.py checks that
each still exists in the installed torch_xla, so an upgrade that moves one fails
there rather than in a run on a TPU. Imported only when the XLA backend is chosen:
the plain-CPU path works without torch_xla installed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr

from .. import runtime
from .. import sharding as sh
from ..config import MESH_AXES, ConfigError, MeshConfig, RematConfig, ShardingConfig
from ..model.llama import AttentionFn, LayerRunner, run_in_order
from .base import Backend, ShardedCheckpointing, checkpointed_layers, note_once

# Private torch_xla names used below (module path, then attribute path); each is checked against
# the installed torch_xla by the tests. Public APIs that do the same would replace them.
PRIVATE_APIS = (
    "torch_xla._XLAC._activate_preemption_sync_manager",  # preemption_notice
    "torch_xla._XLAC._sync_point_reached",  # preemption_notice
    "torch_xla.core.xla_model._get_device_context",  # flush_step_closures
    "torch_xla.utils.closures.AsyncClosureHandler._closure_queue",  # flush_step_closures (set in __init__)
    "torch_xla.experimental.distributed_checkpoint._helpers._sharded_cpu_state_dict",  # SpmdCheckpointing.to_host
    "torch_xla._internal.tpu._TPU_PCI_DEVICE_IDS",  # select: does this torch_xla know the VM's TPU (TPU7x)?
)


def select(spmd: str) -> XlaBackend:
    """The XLA device; with more than one device (or spmd=on) torch_xla is switched to SPMD
    before any tensor reaches the device."""
    if not os.environ.get("PJRT_DEVICE"):
        # torch_xla would guess (and print a warning); say what we do instead.
        print("PJRT_DEVICE is not set; torch_xla will pick a device (set PJRT_DEVICE=TPU or CPU)", flush=True)
    if os.environ.get("PJRT_DEVICE", "TPU").upper() == "TPU":
        # An older torch_xla on a newer TPU (TPU7x) finds no device and fails far from the cause.
        from torch_xla._internal import tpu as xla_tpu

        problems = runtime.check(os.environ, torch_xla.__version__, xla_tpu._TPU_PCI_DEVICE_IDS)
        if problems:
            raise RuntimeError("; ".join(problems))
    num_devices = xr.global_runtime_device_count()
    use_spmd = spmd == "on" or (spmd == "auto" and num_devices > 1)
    if use_spmd:
        xr.use_spmd()
    dev = torch_xla.device()
    hw = xm.xla_device_hw(dev)
    try:
        kind = xm.xla_device_kind(dev) or hw
    except RuntimeError:
        kind = hw
    if hw == "TPU" and os.environ.get("TPU_ACCELERATOR_TYPE"):
        kind = os.environ["TPU_ACCELERATOR_TYPE"]
    return XlaBackend(dev, kind, f"xla:{kind if hw != 'CPU' else 'CPU'}", hw=hw,
                      num_devices=num_devices if use_spmd else 1,
                      num_hosts=xr.process_count() if use_spmd else 1,
                      host_index=xr.process_index() if use_spmd else 0, spmd=use_spmd)


class _CarryLayer(torch.nn.Module):
    """Adapts a decoder layer (x, cos, sin) -> x to scan's carry -> carry form."""

    def __init__(self, layer: torch.nn.Module):
        super().__init__()
        self.layer = layer

    def forward(self, x: torch.Tensor, cos: torch.Tensor,
                sin: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.layer(x, cos, sin), cos, sin


class SpmdCheckpointing(ShardedCheckpointing):
    """torch_xla's SPMDSavePlanner / SPMDLoadPlanner; DCP's collectives run on a CPU (gloo)
    process group because the XLA backend has no collectives in SPMD mode."""

    def planners(self) -> tuple[Any, Any]:
        import torch.distributed as dist
        import torch_xla.distributed.xla_backend  # noqa: F401  registers the xla:// init method
        from torch_xla.experimental.distributed_checkpoint import SPMDLoadPlanner, SPMDSavePlanner

        if not dist.is_initialized():
            # One process per host; gloo carries DCP's plan exchange between hosts.
            dist.init_process_group("gloo", init_method="xla://")
        return SPMDSavePlanner(), SPMDLoadPlanner()

    def to_host(self, state: dict[str, Any]) -> dict[str, Any]:
        # What torch_xla's CheckpointManager.save_async does: every device's shards to host memory.
        from torch_xla.experimental.distributed_checkpoint._helpers import _sharded_cpu_state_dict

        out: dict[str, Any] = _sharded_cpu_state_dict(state)
        return out

    @property
    def coordinator(self) -> bool:
        return True  # every host commits its own local directory, as torch_xla's CheckpointManager does

    def process_group(self) -> Any:
        return None

    def barrier(self) -> None:
        pass


@dataclass
class XlaBackend(Backend):
    hw: str = "CPU"  # torch_xla's device hardware: TPU, CPU, ...
    mesh: Any = None  # the torch_xla Mesh under SPMD

    @property
    def is_tpu(self) -> bool:
        return self.hw == "TPU"

    @property
    def is_lazy(self) -> bool:
        return True

    def sync(self) -> None:
        # Cuts the lazily traced graph and dispatches it asynchronously (no host wait).
        torch_xla.sync()

    def memory(self) -> tuple[int, str]:
        try:
            info = xm.get_memory_info(self.device)
            return int(info["bytes_used"]), "device"
        except (RuntimeError, KeyError, TypeError, ValueError):
            return super().memory()  # XLA:CPU answers UNIMPLEMENTED: the process's RSS instead

    def compile_count(self) -> int | None:
        data = met.metric_data("CompileTime")
        return int(data[0]) if data else 0

    def write_report(self, path: Path) -> Path | None:
        """torch_xla's metrics report (compile/execute times, transfers, fallbacks to CPU ops)."""
        path.write_text(met.metrics_report(), encoding="utf-8")
        return path

    # -- layout -------------------------------------------------------------
    def build_mesh(self, ici: MeshConfig, dcn: MeshConfig) -> str:
        """Create the device mesh and make it torch_xla's global mesh."""
        if not self.spmd:
            return super().build_mesh(ici, dcn)
        ici_shape, dcn_shape = sh.resolve_mesh(ici, dcn, self.num_devices)
        if any(n > 1 for n in dcn_shape):
            self.mesh = xs.HybridMesh(ici_mesh_shape=ici_shape, dcn_mesh_shape=dcn_shape, axis_names=MESH_AXES)
        else:
            self.mesh = xs.Mesh(np.arange(self.num_devices), ici_shape, MESH_AXES)
        xs.set_global_mesh(self.mesh)
        self.mesh_shape = sh.device_mesh_shape(ici_shape, dcn_shape)
        return " ".join(f"{a}={n}" for a, n in zip(MESH_AXES, self.mesh_shape, strict=True))

    def shard_model(self, model: torch.nn.Module, sharding: ShardingConfig) -> dict[str, sh.Spec | None]:
        specs = super().shard_model(model, sharding)
        if not self.spmd:
            return specs
        names = []
        for name, p in model.named_parameters():
            spec = specs[name]
            xs.mark_sharding(p, self.mesh, spec if spec is not None else (None,) * p.dim())
            names.append(name)
        for pattern in sh.unused_rules(specs, sharding.parameters, names):
            note_once(f"model.sharding.parameters[{pattern!r}] matches no parameter of this model")
        return specs

    def check_batch(self, global_batch: int, sharding: ShardingConfig) -> None:
        """The batch must split evenly over the mesh axes of the input spec, and over the hosts."""
        if not self.spmd:
            return
        ways = sh.batch_split(sh.input_spec(sharding), self.mesh_shape)
        if global_batch % ways or global_batch % self.num_hosts:
            raise ConfigError(
                f"global_batch_size={global_batch} does not split over the {ways} devices of the batch axes "
                f"{sharding.inputs[0]} and {self.num_hosts} host(s)"
            )

    def to_device(self, batch: list[torch.Tensor], sharding: ShardingConfig) -> list[torch.Tensor]:
        """Under SPMD each device receives only its shard of the batch (and on a pod each host
        passes only its own rows: minibatch)."""
        if not self.spmd:
            return super().to_device(batch, sharding)
        spec = xs.ShardingSpec(self.mesh, sh.input_spec(sharding), minibatch=self.num_hosts > 1)
        # torch_xla annotates the result as its internal arena type; it is the list of moved tensors.
        moved: list[torch.Tensor] = xm.send_cpu_data_to_device(batch, self.device, spec)  # type: ignore[assignment, unused-ignore]
        return moved

    # -- kernels and rematerialisation ----------------------------------------------
    def default_attention_kernel(self) -> str:
        return "splash_attention" if self.is_tpu else "sdpa"

    def native_attention(self, kernel: str) -> AttentionFn | None:
        """torch_xla's Pallas kernels; they exist only on TPU."""
        if not self.is_tpu or kernel not in ("splash_attention", "flash_attention"):
            return None
        mesh = self.mesh
        batch_axes = ("data", "fsdp")
        qkv_spec = (batch_axes, "tensor", None, None) if mesh is not None else None

        if kernel == "flash_attention":
            from torch_xla.experimental.custom_kernel import flash_attention

            def flash(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
                out: torch.Tensor = flash_attention(q, k, v, causal=True, sm_scale=q.shape[-1] ** -0.5,
                                                    partition_spec=qkv_spec, mesh=mesh)
                return out

            return flash

        from torch_xla.experimental.splash_attention import SplashAttentionConfig, splash_attention

        # torch_xla annotates the specs as 1-tuples; they take one entry per dimension.
        qkv: Any = qkv_spec or (None, None, None, None)
        segment_ids: Any = (batch_axes, None) if mesh is not None else (None, None)
        config = SplashAttentionConfig(mesh=str(mesh) if mesh is not None else None, qkv_partition_spec=qkv,
                                       segment_ids_partition_spec=segment_ids).to_json()

        def splash(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            # The splash kernel does not scale the logits itself: scale q first.
            out: torch.Tensor = splash_attention(q * q.shape[-1] ** -0.5, k, v, config, causal=True)
            return out

        return splash

    def layer_runner(self, remat: RematConfig) -> LayerRunner:
        offload = bool(remat.offload_tensors)
        if offload and not self.is_tpu:
            note_once(f"model.remat.offload_tensors={list(remat.offload_tensors)}: host offload needs a TPU; "
                      f"activations stay in {self.device.type} memory")
            offload = False
        scan = remat.scan_layers
        if scan and not self.is_tpu and self.spmd:
            # torch_xla 2.9's scan over layers whose weights are sharded crashes XLA:CPU (SIGSEGV in
            # the SPMD partitioner); the loop computes the same thing.
            note_once("model.remat.scan_layers: scan under SPMD is TPU-only in this torch_xla; looping over layers")
            scan = False
        if scan:
            if offload:
                note_once("model.remat: offload with scan_layers is not supported by this backend; "
                          "scanning without it")
            return _scanned_layers(remat.activation_checkpoint)
        if not remat.activation_checkpoint:
            return run_in_order
        # torch_xla's checkpoint keeps XLA from merging the recomputation back into the forward
        # (common-subexpression elimination would undo it); it is reentrant only.
        from torch_xla.utils.checkpoint import checkpoint as xla_checkpoint

        def checkpoint(layer: torch.nn.Module, *args: torch.Tensor) -> torch.Tensor:
            out: torch.Tensor = xla_checkpoint(layer, *args, use_reentrant=True)
            return out

        # Checkpointing saves only each layer's input (`decoder_input`); with offload these
        # hooks park it in host memory until the backward pass needs it.
        return checkpointed_layers(checkpoint, _offload_hooks if offload else None)

    # -- host reads, profiler, preemption, checkpoints -----------------------------------
    def add_step_closure(self, fn: Callable[..., None], args: tuple[Any, ...]) -> None:
        # torch_xla calls it on its closure thread once the step's graph has executed.
        xm.add_step_closure(fn, args=args, run_async=True)

    def flush_step_closures(self) -> None:
        torch_xla.sync()  # runs closures still attached to the current (empty) step; compiles nothing
        handler = getattr(xm._get_device_context(), "async_closure_handler", None)
        if handler is not None:
            handler._closure_queue.join()

    def start_trace(self, profile_dir: Path) -> None:
        """torch_xla's in-process profiler session, in TensorBoard's layout
        (<dir>/plugins/profile/<timestamp>/<host>.xplane.pb)."""
        import torch_xla.debug.profiler as xp

        xp.start_trace(str(profile_dir))

    def step_annotation(self, step: int) -> AbstractContextManager[object]:
        """A step-root TraceMe named train_step with the step number, the event torch_xla's
        StepTrace writes (xprof's step grouping finds a step under each). Not StepTrace itself:
        it syncs again after the step, and the IR scope it pushes may not be open at the loop's
        own sync."""
        trace_me: AbstractContextManager[object] = torch_xla._XLAC.profiler.TraceMe("train_step", _r=1, step_num=step)
        return trace_me

    def stop_trace(self, profile_dir: Path) -> Path | None:
        import torch_xla.debug.profiler as xp

        self.sync()
        xp.stop_trace()
        found = sorted(profile_dir.glob("plugins/profile/*/*.xplane.pb"))
        return found[-1] if found else None

    def preemption_notice(self) -> Callable[[int], bool] | None:
        """torch_xla's preemption sync manager: on Cloud TPU a maintenance event becomes a
        "sync point reached" on every host at the same step. Only TPU runtimes have it."""
        if not self.is_tpu or os.environ.get("PJRT_DEVICE", "").upper() != "TPU":
            return None
        try:
            torch_xla._XLAC._activate_preemption_sync_manager()
        except Exception:
            return None

        def reached(step: int) -> bool:
            return bool(torch_xla._XLAC._sync_point_reached(step))

        return reached

    def sharded_checkpointing(self) -> ShardedCheckpointing | None:
        return SpmdCheckpointing() if self.spmd else None


def _offload_hooks() -> torch.autograd.graph.saved_tensors_hooks:
    """saved_tensors_hooks that keep saved activations in host memory (TPU host offload)."""
    from torch_xla.experimental.stablehlo_custom_call import place_to_device, place_to_host

    return torch.autograd.graph.saved_tensors_hooks(place_to_host, place_to_device)


def _scanned_layers(activation_checkpoint: bool) -> LayerRunner:
    """torch_xla's scan over the layers: one compiled layer body; with activation checkpointing the
    min-cut partitioner recomputes inside the body instead of saving every intermediate."""
    from functorch.compile import default_partition, min_cut_rematerialization_partition
    from torch_xla.experimental.scan_layers import scan_layers

    partition = min_cut_rematerialization_partition if activation_checkpoint else default_partition

    def run(layers: torch.nn.ModuleList, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        out, _, _ = scan_layers([_CarryLayer(layer) for layer in layers], (x, cos, sin), partition_fn=partition)
        return out

    return run
