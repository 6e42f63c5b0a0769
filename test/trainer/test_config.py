"""Config validation, did-you-mean, schedule, and presets vs dataclass defaults."""

import dataclasses
import itertools

import pytest
from omegaconf import OmegaConf

from _trainer_helpers import compose
from tpu_trainer.config import ConfigError, ModelConfig, SchedulerConfig, TrainConfig, config_keys, validate
from tpu_trainer.optim import lr_multiplier
from tpu_trainer.overrides import check_overrides
from tpu_trainer.schema import CONFIG_DIR


@pytest.mark.parametrize(
    ("mutate", "key"),
    [
        (lambda c: setattr(c, "device", "gpu"), "device='gpu'"),
        (lambda c: setattr(c.data, "name", "wikitext"), "data.name='wikitext'"),
        (lambda c: setattr(c, "max_steps", 0), "max_steps=0"),
        (lambda c: setattr(c.model, "hidden_size", 66), "model.hidden_size=66"),
        (lambda c: setattr(c.model, "num_key_value_heads", 3), "model.num_key_value_heads=3"),
        (lambda c: setattr(c, "block_size", 4096), "block_size=4096"),
        (lambda c: setattr(c.data, "name", "file"), "data.path"),
    ],
)
def test_validate_names_the_key(mutate, key):
    cfg = TrainConfig()
    mutate(cfg)
    with pytest.raises(ConfigError, match=key.replace("(", r"\(")):
        validate(cfg)


def test_defaults_are_valid():
    validate(TrainConfig())


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["max_step=20"], "unknown config key 'max_step'.*did you mean 'max_steps'"),
        (["model.hiden_size=8"], "unknown config key 'model.hiden_size'.*did you mean 'model.hidden_size'"),
        (["optimizer.learning_rate=1e-3"], "unknown config key 'optimizer.learning_rate'"),
        (["ici_mesh.fdsp=4"], "unknown config key 'ici_mesh.fdsp'.*did you mean 'ici_mesh.fsdp'"),
    ],
)
def test_check_overrides_rejects_unknown(argv, expected):
    msg = check_overrides(argv)
    assert msg is not None
    import re

    assert re.search(expected, msg), msg


def test_check_overrides_accepts_known():
    argv = ["model=llama-3-8b", "max_steps=3", "optimizer.lr=1e-3", "hydra.verbose=true", "--cfg", "job",
            "model.num_local_experts=2", "profile_dir=/tmp/x y"]
    assert check_overrides(argv) is None


def test_config_keys_cover_nested():
    keys = config_keys()
    assert {"model", "model.hidden_size", "optimizer.lr", "scheduler.warmup_steps", "device"} <= set(keys)


def test_tiny_llama_preset_equals_dataclass_defaults():
    # The schema shows dataclass defaults; they must be what `model=tiny-llama` (the default) gives.
    preset = OmegaConf.to_container(OmegaConf.load(CONFIG_DIR / "model" / "tiny-llama.yaml"))
    assert isinstance(preset, dict)
    assert preset.pop("defaults") == [{"sharding": "llama-fsdp-tp"}, {"remat": "none"}, "_self_"]
    defaults = dataclasses.asdict(ModelConfig())
    assert {k: defaults[str(k)] for k in preset} == preset


MODEL_PRESETS = sorted(p.stem for p in (CONFIG_DIR / "model").glob("*.yaml"))


def test_every_model_has_a_tiny_debug_size():
    assert {"llama-3-8b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "mixtral-8x7b", "tiny-llama",
            "tiny-llama-3.1", "tiny-mixtral"} <= set(MODEL_PRESETS)


@pytest.mark.parametrize("name", MODEL_PRESETS)
def test_presets_compose_and_validate(name):
    cfg = compose([f"model={name}", "block_size=2048"])
    validate(cfg)
    assert cfg.model.name == name
    assert cfg.model.sharding.parameters, "every model preset picks a sharding preset with rules"
    if "mixtral" in name:
        assert cfg.model.num_local_experts > 0 and cfg.model.sharding.name == "mixtral-fsdp-ep"
    if "3.1" in name:
        assert cfg.model.rope_scaling.rope_type == "llama3"


def test_published_shapes():
    # Architecture facts from the published model cards, as the presets must carry them.
    m = compose(["model=llama-3.1-405b"]).model
    assert (m.hidden_size, m.intermediate_size, m.num_hidden_layers, m.num_attention_heads,
            m.num_key_value_heads, m.vocab_size) == (16384, 53248, 126, 128, 8, 128256)
    m = compose(["model=llama-3.1-70b"]).model
    assert (m.hidden_size, m.intermediate_size, m.num_hidden_layers, m.num_attention_heads) == (8192, 28672, 80, 64)
    m = compose(["model=mixtral-8x7b"]).model
    assert (m.num_local_experts, m.num_experts_per_tok, m.vocab_size, m.rope_theta) == (8, 2, 32000, 1e6)


def test_lr_schedule():
    sched = SchedulerConfig(name="cosine", warmup_steps=4, min_lr_ratio=0.1)
    mults = [lr_multiplier(s, sched, 20) for s in range(20)]
    assert mults[0] == 0.25 and mults[3] == 1.0  # warmup never starts at 0 (an XLA special scalar)
    assert mults[4] == 1.0 and all(a >= b for a, b in itertools.pairwise(mults[4:]))
    assert lr_multiplier(20, sched, 20) == pytest.approx(0.1)
    lin = SchedulerConfig(name="linear", warmup_steps=0, min_lr_ratio=0.0)
    assert lr_multiplier(5, lin, 10) == pytest.approx(0.5)
    const = SchedulerConfig(name="constant", warmup_steps=2)
    assert [lr_multiplier(s, const, 10) for s in (0, 1, 2, 9)] == [0.5, 1.0, 1.0, 1.0]
