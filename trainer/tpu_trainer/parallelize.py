"""Apply a recipe's parallelism and kernels to a built model, from outside (as torchtitan's
parallelize functions do): the model computes, the backend provides the means, and
this module connects the two by `model.sharding`, `model.attention_kernel`, `model.remat`,
the training loss and `compile`.

On torch_xla (SPMD) the backend marks each parameter with its partition spec. On the native
path (backends/native.py: a DeviceMesh over one process per device) the same rules choose
DTensor tensor parallelism over the mesh's `tensor` axis: a weight whose spec puts `tensor`
on its output dimension (dim 0) is column-parallel, on its input dimension (dim 1) row-parallel,
as in Megatron; then FSDP2 shards every decoder layer and the rest of the model over
data x fsdp (HSDP when data > 1: replicated over data, sharded over fsdp).
"""

from __future__ import annotations

from typing import Any

from torch import nn

from . import sharding as sh
from .backends import Backend
from .config import ModelConfig
from .losses import LossFn
from .model.llama import Attention, AttentionFn, LayerRunner, Llama


def apply_sharding(model: nn.Module, backend: Backend, cfg: ModelConfig) -> dict[str, sh.Spec | None]:
    """Lay the parameters out over the backend's mesh by `model.sharding`; returns name -> spec."""
    specs = backend.shard_model(model, cfg.sharding)
    mesh = backend.device_mesh()
    if mesh is not None and isinstance(model, Llama):
        if mesh["tensor"].size() > 1:
            apply_tp(model, mesh["tensor"], specs)
        apply_fsdp(model, mesh)
    return specs


def tp_plan(specs: dict[str, sh.Spec | None], module_names: list[str]) -> dict[str, Any]:
    """Module name -> ColwiseParallel / RowwiseParallel, from where each weight's spec puts `tensor`."""
    from torch.distributed.tensor import Replicate
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel

    plan: dict[str, Any] = {}
    for name in module_names:
        spec = specs.get(f"{name}.weight")
        if not spec:
            continue
        on = [i for i, e in enumerate(spec) if e == "tensor" or (isinstance(e, tuple) and "tensor" in e)]
        if on == [0]:
            # An embedding's dim 0 is its vocabulary: split rows, replicated ids in, summed rows out.
            plan[name] = RowwiseParallel(input_layouts=Replicate()) if name == "embed_tokens" else ColwiseParallel()
        elif on == [1]:
            plan[name] = RowwiseParallel()
    return plan


def apply_tp(model: Llama, tp_mesh: Any, specs: dict[str, sh.Spec | None]) -> None:
    """DTensor tensor parallelism by the sharding rules. lm_head's weight is split over the vocabulary;
    the loss reads it as a DTensor (cut cross-entropy computes on its shard, the others gather it)."""
    from torch.distributed.tensor.parallel import parallelize_module

    from .config import ConfigError

    cfg, tp = model.cfg, tp_mesh.size()
    if cfg.num_local_experts:
        raise ConfigError("tensor parallelism of MoE experts runs on device=xla only; on the native path use "
                          "ici_mesh.tensor=1 for a Mixtral model")
    if cfg.num_key_value_heads % tp or cfg.num_attention_heads % tp:
        raise ConfigError(f"ici_mesh.tensor={tp} must divide model.num_key_value_heads={cfg.num_key_value_heads} "
                          f"and model.num_attention_heads={cfg.num_attention_heads}")
    names = [n for n, m in model.named_modules() if isinstance(m, (nn.Linear, nn.Embedding))]
    plan = tp_plan(specs, names)
    if plan:
        parallelize_module(model, tp_mesh, plan)


def apply_fsdp(model: Llama, mesh: Any) -> None:
    """FSDP2 over data x fsdp: each decoder layer its own unit (gathered just before it runs, freed
    after), the embeddings, final norm and lm_head the root's (gathered for the whole forward)."""
    from torch.distributed.fsdp import fully_shard

    dp = mesh["data", "fsdp"] if mesh["data"].size() > 1 else mesh["fsdp"]
    if dp.size() == 1:
        return
    for i, layer in enumerate(model.layers):
        # The last layer's parameters would be gathered again at once by the root's backward: keep them.
        fully_shard(layer, mesh=dp, reshard_after_forward=i < len(model.layers) - 1)
    fully_shard(model, mesh=dp)


def apply_attention(model: nn.Module, attention: AttentionFn) -> None:
    """Make every attention layer of `model` use `attention`."""
    for module in model.modules():
        if isinstance(module, Attention):
            module.attention_fn = attention


def apply_remat(model: Llama, run_layers: LayerRunner) -> None:
    """Run the decoder layers with `run_layers` (checkpointing, scan, offload)."""
    model.run_layers = run_layers


def apply_compile(model: Llama, backend: Backend) -> None:
    """torch.compile each decoder layer (one graph, reused by every layer of the same shape), as
    torchtitan does; the backend names the compiler (TorchTPU's on TPU, inductor elsewhere)."""
    for layer in model.layers:
        layer.compile(backend=backend.compile_backend(), fullgraph=True)


def apply_loss(model: Llama, loss_fn: LossFn) -> None:
    """The loss the model's forward returns when given targets (it reads lm_head's weight inside
    the forward, where FSDP has gathered it)."""
    model.loss_fn = loss_fn


def parallelize(model: Llama, backend: Backend, cfg: ModelConfig, loss_fn: LossFn | None = None,
                compile: bool = False) -> None:
    """Everything above that the config asks for; call after the model is on the device."""
    apply_attention(model, backend.attention(cfg.attention_kernel))
    apply_remat(model, backend.layer_runner(cfg.remat))
    if loss_fn is not None:
        apply_loss(model, loss_fn)
    if compile:
        apply_compile(model, backend)
    apply_sharding(model, backend, cfg)
