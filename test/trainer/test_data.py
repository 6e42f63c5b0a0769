"""Data: Hugging Face datasets (a local dataset directory: the hub is the one thing not
reachable here), local text files, a tokenizer.json from a path, packing with end-of-text
between documents, and the fallback to the bundled corpus."""

import pytest
import torch

from _trainer_helpers import compose
from tpu_trainer import data as data_lib
from tpu_trainer.config import ConfigError, DataConfig

DOCS = ["the quick brown fox jumps over the lazy dog. " * 3, "pack my box with five dozen liquor jugs. " * 3,
        "sphinx of black quartz, judge my vow. " * 3]


@pytest.fixture(scope="module")
def tokenizer_json(tmp_path_factory):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(DOCS * 10, trainers.BpeTrainer(vocab_size=120, special_tokens=["<unk>", "<|end_of_text|>"]))
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    tok.save(str(path))
    return path


def test_hf_local_dataset_with_tokenizer_and_packing(tmp_path, tokenizer_json):
    import datasets

    datasets.Dataset.from_dict({"text": [*DOCS, ""]}).save_to_disk(str(tmp_path / "ds"))
    cfg = DataConfig(name="hf", tokenizer=str(tokenizer_json.parent))
    tokens, what = data_lib.load_tokens(cfg, str(tmp_path / "ds"), None, vocab_size=128)
    assert what.startswith(f"hf:{tmp_path / 'ds'}") and "3 docs" in what  # the empty row is dropped
    tok = data_lib.load_tokenizer(str(tokenizer_json))
    eos = tok.eos_id
    assert eos is not None and int((tokens == eos).sum()) == 2  # between documents, not after the last
    first = tokens[: int((tokens == eos).nonzero()[0])]
    assert first.tolist() == tok.encode(DOCS[0])
    b = data_lib.Batches(cfg, 128, 4, 8, seed=0, dataset_name=str(tmp_path / "ds"))
    x, y = next(b)
    assert x.shape == (4, 8) and torch.equal(x[:, 1:], y[:, :-1])


def test_hf_parquet_directory_and_text_column(tmp_path):
    import datasets

    (tmp_path / "pq").mkdir()
    datasets.Dataset.from_dict({"body": DOCS}).to_parquet(str(tmp_path / "pq" / "train.parquet"))
    docs, _ = data_lib.load_texts(DataConfig(name="hf", text_column="body"), str(tmp_path / "pq"), None)
    assert docs == DOCS
    with pytest.raises(ConfigError, match=r"data.text_column='text' is not a column .* \['body'\]"):
        data_lib.load_texts(DataConfig(name="hf"), str(tmp_path / "pq"), None)


def test_unreachable_hub_falls_back_to_bundled(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # what an offline machine amounts to, without waiting on DNS
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    lines: list[str] = []
    docs, what = data_lib.load_texts(DataConfig(name="hf"), "wikitext", "wikitext-103-raw-v1", lines.append)
    assert what == "bundled" and docs == [data_lib.bundled_text()]
    assert "Hugging Face dataset wikitext/wikitext-103-raw-v1 unavailable" in lines[0]
    assert "falling back to the bundled corpus" in lines[0]


def test_file_directory_and_errors(tmp_path):
    (tmp_path / "a.txt").write_text("alpha")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.txt").write_text("beta")
    assert data_lib.file_texts(str(tmp_path)) == ["alpha", "beta"]
    with pytest.raises(ConfigError, match=r"data\.path='/nope/x\.txt' does not exist"):
        data_lib.file_texts("/nope/x.txt")
    with pytest.raises(ConfigError, match=r"no tokenizer\.json at"):
        data_lib.load_tokenizer(str(tmp_path))


def test_tokenizer_bigger_than_vocab_is_named(tokenizer_json):
    n = data_lib.load_tokenizer(str(tokenizer_json)).vocab_size
    with pytest.raises(ConfigError, match=rf"model.vocab_size=10 is smaller than the tokenizer's vocabulary \({n},"):
        data_lib.load_tokens(DataConfig(name="bundled", tokenizer=str(tokenizer_json)), vocab_size=10)


def test_dataset_config_name_alone_means_wikitext():
    from tpu_trainer.config import resolve_aliases

    cfg = compose(["dataset_config_name=wikitext-103-raw-v1"])
    notes = resolve_aliases(cfg)
    assert (cfg.data.name, cfg.dataset_name) == ("hf", "wikitext") and notes
    cfg = compose(["dataset=wikitext"])
    assert (cfg.data.name, cfg.dataset_name, cfg.dataset_config_name) == ("hf", "wikitext", "wikitext-2-raw-v1")
    cfg = compose(["task=benchmark"])
    resolve_aliases(cfg)
    assert cfg.data.name == "synthetic" and not cfg.checkpoint.enabled
