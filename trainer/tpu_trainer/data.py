"""Token streams for training: byte-level text or synthetic tokens.

Deliberately simple and deterministic: batches are random windows of a token
array, drawn with a torch.Generator seeded from the config, so the same seed
gives the same batches on every machine and every device type. Batches are built
on the host (CPU) and moved to the device by the trainer.
"""

from importlib import resources
from pathlib import Path
from typing import Any

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


class Batches:
    """Endless (inputs, targets) pairs of shape [batch_size, block_size]; targets are inputs shifted by one.

    Checkpointable: the whole position in the stream is the generator's state plus
    the count of batches drawn, so a run resumed mid-epoch (at any step, not only
    at an epoch boundary) draws exactly the batches the uninterrupted run would.
    """

    def __init__(self, cfg: DataConfig, vocab_size: int, batch_size: int, block_size: int, seed: int):
        self.vocab_size, self.batch_size, self.block_size = vocab_size, batch_size, block_size
        self.gen = torch.Generator().manual_seed(seed)
        self.drawn = 0
        self.windows = None
        if cfg.name != "synthetic":
            tokens = load_tokens(cfg)
            if tokens.numel() < block_size + 2:
                raise ValueError(f"data has {tokens.numel()} tokens, fewer than block_size+2={block_size + 2}")
            # Window offsets are drawn uniformly; a view per row (unfold) avoids a Python loop.
            self.windows = tokens.unfold(0, block_size + 1, 1)

    def __iter__(self) -> "Batches":
        return self

    def __next__(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self.windows is None:
            seq = torch.randint(0, self.vocab_size, (self.batch_size, self.block_size + 1), generator=self.gen)
        else:
            idx = torch.randint(0, self.windows.shape[0], (self.batch_size,), generator=self.gen)
            seq = self.windows[idx]
        self.drawn += 1
        return seq[:, :-1], seq[:, 1:]

    def state_dict(self) -> dict[str, Any]:
        return {"generator": self.gen.get_state(), "drawn": torch.tensor(self.drawn)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.gen.set_state(state["generator"])
        self.drawn = int(state["drawn"])


def batches(cfg: DataConfig, vocab_size: int, batch_size: int, block_size: int, seed: int) -> Batches:
    return Batches(cfg, vocab_size, batch_size, block_size, seed)
