"""The backend: device selection and every place where XLA and plain PyTorch differ.

Everything XLA-specific (import, SPMD mesh and sharding, attention kernels, scan
over layers, activation checkpointing and offload, graph cut, memory query,
metrics report, compile counter, profiler) lives here so the model and train.py
read the same on both paths, and a future native TPU backend replaces this one
module. torch_xla is imported lazily: the plain-CPU path must work without it.
"""

import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import torch
import torch.nn.functional as F

from . import sharding as sh
from .config import MESH_AXES, ConfigError, MeshConfig, RematConfig, ShardingConfig
from .metrics import host_rss_bytes

_NOTED: set[str] = set()


def note_once(msg: str) -> None:
    """A log line printed once per process (fallbacks the user should know about, not every step)."""
    if msg not in _NOTED:
        _NOTED.add(msg)
        print(msg, flush=True)


def worker_id() -> int:
    """This host's index in a multi-host TPU slice (set on TPU VMs and by the TPU Workbench emulator)."""
    for var in ("TPU_WORKER_ID", "CLOUD_TPU_TASK_ID"):
        value = os.environ.get(var, "").strip()
        if value.isdigit():
            return int(value)
    return 0


def xla_available() -> bool:
    try:
        import torch_xla  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass
class Runtime:
    device: torch.device
    is_xla: bool
    kind: str  # device kind for the peak-FLOPs table, e.g. "TPU v4", "CPU"
    label: str  # short name for logs and metrics, e.g. "xla:TPU v4", "cpu"
    num_devices: int = 1  # devices this program drives (all hosts' under SPMD)
    mesh: Any = None  # torch_xla Mesh under SPMD
    mesh_shape: tuple[int, ...] = ()
    num_hosts: int = 1  # processes in the SPMD program (TPU pod hosts)
    host_index: int = 0
    spmd: bool = False  # torch_xla in SPMD mode (xr.use_spmd()): params sharded over `mesh`,
    # checkpoints through torch_xla's sharding-aware DCP planners

    def build_mesh(self, ici: MeshConfig, dcn: MeshConfig) -> str:
        """Create the device mesh (SPMD only) and make it torch_xla's global mesh; returns a description."""
        if not self.spmd:
            return "none (one device per process)"
        import numpy as np
        import torch_xla.distributed.spmd as xs

        ici_shape, dcn_shape = sh.resolve_mesh(ici, dcn, self.num_devices)
        if any(n > 1 for n in dcn_shape):
            self.mesh = xs.HybridMesh(ici_mesh_shape=ici_shape, dcn_mesh_shape=dcn_shape, axis_names=MESH_AXES)
        else:
            self.mesh = xs.Mesh(np.arange(self.num_devices), ici_shape, MESH_AXES)
        xs.set_global_mesh(self.mesh)
        self.mesh_shape = sh.device_mesh_shape(ici_shape, dcn_shape)
        return " ".join(f"{a}={n}" for a, n in zip(MESH_AXES, self.mesh_shape))

    def shard_model(self, model: torch.nn.Module, sharding: ShardingConfig) -> dict[str, Any]:
        """Annotate every parameter with its partition spec (SPMD only); returns name -> spec."""
        named = [(n, tuple(p.shape)) for n, p in model.named_parameters()]
        specs = sh.param_specs(named, sharding.parameters)
        if not self.spmd:
            return specs
        import torch_xla.distributed.spmd as xs

        for name, p in model.named_parameters():
            spec = specs[name]
            xs.mark_sharding(p, self.mesh, spec if spec is not None else (None,) * p.dim())
        for pattern in sh.unused_rules(specs, sharding.parameters, [n for n, _ in named]):
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
        """Move host tensors to the device; under SPMD each device receives only its shard of the
        batch (and on a pod each host passes only its own rows: minibatch)."""
        if not self.spmd:
            return [t.to(self.device) for t in batch]
        import torch_xla.core.xla_model as xm
        import torch_xla.distributed.spmd as xs

        spec = xs.ShardingSpec(self.mesh, sh.input_spec(sharding), minibatch=self.num_hosts > 1)
        return list(xm.send_cpu_data_to_device(batch, self.device, spec))

    def sync(self) -> None:
        """End of step. On XLA this cuts the lazily traced graph and dispatches it
        asynchronously (no host wait); on eager CPU there is nothing to do."""
        if self.is_xla:
            import torch_xla

            torch_xla.sync()

    def memory(self) -> tuple[int, str]:
        """(bytes, kind): device bytes in use where the runtime reports them, else host RSS."""
        if self.is_xla:
            import torch_xla.core.xla_model as xm

            try:
                info = xm.get_memory_info(self.device)
                return int(info["bytes_used"]), "device"
            except (RuntimeError, KeyError, TypeError, ValueError):
                pass  # XLA:CPU answers UNIMPLEMENTED; fall back to the process's RSS
        return host_rss_bytes(), "host_rss"

    def compile_count(self) -> Optional[int]:
        """Graph compilations so far (host-side counter, no device sync)."""
        if not self.is_xla:
            return None
        import torch_xla.debug.metrics as met

        data = met.metric_data("CompileTime")
        return int(data[0]) if data else 0

    def write_report(self, path: Path) -> Optional[Path]:
        """torch_xla's metrics report (compile/execute times, transfers, fallbacks to CPU ops)."""
        if not self.is_xla:
            return None
        import torch_xla.debug.metrics as met

        path.write_text(met.metrics_report(), encoding="utf-8")
        return path


_CURRENT: list[Runtime] = []  # the runtime of this process's run, for the failure report


def write_failure_report(output_dir: Path) -> Optional[Path]:
    """torch_xla's metrics report for a run that raised (None off XLA or before a device was chosen)."""
    if not _CURRENT:
        return None
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
        return _CURRENT[-1].write_report(output_dir / "xla_metrics.txt")
    except OSError:
        return None


def select(device: str, spmd: str = "auto") -> Runtime:
    """Resolve `device` (auto|xla|cpu) to a Runtime. On XLA with more than one device (or
    spmd=on), switch torch_xla to SPMD before any tensor reaches the device."""
    use_xla = device == "xla" or (device == "auto" and bool(os.environ.get("PJRT_DEVICE")) and xla_available())
    if not use_xla:
        return Runtime(torch.device("cpu"), False, "CPU", "cpu")
    if not xla_available():
        raise RuntimeError("device=xla but torch_xla is not installed (pip install 'tpu-trainer[xla]')")
    if not os.environ.get("PJRT_DEVICE"):
        # torch_xla would guess (and print a warning); say what we do instead.
        print("PJRT_DEVICE is not set; torch_xla will pick a device (set PJRT_DEVICE=TPU or CPU)", flush=True)
    import torch_xla
    import torch_xla.core.xla_model as xm
    import torch_xla.runtime as xr

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
    label = f"xla:{kind if hw != 'CPU' else 'CPU'}"
    rt = Runtime(dev, True, kind, label, num_devices=num_devices if use_spmd else 1,
                 num_hosts=xr.process_count() if use_spmd else 1,
                 host_index=xr.process_index() if use_spmd else 0, spmd=use_spmd)
    _CURRENT.append(rt)
    return rt


def device_is_tpu(device: torch.device) -> bool:
    if device.type != "xla":
        return False
    import torch_xla.core.xla_model as xm

    return xm.xla_device_hw(device) == "TPU"


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, kernel: str) -> torch.Tensor:
    """Causal attention of q, k, v [batch, heads, seq, head_dim] (kv heads already expanded).

    splash/flash attention are torch_xla's Pallas kernels and exist only on TPU;
    asked for elsewhere (a TPU recipe tried on CPU), SDPA computes the same thing
    and a log line says so.
    """
    tpu = device_is_tpu(q.device)
    if kernel == "auto":
        kernel = "splash_attention" if tpu else "sdpa"
    if kernel in ("splash_attention", "flash_attention") and not tpu:
        note_once(f"model.attention_kernel={kernel} needs a TPU; using SDPA on {q.device.type}")
        kernel = "sdpa"
    scale = q.shape[-1] ** -0.5
    if kernel == "eager":
        scores = (q @ k.transpose(-1, -2)).float() * scale
        t = q.shape[-2]
        causal = torch.ones(t, t, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        return scores.softmax(-1).type_as(q) @ v
    if kernel == "sdpa":
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    import torch_xla.distributed.spmd as xs

    mesh = xs.get_global_mesh()
    batch_axes = ("data", "fsdp")
    qkv_spec = (batch_axes, "tensor", None, None) if mesh is not None else None
    if kernel == "flash_attention":
        from torch_xla.experimental.custom_kernel import flash_attention

        return flash_attention(q, k, v, causal=True, sm_scale=scale, partition_spec=qkv_spec, mesh=mesh)
    from torch_xla.experimental.splash_attention import SplashAttentionConfig, splash_attention

    # The splash kernel does not scale the logits itself: scale q first.
    config = SplashAttentionConfig(mesh=str(mesh) if mesh is not None else None,
                                   qkv_partition_spec=qkv_spec or (None, None, None, None),
                                   segment_ids_partition_spec=(batch_axes, None) if mesh is not None else (None, None))
    return splash_attention(q * scale, k, v, config.to_json(), causal=True)


class _CarryLayer(torch.nn.Module):
    """Adapts a decoder layer (x, cos, sin) -> x to scan's carry -> carry form."""

    def __init__(self, layer: torch.nn.Module):
        super().__init__()
        self.layer = layer

    def forward(self, x, cos, sin):
        return self.layer(x, cos, sin), cos, sin


def _spmd_active() -> bool:
    import torch_xla.runtime as xr

    return bool(xr.is_spmd())


def _offload_hooks():
    """saved_tensors_hooks that keep saved activations in host memory (TPU host offload)."""
    from torch_xla.experimental.stablehlo_custom_call import place_to_device, place_to_host

    return torch.autograd.graph.saved_tensors_hooks(place_to_host, place_to_device)


def run_layers(layers: torch.nn.ModuleList, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
               remat: RematConfig) -> torch.Tensor:
    """Apply the decoder layers in order, with the rematerialisation the config asks for."""
    xla = x.device.type == "xla"
    tpu = xla and device_is_tpu(x.device)
    offload = bool(remat.offload_tensors)
    if offload and not tpu:
        note_once(f"model.remat.offload_tensors={list(remat.offload_tensors)}: host offload needs a TPU; "
                  f"activations stay in {x.device.type} memory")
        offload = False
    scan = remat.scan_layers and xla
    if scan and not tpu and _spmd_active():
        # torch_xla 2.9's scan over layers whose weights are sharded crashes XLA:CPU (SIGSEGV in
        # the SPMD partitioner); the loop computes the same thing.
        note_once("model.remat.scan_layers: scan under SPMD is TPU-only in this torch_xla; looping over layers")
        scan = False
    if scan:
        from functorch.compile import default_partition, min_cut_rematerialization_partition
        from torch_xla.experimental.scan_layers import scan_layers

        if offload:
            note_once("model.remat: offload with scan_layers is not supported by this backend; scanning without it")
        partition = min_cut_rematerialization_partition if remat.activation_checkpoint else default_partition
        out, _, _ = scan_layers([_CarryLayer(layer) for layer in layers], (x, cos, sin), partition_fn=partition)
        return out
    if remat.scan_layers and not xla:
        note_once("model.remat.scan_layers: scan is an XLA feature; plain PyTorch runs the layers in a loop")
    if remat.activation_checkpoint and torch.is_grad_enabled():
        if xla:
            # torch_xla's variant keeps XLA from merging the recomputation back into the forward
            # (common-subexpression elimination would undo the checkpoint); it is reentrant only.
            from torch_xla.utils.checkpoint import checkpoint as xla_checkpoint

            def checkpoint(fn, *args):
                return xla_checkpoint(fn, *args, use_reentrant=True)
        else:
            from torch.utils.checkpoint import checkpoint as torch_checkpoint

            def checkpoint(fn, *args):
                return torch_checkpoint(fn, *args, use_reentrant=False)
        for layer in layers:
            if offload:
                # Checkpointing saves only each layer's input (`decoder_input`); these hooks
                # park it in host memory until the backward pass needs it.
                with _offload_hooks():
                    x = checkpoint(layer, x, cos, sin)
            else:
                x = checkpoint(layer, x, cos, sin)
        return x
    for layer in layers:
        x = layer(x, cos, sin)
    return x


class Profiler:
    """Captures steps [profile_step, profile_step + profile_steps) of a run, or, with
    duration_ms > 0, from profile_step until that much wall time has passed (checked at
    step boundaries, so the capture ends on a whole step).

    XLA: torch_xla's in-process profiler session writes TensorBoard's layout,
    <dir>/plugins/profile/<timestamp>/<host>.xplane.pb, which TPU Workbench reads.
    Plain torch: torch.profiler's Chrome trace at <dir>/plugins/profile/<ts>/<host>.pt.trace.json.
    """

    def __init__(self, rt: Runtime, profile_dir: Path, start_step: int, num_steps: int, duration_ms: int = 0):
        self.rt, self.dir = rt, profile_dir
        self.start, self.stop_after = start_step, start_step + num_steps - 1
        self.duration_s = duration_ms / 1000
        self._t0 = 0.0
        self._torch_prof: Any = None
        self.active = False
        self.written: Optional[Path] = None

    def before_step(self, step: int) -> None:
        if self.start < 1 or step != self.start:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        if self.rt.is_xla:
            import torch_xla.debug.profiler as xp

            xp.start_trace(str(self.dir))
        else:
            self._torch_prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
            self._torch_prof.__enter__()
        self.active = True
        self._t0 = time.perf_counter()

    def after_step(self, step: int) -> None:
        if not self.active:
            return
        if self.duration_s > 0:
            if time.perf_counter() - self._t0 >= self.duration_s:
                self.finish()
        elif step >= self.stop_after:
            self.finish()

    def finish(self) -> None:
        """Stop and write the trace (also called at the end of a run cut short)."""
        if not self.active:
            return
        self.active = False
        if self.rt.is_xla:
            import torch_xla.debug.profiler as xp

            self.rt.sync()
            xp.stop_trace()
            found = sorted(self.dir.glob("plugins/profile/*/*.xplane.pb"))
            self.written = found[-1] if found else None
        else:
            self._torch_prof.__exit__(None, None, None)
            out = self.dir / "plugins" / "profile" / time.strftime("%Y_%m_%d_%H_%M_%S")
            out.mkdir(parents=True, exist_ok=True)
            self.written = out / f"{socket.gethostname()}.pt.trace.json"
            self._torch_prof.export_chrome_trace(str(self.written))
