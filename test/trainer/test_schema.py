"""The checked-in JSON Schema must match the config dataclasses and hydra tree."""

import json

from _trainer_helpers import REPO
from tpu_trainer import schema
from tpu_trainer.config import config_keys

SCHEMA_FILE = REPO / "trainer" / "config.schema.json"


def test_checked_in_schema_is_current():
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema.render(), (
        "trainer/config.schema.json is stale: run "
        "PYTHONPATH=trainer python -m tpu_trainer.schema trainer/config.schema.json"
    )


def test_check_flag_detects_stale(tmp_path):
    path = tmp_path / "s.json"
    assert schema.main([str(path)]) == 0
    assert schema.main(["--check", str(path)]) == 0
    path.write_text(path.read_text().replace('"default": 100', '"default": 101'))
    assert schema.main(["--check", str(path)]) == 1


def test_schema_content():
    s = json.loads(SCHEMA_FILE.read_text())
    props = s["properties"]

    def lookup(key):
        node = {"properties": props}
        for part in key.split("."):
            node = node["properties"][part]
        return node

    for key in config_keys():  # every key the trainer accepts is described
        assert "description" in lookup(key), key
    assert props["device"]["enum"] == ["auto", "tpu", "cuda", "cpu", "xla"]
    assert props["max_steps"] == {**props["max_steps"], "type": "integer", "default": 100, "minimum": 1}
    assert props["profile_dir"]["type"] == ["string", "null"]
    assert props["output_dir"]["default"].startswith("outputs/${now:")
    assert s["additionalProperties"] is False and props["model"]["additionalProperties"] is False
    groups = s["x-hydra"]["groups"]
    assert groups["model"]["default"] == "tiny-llama"
    presets = {"tiny-llama", "tiny-mixtral", "llama-3-8b", "llama-3.1-405b", "mixtral-8x7b"}
    assert presets <= set(groups["model"]["options"])
    assert groups["model"]["options"]["mixtral-8x7b"]["num_local_experts"] == 8
    # nested groups, with the default the default model picks
    assert groups["model/remat"]["default"] == "none"
    assert set(groups["model/remat"]["options"]) == {"none", "llama", "llama-scan", "llama-scan-offload"}
    assert groups["model/sharding"]["default"] == "llama-fsdp-tp"
    assert {"dataset", "task"} <= set(groups)
    assert s["x-hydra"]["config_name"] == "default"
    assert props["model"]["properties"]["attention_kernel"]["enum"][-1] == "splash_attention"
    assert props["ici_mesh"]["properties"]["fsdp"]["default"] == -1
