"""metrics.jsonl as the trainer really writes it, against the record's one schema
(protocol/metrics-record.schema.json): the file the extension checks every line against too."""

import copy

import pytest

from _metrics_schema import load_schema, problems, read_jsonl_strict, read_schema
from _trainer_helpers import clean_env, run_trainer, tiny_config
from tpu_trainer.train import train

SCHEMA = load_schema()


def check_records(records: list) -> None:
    assert records, "the trainer logged nothing"
    for r in records:
        why = problems(r, SCHEMA)
        assert not why, f"{why} in {r}"
        # The trainer writes every property the schema describes, and nothing it does not.
        assert set(r) == set(SCHEMA["properties"]), set(r) ^ set(SCHEMA["properties"])


def test_plain_cpu_records_fit_the_schema(tmp_path):
    train(tiny_config(tmp_path, max_steps=2, logging_steps=1, global_batch_size=2, block_size=16))
    records = read_jsonl_strict(tmp_path / "metrics.jsonl")
    assert [r["step"] for r in records] == [1, 2]
    check_records(records)
    assert all(r["device"] == "cpu" and r["compiles"] is None and r["mfu"] is None for r in records)


@pytest.mark.xla
def test_xla_cpu_records_fit_the_schema(tmp_path):
    """The torch_xla path (XLA:CPU) fills what plain CPU leaves null: the compile count."""
    env = clean_env(
        PJRT_DEVICE="CPU",
        XLA_FLAGS="--xla_cpu_multi_thread_eigen=false --xla_backend_optimization_level=0 "
        "--xla_llvm_disable_expensive_passes=true",
    )
    p = run_trainer(["max_steps=2", "logging_steps=1", "global_batch_size=2", "block_size=16", "num_threads=1",
                     f"output_dir={tmp_path}"], env, timeout=400)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    records = read_jsonl_strict(tmp_path / "metrics.jsonl")
    check_records(records)
    assert all(r["device"] == "xla:CPU" and isinstance(r["compiles"], int) for r in records)


@pytest.mark.parametrize(("record", "message"), [
    ({"loss": 1.0}, "no 'step'"),
    ({"step": 0}, "'step' is 0, expected at least 1"),
    ({"step": 1.5}, "'step' is 1.5, expected integer"),
    ({"step": True}, "'step' is True, expected integer"),
    ({"step": 1, "loss": "2.5"}, "'loss' is '2.5', expected number"),
    ({"step": 1, "mem_kind": "hbm"}, "'mem_kind' is 'hbm', expected one of ['device', 'host_rss']"),
    ({"step": 1, "compiles": 2.5}, "'compiles' is 2.5, expected integer or null"),
])
def test_the_check_names_the_field_at_fault(record, message):
    assert problems(record, SCHEMA) == [message]


def test_nan_is_not_json(tmp_path):
    """A diverged step's loss: Python writes NaN, which the extension's JSON.parse rejects."""
    f = tmp_path / "metrics.jsonl"
    f.write_text('{"step": 1, "loss": NaN}\n')
    with pytest.raises(ValueError, match="NaN is not JSON"):
        read_jsonl_strict(f)


def test_a_keyword_the_check_does_not_know_is_refused():
    changed = copy.deepcopy(SCHEMA)
    changed["properties"]["device"]["pattern"] = "^xla:"
    with pytest.raises(ValueError, match="pattern"):
        read_schema(changed)
