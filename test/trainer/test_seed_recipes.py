"""Every hydra override line of torchprime's torch_xla recipes (the project's seed 001)
composes and validates unchanged, and the model it names builds on the meta device with the
published parameter count."""

import shlex

import pytest
import torch

from _trainer_helpers import compose
from tpu_trainer.config import resolve_aliases, validate
from tpu_trainer.model import build_model, count_params
from tpu_trainer.sharding import resolve_mesh

# The override lines as the recipes give them (after `tp run torchprime/torch_xla_models/train.py`),
# with the device count of the slice(s) they were written for.
RECIPES = [
    ("model=llama-3-8b dataset_config_name=wikitext-103-raw-v1 global_batch_size=1024 profile_step=6 "
     "profile_duration=20000 ici_mesh.fsdp=256 model/remat=llama-scan model.attention_kernel=splash_attention",
     256, 8.03e9),
    ("model=llama-3.1-8b dataset_config_name=wikitext-103-raw-v1 global_batch_size=1024 profile_step=6 "
     "profile_duration=20000 ici_mesh.fsdp=256 model/remat=llama-scan model.attention_kernel=splash_attention",
     256, 8.03e9),
    ("model=llama-3.1-70b dataset_config_name=wikitext-103-raw-v1 global_batch_size=512 profile_step=5 "
     "profile_duration=250000 ici_mesh.fsdp=256 model/remat=llama-scan-offload "
     "model.attention_kernel=splash_attention", 256, 70.6e9),
    ("model=llama-3.1-405b global_batch_size=256 block_size=8192 ici_mesh.fsdp=64 ici_mesh.tensor=4 "
     "profile_step=5 profile_duration=240000 dataset_config_name=wikitext-103-raw-v1 max_steps=50 logging_steps=10",
     256, 405.9e9),
    ("model=llama-3.1-405b global_batch_size=512 block_size=8192 dcn_mesh.fsdp=2 ici_mesh.fsdp=64 "
     "ici_mesh.tensor=4 profile_step=15 profile_duration=240000 dataset_config_name=wikitext-103-raw-v1 "
     "max_steps=50 logging_steps=10", 512, 405.9e9),
    ("model=mixtral-8x7b global_batch_size=512 ici_mesh.fsdp=256 dataset_config_name=wikitext-103-raw-v1 "
     "profile_step=5", 256, 46.7e9),
]


@pytest.mark.parametrize(("line", "devices", "params"), RECIPES, ids=[r[0].split()[0] for r in RECIPES])
def test_seed_recipe_composes_validates_and_builds(line, devices, params):
    cfg = compose(shlex.split(line))
    resolve_aliases(cfg)
    validate(cfg)
    assert cfg.data.name == "hf" and cfg.dataset_name == "wikitext"
    assert cfg.dataset_config_name == "wikitext-103-raw-v1"
    resolve_mesh(cfg.ici_mesh, cfg.dcn_mesh, devices)  # the mesh fits the slice(s) it was written for
    with torch.device("meta"):
        model = build_model(cfg.model)
    assert count_params(model) == pytest.approx(params, rel=0.01)
    assert all(p.is_meta for p in model.parameters())
