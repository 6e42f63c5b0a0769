"""Typed configuration for the trainer.

The dataclasses below are the single source of truth for every key a recipe may
override. Hydra composes `configs/default.yaml` on top of them (registered in the
ConfigStore as `trainer_schema`), so an unknown key or a wrongly typed value is
rejected before training starts, and `python -m tpu_trainer.schema` derives the
JSON Schema the language server reads from the same classes.

Field metadata conventions (read by `validate` and by `schema.py`):
  help     one-line description (hover text in the editor)
  enum     allowed values for a string field
  minimum  smallest allowed value for a number
"""

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Optional

from .rules import MESH_AXES, ConfigError, apply_aliases, run_checks

__all__ = ["MESH_AXES", "ConfigError"]  # defined with the rules; imported from here by the rest of the trainer


def opt(default: Any = dataclasses.MISSING, help: str = "", *, factory: Any = None, **schema: Any) -> Any:
    """A dataclass field carrying help text and schema constraints as metadata."""
    meta = {"help": help, **schema}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


@dataclass
class RopeScalingConfig:
    rope_type: str = opt(
        "none",
        "`llama3`: Llama 3.1's frequency-dependent RoPE scaling for long context; `none`: plain RoPE.",
        enum=["none", "llama3"],
    )
    factor: float = opt(8.0, "llama3: how much the low frequencies are slowed down.", minimum=1.0)
    low_freq_factor: float = opt(1.0, "llama3: wavelengths above original_max/low_freq_factor are scaled fully.",
                                 minimum=0.0)
    high_freq_factor: float = opt(4.0, "llama3: wavelengths below original_max/high_freq_factor are kept.",
                                  minimum=0.0)
    original_max_position_embeddings: int = opt(8192, "llama3: context length the model was pretrained at.",
                                                minimum=1)


@dataclass
class ShardingConfig:
    name: str = opt("llama-fsdp-tp", "Name of the sharding preset (`model/sharding=<name>`), for logs only.")
    parameters: dict[str, Any] = opt(
        help="SPMD partition spec per parameter: a glob over parameter names (`layers.*.mlp.down_proj.weight`) "
        "mapped to one entry per tensor dimension, each a mesh axis (data, fsdp, tensor, expert), null "
        "(replicated) or a list of axes. The first matching pattern wins; unmatched parameters are replicated.",
        factory=dict,
    )
    inputs: list[Any] = opt(
        help="Partition spec of the [batch, sequence] input tokens; the batch is split over these axes.",
        factory=lambda: [["data", "fsdp"], None],
    )


@dataclass
class RematConfig:
    name: str = opt("none", "Name of the remat preset (`model/remat=<name>`), for logs only.")
    activation_checkpoint: bool = opt(
        False, "Recompute each decoder layer's activations in the backward pass instead of storing them."
    )
    scan_layers: bool = opt(
        False, "Run the decoder layers with torch_xla's scan (one compiled layer body; XLA only, plain torch loops)."
    )
    offload_tensors: list[str] = opt(
        help="Activations to move to host memory between forward and backward (`decoder_input`); needs a "
        "backend with host offload (TPU). Ignored elsewhere, with a log line.",
        factory=list,
    )


@dataclass
class MeshConfig:
    data: int = opt(1, "Devices along the data-parallel axis (replicated parameters).", minimum=1)
    fsdp: int = opt(1, "Devices along the FSDP axis (parameters and batch sharded). -1: all that remain.",
                    minimum=-1)
    tensor: int = opt(1, "Devices along the tensor-parallel axis (Megatron-style column/row splits).", minimum=1)
    expert: int = opt(1, "Devices along the expert-parallel axis (MoE experts split).", minimum=1)


@dataclass
class ModelConfig:
    name: str = opt("tiny-llama", "Model name, for logs and metrics only (the `model=` group picks the shape).")
    vocab_size: int = opt(256, "Vocabulary size. The byte tokenizer needs at least 256.", minimum=1)
    hidden_size: int = opt(64, "Width of the residual stream.", minimum=1)
    intermediate_size: int = opt(172, "Hidden width of each SwiGLU MLP (per expert for MoE).", minimum=1)
    num_hidden_layers: int = opt(2, "Number of transformer blocks.", minimum=1)
    num_attention_heads: int = opt(4, "Query heads per attention layer.", minimum=1)
    num_key_value_heads: int = opt(2, "Key/value heads (GQA); must divide num_attention_heads.", minimum=1)
    rope_theta: float = opt(10000.0, "RoPE base frequency.", minimum=1.0)
    rms_norm_eps: float = opt(1e-5, "Epsilon of RMSNorm.", minimum=0.0)
    max_position_embeddings: int = opt(2048, "Longest sequence the RoPE table covers; block_size must fit.", minimum=1)
    tie_word_embeddings: bool = opt(False, "Share the input embedding with the output projection.")
    initializer_range: float = opt(0.02, "Std of the normal init of linear and embedding weights.", minimum=0.0)
    num_local_experts: int = opt(0, "Experts per MoE layer (Mixtral). 0 means a dense SwiGLU MLP.", minimum=0)
    num_experts_per_tok: int = opt(2, "Experts each token is routed to (MoE only).", minimum=1)
    attention_kernel: str = opt(
        "auto",
        "Attention implementation. splash_attention / flash_attention: torch_xla's Pallas kernels on TPU "
        "(elsewhere SDPA, with a log line); sdpa: torch's scaled_dot_product_attention; eager: plain matmuls "
        "and softmax; auto: splash on TPU, SDPA elsewhere.",
        enum=["auto", "sdpa", "eager", "flash_attention", "splash_attention"],
    )
    rope_scaling: RopeScalingConfig = opt(help="RoPE scaling (Llama 3.1).", factory=RopeScalingConfig)
    sharding: ShardingConfig = opt(help="SPMD sharding rules; pick a preset with `model/sharding=<name>`.",
                                   factory=ShardingConfig)
    remat: RematConfig = opt(help="Rematerialisation: activation checkpointing, scan, host offload; "
                             "`model/remat=<name>`.", factory=RematConfig)


@dataclass
class DataConfig:
    name: str = opt(
        "bundled",
        "Where tokens come from: `hf` (the Hugging Face dataset dataset_name/dataset_config_name; falls back to "
        "bundled, with a log line, when `datasets` is missing or the hub unreachable), `bundled` (small text "
        "shipped with the package), `file` (data.path: a text file, or a directory of .txt files), `synthetic` "
        "(uniform random tokens over the model vocabulary; for throughput runs).",
        enum=["hf", "bundled", "file", "synthetic"],
    )
    path: Optional[str] = opt(None, "Text file or directory of .txt files when data.name=file.")
    split: str = opt("train", "Dataset split (data.name=hf).")
    text_column: str = opt("text", "Column holding the text (data.name=hf).")
    tokenizer: str = opt(
        "byte",
        "`byte`: UTF-8 bytes are the tokens (vocab 256); otherwise the path of a tokenizer.json (or a "
        "directory holding one) read with the `tokenizers` library, e.g. a Llama 3 checkpoint's.",
    )
    max_documents: int = opt(0, "Use only the first N documents of the dataset (0: all). Handy for smoke runs.",
                             minimum=0)


@dataclass
class OptimizerConfig:
    name: str = opt(
        "adamw",
        "Optimizer. muon: Newton-Schulz-orthogonalised momentum for the hidden 2-D weights, AdamW "
        "(lr, betas, eps) for embeddings, lm_head, norms and biases.",
        enum=["adamw", "adafactor", "lion", "muon", "sgd"],
    )
    lr: float = opt(3e-4, "Peak learning rate (after warmup); for muon, the lr of its AdamW groups.", minimum=0.0)
    weight_decay: float = opt(
        0.1, "Decoupled weight decay (AdamW/Lion/Muon/Adafactor) / L2 (SGD); never on norms and biases.", minimum=0.0
    )
    beta1: float = opt(0.9, "AdamW/Lion beta1, or SGD momentum.", minimum=0.0)
    beta2: float = opt(0.95, "AdamW/Lion beta2.", minimum=0.0)
    eps: float = opt(1e-8, "AdamW epsilon.", minimum=0.0)
    grad_clip: float = opt(1.0, "Clip the global gradient norm to this value; 0 disables clipping.", minimum=0.0)
    grad_clip_value: float = opt(
        0.0, "Clamp every gradient element to [-v, v] (before norm clipping); 0 disables.", minimum=0.0
    )
    muon_lr: float = opt(0.02, "Peak lr of muon's orthogonalised (hidden 2-D weight) groups.", minimum=0.0)
    muon_momentum: float = opt(0.95, "Muon momentum (Nesterov).", minimum=0.0)
    ns_steps: int = opt(5, "Newton-Schulz iterations of muon.", minimum=1)
    adafactor_beta2_decay: float = opt(-0.8, "Adafactor: beta2 at step t is 1 - t^decay.")


@dataclass
class SchedulerConfig:
    name: str = opt(
        "cosine",
        "Learning-rate schedule after warmup. wsd: warmup-stable-decay (constant, then a linear decay over "
        "the last decay_ratio of the steps).",
        enum=["cosine", "linear", "wsd", "constant"],
    )
    warmup_steps: int = opt(10, "Steps of linear warmup from lr/warmup_steps to lr.", minimum=0)
    min_lr_ratio: float = opt(0.1, "Final lr as a fraction of the peak (cosine/linear/wsd).", minimum=0.0)
    decay_ratio: float = opt(0.2, "wsd: fraction of max_steps spent in the final decay.", minimum=0.0)


@dataclass
class LossConfig:
    name: str = opt(
        "cross_entropy",
        "Training loss. label_smoothing / z_loss: cross-entropy with that term (set its coefficient); "
        "cut_cross_entropy: the same maths chunked over tokens, never materialising the logits.",
        enum=["cross_entropy", "label_smoothing", "z_loss", "focal", "cut_cross_entropy"],
    )
    label_smoothing: float = opt(0.0, "Label smoothing epsilon (any loss but focal).", minimum=0.0)
    z_loss: float = opt(0.0, "Weight of the z-loss term z * logsumexp(logits)^2.", minimum=0.0)
    focal_gamma: float = opt(2.0, "Focal loss exponent gamma.", minimum=0.0)
    ignore_index: int = opt(-100, "Targets with this id are excluded from the loss.")
    chunk_elems: int = opt(0, "cut_cross_entropy: max logits elements per token chunk; 0 = automatic "
                           "(2^26 elements, at least 512 tokens).", minimum=0)


@dataclass
class CheckpointConfig:
    interval: int = opt(0, "Save every N steps (and at the end, and on preemption); 0 saves only at those.", minimum=0)
    dir: Optional[str] = opt(
        None, "Where checkpoints go: a path or an fsspec URL (gs://...). Default: <output_dir>/checkpoints."
    )
    keep: int = opt(3, "Keep the newest K complete checkpoints; older ones are deleted.", minimum=1)
    async_save: bool = opt(
        True, "Write in a background thread (plain torch, and XLA SPMD after copying the shards to the host); the "
        "step loop waits only for the copy.")
    enabled: bool = opt(True, "Save checkpoints at all (interval, end of run, preemption).")


@dataclass
class LoggingConfig:
    tensorboard: bool = opt(False, "Also write TensorBoard scalars to <output_dir>/tb (needs the tensorboard package).")
    wandb: bool = opt(False, "Also log to Weights & Biases (needs wandb; WANDB_MODE=offline works without network).")
    wandb_project: str = opt("tpu-workbench", "W&B project name.")
    wandb_mode: str = opt("offline", "W&B mode.", enum=["online", "offline", "disabled"])


@dataclass
class TaskConfig:
    name: str = opt(
        "train",
        "What the run does. train: next-token training with checkpoints; benchmark: throughput only "
        "(synthetic tokens, no checkpoints) — pick with `task=<name>`.",
        enum=["train", "benchmark"],
    )


@dataclass
class TrainConfig:
    model: ModelConfig = opt(help="Model shape; pick a preset with `model=<name>`.", factory=ModelConfig)
    data: DataConfig = opt(help="Training data; pick a preset with `dataset=<name>`.", factory=DataConfig)
    task: TaskConfig = opt(help="What the run does; pick a preset with `task=<name>`.", factory=TaskConfig)
    ici_mesh: MeshConfig = opt(
        help="Device mesh inside a slice (ICI): axis sizes; their product is the slice's device count.",
        factory=lambda: MeshConfig(fsdp=-1),
    )
    dcn_mesh: MeshConfig = opt(
        help="Mesh across slices (DCN, multislice): axis sizes; their product is the number of slices.",
        factory=MeshConfig,
    )
    dataset_name: Optional[str] = opt(
        None, "Hugging Face dataset id or local dataset directory (data.name=hf), e.g. `wikitext`."
    )
    dataset_config_name: Optional[str] = opt(
        None, "Hugging Face dataset config, e.g. `wikitext-103-raw-v1`. Setting it alone selects data.name=hf "
        "with dataset_name=wikitext, as torchprime's recipes expect."
    )
    optimizer: OptimizerConfig = opt(help="Optimizer settings.", factory=OptimizerConfig)
    scheduler: SchedulerConfig = opt(help="Learning-rate schedule.", factory=SchedulerConfig)
    loss: LossConfig = opt(help="Training loss; pick a preset with `loss=<name>`.", factory=LossConfig)
    checkpoint: CheckpointConfig = opt(help="Distributed checkpoints (DCP).", factory=CheckpointConfig)
    logging: LoggingConfig = opt(help="Extra metric writers (metrics.jsonl is always written).", factory=LoggingConfig)
    resume: str = opt(
        "none",
        "`auto`: continue from the newest complete checkpoint in checkpoint.dir if there is one; "
        "`none`: start fresh; anything else: the path/URL of one checkpoint to load.",
    )

    max_steps: int = opt(100, "Optimizer steps to run.", minimum=1)
    global_batch_size: int = opt(8, "Sequences per optimizer step.", minimum=1)
    block_size: int = opt(128, "Sequence length in tokens.", minimum=1)
    seed: int = opt(42, "Seed for init and data order; the same seed gives the same loss curve.")
    logging_steps: int = opt(
        10, "Log (and sync with the device) every N steps; step 1 and the last step are always logged.", minimum=1
    )
    output_dir: str = opt(
        "outputs/run",
        "Run directory: metrics.jsonl, summary.json, xla_metrics.txt, hydra's .hydra/. "
        "default.yaml sets a timestamped default; TPU Workbench appends its own.",
    )
    profile_dir: Optional[str] = opt(None, "Where profiles go (TensorBoard layout). Default: <output_dir>/profile.")
    profile_step: int = opt(-1, "Step at which to start a profile; -1 disables profiling.", minimum=-1)
    profile_steps: int = opt(3, "How many steps the profile covers (when profile_duration is 0).", minimum=1)
    profile_duration: int = opt(
        0, "Milliseconds to profile from profile_step (ending at the first step boundary after); 0: use "
        "profile_steps instead.", minimum=0,
    )
    distributed: str = opt(
        "auto",
        "How hosts join. tpu/cuda/cpu: `auto` and `gloo` join every host of TPU_WORKER_HOSTNAMES (and of every "
        "slice of MEGASCALE_NUM_SLICES) into one torch.distributed world; `off`: every host trains alone. "
        "xla: multi-host data parallelism without a TPU pod runtime (e.g. the emulator's workers on CPU): `gloo` "
        "joins the hosts of TPU_WORKER_HOSTNAMES in one gloo process group (rank TPU_WORKER_ID, rendezvous "
        "on the first host) and averages gradients and losses over it; with MEGASCALE_NUM_SLICES (multislice) "
        "the hosts of every slice join, slice-major, at MEGASCALE_COORDINATOR_ADDRESS's host; `auto`: gloo "
        "when there are several hosts and the device is not a TPU; `off`: every host trains alone.",
        enum=["auto", "gloo", "off"],
    )
    coordinator_port: int = opt(
        29500, "TCP port of the rendezvous on the first host (of slice 0): MASTER_PORT on the native path "
        "(torchrun's and TorchTPU's default), the gloo rendezvous of device=xla's hosts.", minimum=1)
    distributed_timeout_s: int = opt(180, "How long workers wait for each other to join (seconds).", minimum=1)
    device: str = opt(
        "auto",
        "`tpu`: TorchTPU (torch_tpu), one process per TPU device; `cuda`: one process per GPU (nccl); `cpu`: "
        "plain PyTorch (gloo between processes); `xla`: torch_xla, legacy (PJRT_DEVICE picks TPU/CPU); `auto`: "
        "xla when PJRT_DEVICE is set and torch_xla is installed, else tpu where a TPU and torch_tpu exist, "
        "cuda where a GPU exists, else cpu.",
        enum=["auto", "tpu", "cuda", "cpu", "xla"],
    )
    nproc_per_node: int = opt(
        0, "Processes (ranks) per host on tpu/cuda/cpu: 0 starts one per local device (TPU devices, GPUs; one on "
        "CPU). More than one CPU process per host shards the model over them with gloo, as a TPU host's devices.",
        minimum=0)
    compile: bool = opt(
        False, "torch.compile each decoder layer (tpu/cuda/cpu; TorchTPU's compiler on TPU, inductor elsewhere).")
    num_threads: int = opt(
        0, "torch intra-op threads (0 keeps torch's default). Use 1 when several workers share a host.", minimum=0
    )
    peak_flops_per_device: float = opt(
        0.0, "Peak FLOP/s of one device for MFU; 0 looks it up by device kind (unknown on CPU: mfu is null).",
        minimum=0.0,
    )


def _walk(obj: Any, prefix: str = "") -> Iterator[tuple[str, dataclasses.Field[Any], Any]]:
    """Yield (full_key, field, value) for every leaf field of a config dataclass tree."""
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        key = f"{prefix}{f.name}"
        if dataclasses.is_dataclass(value):
            yield from _walk(value, key + ".")
        else:
            yield key, f, value


def validate(cfg: TrainConfig) -> None:
    """Check enum/minimum metadata, then the cross-field rules (rules.CHECKS); raise ConfigError naming the key."""
    for key, f, value in _walk(cfg):
        enum = f.metadata.get("enum")
        if enum is not None and value not in enum:
            raise ConfigError(f"{key}={value!r} is not one of: {', '.join(enum)}")
        minimum = f.metadata.get("minimum")
        if minimum is not None and value is not None and value < minimum:
            raise ConfigError(f"{key}={value!r} is below the minimum {minimum}")

    run_checks(cfg)


def config_keys(cls: type = TrainConfig, prefix: str = "") -> list[str]:
    """Every dotted key the schema knows, groups included (used for did-you-mean)."""
    keys = []
    for f in dataclasses.fields(cls):
        key = f"{prefix}{f.name}"
        keys.append(key)
        if isinstance(f.type, type) and dataclasses.is_dataclass(f.type):
            keys.extend(config_keys(f.type, key + "."))
    return keys


def resolve_aliases(cfg: TrainConfig) -> list[str]:
    """Apply the trainer's shorthands (rules.ALIASES: torchprime's `dataset_config_name=X` alone means the
    Hugging Face wikitext dataset, config X; task=benchmark means synthetic tokens and no checkpoints).
    Returns the log lines describing what was inferred."""
    return apply_aliases(cfg)


def register_configs() -> None:
    """Register the schema with hydra so default.yaml can extend it (`defaults: [trainer_schema]`)."""
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(name="trainer_schema", node=TrainConfig)


def from_omegaconf(cfg: Any) -> TrainConfig:
    """Turn hydra's composed DictConfig into the plain dataclass (interpolations resolved)."""
    from omegaconf import OmegaConf

    obj = OmegaConf.to_object(cfg)
    assert isinstance(obj, TrainConfig), type(obj)
    return obj
