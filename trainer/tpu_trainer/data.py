"""Token streams for training: text from a Hugging Face dataset, local files or
the bundled corpus, tokenized (bytes or a tokenizer.json) and packed; or
synthetic tokens.

Packing: documents are tokenized, joined with the tokenizer's end-of-text token
between them, and training windows of block_size+1 tokens are cut from that one
stream, so no padding is ever trained on. Deliberately deterministic: windows
are drawn with a torch.Generator seeded from the config, so the same seed gives
the same batches on every machine and device type, and the generator state plus
the count of batches drawn is the loader's whole position (checkpointed).
Batches are built on the host (CPU) and moved to the device by the trainer.
"""

from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import torch

from .config import ConfigError, DataConfig

BYTE_VOCAB = 256
_EOS_NAMES = ("<|end_of_text|>", "<|endoftext|>", "</s>", "<eos>")


class Tokenizer:
    """encode(text) -> ids, plus vocab size and the end-of-text id used between packed documents."""

    def __init__(self, encode: Callable[[str], list[int]], vocab_size: int, eos_id: int | None, name: str):
        self.encode, self.vocab_size, self.eos_id, self.name = encode, vocab_size, eos_id, name


def load_tokenizer(spec: str) -> Tokenizer:
    if spec == "byte":
        return Tokenizer(lambda text: list(text.encode("utf-8")), BYTE_VOCAB, None, "byte")
    path = Path(spec).expanduser()
    if path.is_dir():
        path = path / "tokenizer.json"
    if not path.is_file():
        raise ConfigError(f"data.tokenizer={spec!r}: no tokenizer.json at {path}")
    try:
        from tokenizers import Tokenizer as HfTokenizer
    except ImportError as e:
        raise ConfigError(f"data.tokenizer={spec!r} needs the `tokenizers` package (pip install tokenizers)") from e
    try:
        tok = HfTokenizer.from_file(str(path))
    except Exception as e:  # the library raises a bare Exception on malformed JSON
        raise ConfigError(f"data.tokenizer={spec!r}: {path} is not a tokenizer.json ({e})") from e
    eos = next((tok.token_to_id(n) for n in _EOS_NAMES if tok.token_to_id(n) is not None), None)
    return Tokenizer(lambda text: tok.encode(text, add_special_tokens=False).ids, tok.get_vocab_size(), eos,
                     str(path))


def encode(text: str) -> torch.Tensor:
    """Byte-level tokenizer: UTF-8 bytes are the token ids (vocab 256, nothing to train or ship)."""
    return torch.tensor(list(text.encode("utf-8")), dtype=torch.long)


def decode(tokens: torch.Tensor) -> str:
    return bytes(int(t) for t in tokens).decode("utf-8", errors="replace")


def bundled_text() -> str:
    """The small public-domain corpus shipped inside the package (works when pip-installed)."""
    return resources.files("tpu_trainer").joinpath("assets/corpus.txt").read_text(encoding="utf-8")


def file_texts(path: str) -> list[str]:
    """A .txt file, or every .txt file under a directory (sorted, one document each)."""
    p = Path(path).expanduser()
    if p.is_dir():
        files = sorted(p.rglob("*.txt"))
        if not files:
            raise ConfigError(f"data.path={path!r} is a directory without .txt files")
        return [f.read_text(encoding="utf-8") for f in files]
    if not p.is_file():
        raise ConfigError(f"data.path={path!r} does not exist")
    return [p.read_text(encoding="utf-8")]


def hf_texts(name: str, config: str | None, split: str, column: str, limit: int) -> list[str]:
    """Documents of a Hugging Face dataset: a hub id, a local dataset directory, or a dataset
    saved with save_to_disk. Raises RuntimeError (to fall back from) when it cannot be had."""
    try:
        import datasets
    except ImportError as e:
        raise RuntimeError("the `datasets` package is not installed") from e
    local = Path(name).expanduser()
    try:
        if local.is_dir() and ((local / "state.json").exists() or (local / "dataset_dict.json").exists()):
            ds = datasets.load_from_disk(str(local))
            ds = ds[split] if isinstance(ds, datasets.DatasetDict) else ds
        else:
            ds = datasets.load_dataset(str(local) if local.is_dir() else name, config, split=split)
    except Exception as e:  # offline hub, unknown config, missing split: all mean "not here"
        raise RuntimeError(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from e
    if column not in ds.column_names:
        raise ConfigError(f"data.text_column={column!r} is not a column of {name} (columns: {ds.column_names})")
    if limit:
        ds = ds.select(range(min(limit, len(ds))))
    return [t for t in ds[column] if t]


def load_texts(cfg: DataConfig, dataset_name: str | None, dataset_config_name: str | None,
               log: Callable[[str], None] = print) -> tuple[list[str], str]:
    """(documents, description) for data.name hf / file / bundled."""
    if cfg.name == "hf":
        try:
            docs = hf_texts(dataset_name or "", dataset_config_name, cfg.split, cfg.text_column, cfg.max_documents)
            return docs, f"hf:{dataset_name}/{dataset_config_name or '-'}[{cfg.split}] {len(docs)} docs"
        except RuntimeError as e:
            log(f"data: Hugging Face dataset {dataset_name}/{dataset_config_name} unavailable ({e}); "
                f"falling back to the bundled corpus")
    if cfg.name == "file":
        if not cfg.path:
            raise ConfigError("data.path must be set when data.name=file")
        docs = file_texts(cfg.path)
        return docs[: cfg.max_documents or None], f"file:{cfg.path} {len(docs)} docs"
    return [bundled_text()], "bundled"


def pack(docs: list[str], tok: Tokenizer) -> torch.Tensor:
    """One token stream: the documents' tokens with the end-of-text token between them."""
    ids: list[int] = []
    for i, doc in enumerate(docs):
        if i and tok.eos_id is not None:
            ids.append(tok.eos_id)
        ids.extend(tok.encode(doc))
    return torch.tensor(ids, dtype=torch.long)


def load_tokens(cfg: DataConfig, dataset_name: str | None = None, dataset_config_name: str | None = None,
                vocab_size: int | None = None, log: Callable[[str], None] = print) -> tuple[torch.Tensor, str]:
    tok = load_tokenizer(cfg.tokenizer)
    if vocab_size is not None and tok.vocab_size > vocab_size:
        raise ConfigError(
            f"model.vocab_size={vocab_size} is smaller than the tokenizer's vocabulary ({tok.vocab_size}, "
            f"data.tokenizer={cfg.tokenizer})"
        )
    docs, what = load_texts(cfg, dataset_name, dataset_config_name, log)
    return pack(docs, tok), f"{what}, tokenizer {tok.name}"


class Batches:
    """Endless (inputs, targets) pairs of shape [batch_size, block_size]; targets are inputs shifted by one.

    Checkpointable: the whole position in the stream is the generator's state plus
    the count of batches drawn, so a run resumed mid-epoch (at any step, not only
    at an epoch boundary) draws exactly the batches the uninterrupted run would.
    """

    def __init__(self, cfg: DataConfig, vocab_size: int, batch_size: int, block_size: int, seed: int,
                 dataset_name: str | None = None, dataset_config_name: str | None = None,
                 log: Callable[[str], None] = print):
        self.vocab_size, self.batch_size, self.block_size = vocab_size, batch_size, block_size
        self.gen = torch.Generator().manual_seed(seed)
        self.drawn = 0
        self.windows = None
        self.description = f"synthetic (vocab {vocab_size})"
        if cfg.name != "synthetic":
            tokens, self.description = load_tokens(cfg, dataset_name, dataset_config_name, vocab_size, log)
            if tokens.numel() < block_size + 2:
                raise ConfigError(
                    f"the data ({self.description}) has {tokens.numel()} tokens, fewer than "
                    f"block_size+2={block_size + 2}"
                )
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


def batches(cfg: DataConfig, vocab_size: int, batch_size: int, block_size: int, seed: int,
            dataset_name: str | None = None, dataset_config_name: str | None = None,
            log: Callable[[str], None] = print) -> Batches:
    return Batches(cfg, vocab_size, batch_size, block_size, seed, dataset_name, dataset_config_name, log)
