"""Token streams for training: byte-level text or synthetic tokens.

Deliberately simple and deterministic: batches are random windows of a token
array, drawn with a torch.Generator seeded from the config, so the same seed
gives the same batches on every machine and every device type. Batches are built
on the host (CPU) and moved to the device by the trainer.
"""

from importlib import resources
from pathlib import Path
from typing import Iterator

import torch

from .config import DataConfig

BYTE_VOCAB = 256


def encode(text: str) -> torch.Tensor:
    """Byte-level tokenizer: UTF-8 bytes are the token ids (vocab 256, nothing to train or ship)."""
    return torch.tensor(list(text.encode("utf-8")), dtype=torch.long)


def decode(tokens: torch.Tensor) -> str:
    return bytes(int(t) for t in tokens).decode("utf-8", errors="replace")


def bundled_text() -> str:
    """The small public-domain corpus shipped inside the package (works when pip-installed)."""
    return resources.files("tpu_trainer").joinpath("assets/corpus.txt").read_text(encoding="utf-8")


def load_tokens(cfg: DataConfig) -> torch.Tensor:
    if cfg.name == "bundled":
        return encode(bundled_text())
    if cfg.name == "file":
        return encode(Path(cfg.path).read_text(encoding="utf-8"))
    raise ValueError(f"data.name={cfg.name!r} has no token file")


def batches(
    cfg: DataConfig, vocab_size: int, batch_size: int, block_size: int, seed: int
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Endless (inputs, targets) pairs of shape [batch_size, block_size]; targets are inputs shifted by one."""
    gen = torch.Generator().manual_seed(seed)
    if cfg.name == "synthetic":
        while True:
            seq = torch.randint(0, vocab_size, (batch_size, block_size + 1), generator=gen)
            yield seq[:, :-1], seq[:, 1:]

    tokens = load_tokens(cfg)
    if tokens.numel() < block_size + 2:
        raise ValueError(f"data has {tokens.numel()} tokens, fewer than block_size+2={block_size + 2}")
    # Window offsets are drawn uniformly; a view per row (unfold) avoids a Python loop.
    windows = tokens.unfold(0, block_size + 1, 1)
    while True:
        idx = torch.randint(0, windows.shape[0], (batch_size,), generator=gen)
        seq = windows[idx]
        yield seq[:, :-1], seq[:, 1:]
