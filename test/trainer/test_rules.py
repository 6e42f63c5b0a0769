"""The trainer's cross-field rules as data (tpu_trainer/rules.py): the language server runs the same ones from the
schema, so their expressions must stay inside the subset both sides evaluate, and validate() must refuse what the
rules refuse."""

import pytest

from tpu_trainer import rules
from tpu_trainer.config import ConfigError, TrainConfig, config_keys, resolve_aliases, validate
from tpu_trainer.schema import build_schema


@pytest.mark.parametrize(
    "expr",
    ["__import__('os')", "a < b < c", "(lambda: 1)()", "model.name.upper()", "[1, 2]", "a ** 2", "a if b else c",
     "open('x')", "model.sharding.parameters['x']", "b'x' == model.name"],
)
def test_expressions_outside_the_subset_are_refused(expr):
    with pytest.raises((ValueError, SyntaxError)):
        rules.parse(expr)


def test_the_schema_carries_every_rule():
    exported = build_schema()["x-rules"]
    assert [c["check"] for c in exported["checks"]] == [c.check for c in rules.CHECKS]
    assert [a["when"] for a in exported["aliases"]] == [a.when for a in rules.ALIASES]


def test_a_rule_on_a_key_the_config_lacks_is_refused_at_export(monkeypatch):
    monkeypatch.setattr(rules, "CHECKS", (*rules.CHECKS, rules.Check("model.hiden_size > 0", "typo")))
    with pytest.raises(ValueError, match=r"model\.hiden_size"):
        rules.export(set(config_keys()))


def test_operators_keep_pythons_semantics():
    cfg = TrainConfig()
    assert rules.evaluate("dataset_name or 'wikitext'", cfg) == "wikitext"
    assert rules.evaluate("(ici_mesh.fsdp == -1) + (ici_mesh.data == -1)", cfg) == 1
    assert rules.evaluate("-7 // 2 == -4 and -7 % 2 == 1", cfg) is True
    assert rules.keys_of("not model.num_local_experts or model.num_experts_per_tok <= model.num_local_experts") == [
        "model.num_local_experts", "model.num_experts_per_tok"]


def test_messages_fill_with_pythons_str():
    cfg = TrainConfig()
    cfg.model.hidden_size = 65
    with pytest.raises(ConfigError, match=r"^model.hidden_size=65 is not divisible by model.num_attention_heads=4$"):
        validate(cfg)


def _with(**changes: object) -> TrainConfig:
    cfg = TrainConfig()
    for key, value in changes.items():
        *parents, last = key.split("__")
        obj = cfg
        for p in parents:
            obj = getattr(obj, p)
        setattr(obj, last, value)
    return cfg


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"ici_mesh__fsdp": 0}, "ici_mesh.fsdp=0 must be a positive size or -1"),
        ({"ici_mesh__tensor": -1, "ici_mesh__fsdp": -1}, "ici_mesh: at most one axis may be -1"),
        ({"model__hidden_size": 68}, "must be even"),
        ({"model__num_local_experts": 2, "model__num_experts_per_tok": 3}, "must not exceed"),
        ({"loss__name": "label_smoothing"}, "needs loss.label_smoothing > 0"),
        ({"data__name": "hf"}, "dataset_name must be set"),
        ({"model__rope_scaling__rope_type": "llama3", "model__rope_scaling__low_freq_factor": 5.0}, "must exceed"),
        ({"model__sharding__inputs": [["data", "fsdp"], "seq"]}, "'seq' is not a mesh axis"),
        ({"model__sharding__parameters": {"w": "fsdp"}}, "model.sharding.parameters['w'] must be a list"),
    ],
)
def test_each_rule_refuses(changes, message):
    # The rules alone (validate() checks each field's minimum first, which hides the -1 rule).
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("(", r"\(")):
        rules.run_checks(_with(**changes))


def test_aliases_run_before_the_checks():
    cfg = _with(dataset_config_name="wikitext-2-raw-v1")
    assert resolve_aliases(cfg) == ["dataset_config_name=wikitext-2-raw-v1: data.name=hf dataset_name=wikitext"]
    assert (cfg.data.name, cfg.dataset_name) == ("hf", "wikitext")
    validate(cfg)
    bench = _with(task__name="benchmark", model__vocab_size=8)
    assert resolve_aliases(bench) == ["task=benchmark: synthetic tokens, no checkpoints"]
    assert bench.checkpoint.enabled is False
    validate(bench)  # a vocabulary too small for bytes is fine on synthetic tokens
