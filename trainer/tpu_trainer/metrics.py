"""Throughput, MFU and memory accounting, and the metrics.jsonl writer.

metrics.jsonl is the contract with TPU Workbench (the run view charts it): one
JSON object per logged step, one line each, flushed as it is written so a tail
over SSH sees it at once. Its fields are described once, in the repository's
protocol/metrics-record.schema.json: the extension checks every line against
that file, and test/trainer/test_metrics_schema.py checks what this trainer
writes against it (every field present, of its type). A field added here goes
into the schema first.

MFU: FLOPs per token = 6 * N + 12 * L * H * Q * T, where N counts the
parameters that take part in matmuls (all but the input embedding table; for
MoE only the k routed experts), L layers, H query heads, Q head dim, T sequence
length. 6N is the forward+backward cost of the dense matmuls (2 forward, 4
backward per parameter); 12LHQT is the attention score and value matmuls, which
parameter counts miss (PaLM, appendix B). Causal masking is not discounted, as
is common. MFU = tokens_per_s * flops_per_token / (peak * devices).
"""

import json
import os
import resource
from pathlib import Path
from typing import Any

from .config import ModelConfig

# Peak dense bf16 FLOP/s per chip, from the vendors' published specs. TPU7x (Ironwood):
# 2307 TFLOP/s bf16 per chip, Google's TPU7x page (docs.cloud.google.com/tpu/docs/tpu7x,
# "Peak compute per chip (BF16)", read 2026-11-24).
PEAK_FLOPS = {
    "tpuv2": 45e12,
    "tpuv3": 123e12,
    "tpuv4": 275e12,
    "tpuv5lite": 197e12,  # v5e; the runtime calls it "TPU v5 lite"
    "tpuv5e": 197e12,
    "tpuv5p": 459e12,
    "tpuv5": 459e12,  # "TPU v5" is v5p
    "tpuv6lite": 918e12,  # v6e (Trillium)
    "tpuv6e": 918e12,
    "tpu7x": 2307e12,  # Ironwood: device kind "TPU7x", accelerator type tpu7x-8, machine type tpu7x-standard-4t
    "tpuv7x": 2307e12,  # the v7x-8 spelling some tools use
    "tpuv7": 2307e12,  # "TPU v7"
    "a100": 312e12,
    "h100": 989e12,
    "h200": 989e12,  # the H100's tensor cores with more memory: 989 TFLOP/s dense bf16 (SXM)
}

# Devices per chip where a chip is more than one device to the runtime: each TPU7x chip's two
# TensorCores are two devices (a TPU7x VM's 4 chips are 8 devices), so MFU, which multiplies the
# peak by the device count, takes half a chip's peak per device. (v4 and v5p also have two
# TensorCores per chip but the runtime joins them into one megacore device.)
DEVICES_PER_CHIP = {"tpu7x": 2, "tpuv7x": 2, "tpuv7": 2}


def normalize_kind(kind: str) -> str:
    """'TPU v5 lite' -> 'tpuv5lite'; accelerator types 'v5litepod-8' / 'v6e-16' -> 'tpuv5lite' / 'tpuv6e';
    'TPU7x' / 'tpu7x-8' / 'tpu-v7x' -> 'tpu7x...' / 'tpuv7x'."""
    k = kind.lower().replace(" ", "").replace("_", "")
    if k.startswith("tpu-"):
        k = "tpu" + k[4:]
    if k.startswith("v") and k[1:2].isdigit():  # an accelerator type such as v4-8
        k = "tpu" + k.split("-")[0].replace("litepod", "lite")
    return k


def _table_key(kind: str) -> str | None:
    k = normalize_kind(kind)
    # Longest key first so 'tpuv5lite' wins over 'tpuv5'.
    for key in sorted(PEAK_FLOPS, key=len, reverse=True):
        if k.startswith(key) or (key in ("a100", "h100", "h200") and key in k):
            return key
    return None


def peak_flops_per_chip(kind: str) -> float | None:
    """Peak bf16 FLOP/s of one chip for a device kind string, or None when unknown (e.g. CPU)."""
    key = _table_key(kind)
    return PEAK_FLOPS[key] if key else None


def peak_flops(kind: str) -> float | None:
    """Peak FLOP/s of one device (what the runtime counts as a device) for a device kind string,
    or None when unknown (e.g. CPU)."""
    key = _table_key(kind)
    return PEAK_FLOPS[key] / DEVICES_PER_CHIP.get(key, 1) if key else None


def matmul_params(m: ModelConfig) -> int:
    """Parameters that take part in matmuls per token (N in 6N): all but the input embedding;
    for MoE only the experts a token is routed to."""
    head_dim = m.hidden_size // m.num_attention_heads
    attn = m.hidden_size * head_dim * (2 * m.num_attention_heads + 2 * m.num_key_value_heads)
    mlp = 3 * m.hidden_size * m.intermediate_size
    if m.num_local_experts:
        mlp = mlp * m.num_experts_per_tok + m.hidden_size * m.num_local_experts  # + router
    norms = 2 * m.hidden_size
    per_layer = attn + mlp + norms
    head = m.hidden_size * m.vocab_size  # lm_head (the tied embedding is this same matrix)
    return m.num_hidden_layers * per_layer + m.hidden_size + head


def flops_per_token(m: ModelConfig, seq_len: int) -> float:
    head_dim = m.hidden_size // m.num_attention_heads
    return 6.0 * matmul_params(m) + 12.0 * m.num_hidden_layers * m.num_attention_heads * head_dim * seq_len


def host_rss_bytes() -> int:
    """Current resident set size (Linux /proc), else the peak from getrusage."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class MetricsWriter:
    """Appends one JSON line per logged step to <output_dir>/metrics.jsonl.

    A fresh run truncates the file (a run directory belongs to one run). A
    resumed run keeps the records up to the step it resumed from and drops any
    later ones (logged after that checkpoint by the interrupted process, and
    about to be logged again), so the file reads as one uninterrupted run.

    With TPW_METRICS_ECHO set (a run on GKE), each record is also printed on
    stdout after that prefix: a pod's log is the one channel TPU Workbench can
    read from every cluster while the run goes and after it ends, so the run
    view charts those lines (extension/src/core/run/gke-follow.ts).
    """

    def __init__(self, path: Path, keep_until_step: int = 0):
        self.path = path
        self._echo = os.environ.get("TPW_METRICS_ECHO") or None
        path.parent.mkdir(parents=True, exist_ok=True)
        kept = []
        if keep_until_step > 0 and path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    if json.loads(line)["step"] <= keep_until_step:
                        kept.append(line + "\n")
                except (ValueError, KeyError, TypeError):
                    break  # a torn last line from a killed process
        self._f = open(path, "w", encoding="utf-8")  # noqa: SIM115 - appended to at every logged step until close()
        self._f.writelines(kept)
        self._f.flush()

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, allow_nan=True)
        self._f.write(line + "\n")
        self._f.flush()
        if self._echo:
            print(self._echo + line, flush=True)

    def close(self) -> None:
        self._f.close()
