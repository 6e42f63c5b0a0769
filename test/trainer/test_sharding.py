"""SPMD: mesh sizing and sharding rules as pure functions, then a real XLA:CPU mesh of 4
devices (PJRT_DEVICE=CPU CPU_NUM_DEVICES=4) in a subprocess: the rules land on the right
parameters and sharded training computes the same losses as one device."""

import json
import subprocess
import sys

import pytest

from _trainer_helpers import REPO, clean_env, compose, read_metrics
from tpu_trainer.config import ConfigError, MeshConfig
from tpu_trainer.model import build_model
from tpu_trainer.sharding import batch_split, param_specs, resolve_mesh


def test_resolve_mesh_fills_minus_one_and_names_mismatches():
    assert resolve_mesh(MeshConfig(fsdp=-1), MeshConfig(), 8) == ((1, 8, 1, 1), (1, 1, 1, 1))
    assert resolve_mesh(MeshConfig(fsdp=-1, tensor=4), MeshConfig(fsdp=2), 512) == ((1, 64, 4, 1), (1, 2, 1, 1))
    # the seed's 2-pod 405B recipe: ici fsdp 64 x tensor 4 per v6e-256, dcn fsdp 2
    assert resolve_mesh(MeshConfig(fsdp=64, tensor=4), MeshConfig(fsdp=2), 512)[0] == (1, 64, 4, 1)
    with pytest.raises(ConfigError, match=r"ici_mesh \(data=1 fsdp=256 tensor=1 expert=1\) has 256 devices but each"):
        resolve_mesh(MeshConfig(fsdp=256), MeshConfig(), 4)
    with pytest.raises(ConfigError, match="dcn_mesh asks for 3 slices"):
        resolve_mesh(MeshConfig(fsdp=-1), MeshConfig(data=3), 8)


def test_llama_rules_land_on_the_right_parameters():
    m = compose(["model=tiny-llama"]).model
    model = build_model(m)
    specs = param_specs([(n, tuple(p.shape)) for n, p in model.named_parameters()], m.sharding.parameters)
    assert specs["layers.1.self_attn.q_proj.weight"] == ("tensor", "fsdp")
    assert specs["layers.0.self_attn.o_proj.weight"] == ("fsdp", "tensor")
    assert specs["layers.0.mlp.down_proj.weight"] == ("fsdp", "tensor")
    assert specs["embed_tokens.weight"] == ("tensor", "fsdp")
    assert specs["layers.0.input_layernorm.weight"] is None and specs["norm.weight"] is None
    # every 2-D weight is sharded, nothing else
    assert {n for n, s in specs.items() if s} == {n for n, p in model.named_parameters() if p.dim() == 2}


def test_mixtral_rules_split_experts():
    m = compose(["model=tiny-mixtral"]).model
    model = build_model(m)
    specs = param_specs([(n, tuple(p.shape)) for n, p in model.named_parameters()], m.sharding.parameters)
    assert specs["layers.0.mlp.experts.w_gate"] == ("expert", "tensor", "fsdp")
    assert specs["layers.1.mlp.experts.w_down"] == ("expert", "fsdp", "tensor")
    assert specs["layers.0.mlp.gate.weight"] is None  # the router stays replicated


def test_rule_of_wrong_rank_is_a_config_error():
    with pytest.raises(ConfigError, match=r"parameters\['norm.weight'\] has 2 entries but parameter norm.weight"):
        param_specs([("norm.weight", (64,))], {"norm.weight": ["fsdp", None]})


def test_batch_split():
    assert batch_split((("data", "fsdp"), None), (2, 4, 1, 1)) == 8
    assert batch_split((None, None), (2, 4, 1, 1)) == 1


SPMD_PROBE = r"""
import json, sys, torch, torch_xla
from tpu_trainer import backends
from tpu_trainer.model import build_model
from tpu_trainer.parallelize import parallelize
sys.path.insert(0, "test/trainer")
from _trainer_helpers import compose
cfg = compose(["model=tiny-mixtral", "ici_mesh.fsdp=2", "ici_mesh.expert=2"])
backend = backends.select("xla")
desc = backend.build_mesh(cfg.ici_mesh, cfg.dcn_mesh)
model = build_model(cfg.model).to(backend.device)
parallelize(model, backend, cfg.model)
specs = {n: torch_xla._XLAC._get_xla_sharding_spec(p) for n, p in model.named_parameters()}
print(json.dumps({"desc": desc, "spmd": backend.spmd, "devices": backend.num_devices, "specs": specs}))
"""


@pytest.mark.xla
def test_spmd_shardings_on_a_cpu_mesh():
    env = clean_env(PJRT_DEVICE="CPU", CPU_NUM_DEVICES="4")
    out = subprocess.run([sys.executable, "-c", SPMD_PROBE], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["spmd"] and got["devices"] == 4 and got["desc"] == "data=1 fsdp=2 tensor=1 expert=2"
    specs = got["specs"]
    # experts split 2 ways on dim 0 (expert) and 2 ways on dim 2 (fsdp): tile [2,1,2]
    assert specs["layers.0.mlp.experts.w_gate"].startswith("{devices=[2,1,2]"), specs["layers.0.mlp.experts.w_gate"]
    # q_proj [tensor=1, fsdp=2]: split 2 ways on dim 1, replicated over the expert axis
    assert specs["layers.0.self_attn.q_proj.weight"].startswith("{devices=[1,2,2]"), specs
    assert "last_tile_dim_replicate" in specs["layers.0.self_attn.q_proj.weight"]
    assert specs["norm.weight"] in ("{replicated}", "")


@pytest.mark.parametrize("mesh", [["ici_mesh.fsdp=4"], ["ici_mesh.fsdp=2", "ici_mesh.tensor=2", "model/remat=llama"]])
@pytest.mark.xla
def test_sharded_training_matches_one_device(tmp_path, mesh):
    common = ["model=tiny-llama", "max_steps=4", "logging_steps=1", "global_batch_size=8", "block_size=64",
              "checkpoint.enabled=false", "seed=7", "optimizer.lr=1e-2", "num_threads=1"]
    runs = {}
    for name, devices, extra in (("one", "1", []), ("mesh", "4", mesh)):
        out = tmp_path / name
        env = clean_env(PJRT_DEVICE="CPU", CPU_NUM_DEVICES=devices)
        proc = subprocess.run([sys.executable, "-m", "tpu_trainer.train", *common, *extra, f"output_dir={out}"],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
        runs[name] = [r["loss"] for r in read_metrics(out)]
        if name == "mesh":
            assert "mesh data=1 fsdp=" in proc.stdout
    assert len(runs["one"]) == 4
    assert runs["mesh"] == pytest.approx(runs["one"], rel=2e-4)


@pytest.mark.xla
def test_tiny_mixtral_trains_on_an_expert_parallel_mesh(tmp_path):
    env = clean_env(PJRT_DEVICE="CPU", CPU_NUM_DEVICES="4")
    args = ["model=tiny-mixtral", "ici_mesh.fsdp=2", "ici_mesh.expert=2", "max_steps=20", "logging_steps=5",
            "global_batch_size=8", "block_size=64", "optimizer.lr=1e-2", "checkpoint.enabled=false",
            "num_threads=1", f"output_dir={tmp_path}"]
    proc = subprocess.run([sys.executable, "-m", "tpu_trainer.train", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "mesh data=1 fsdp=2 tensor=1 expert=2 sharding mixtral-fsdp-ep" in proc.stdout
    rows = read_metrics(tmp_path)
    assert rows[0]["device"] == "xla:CPU" and rows[-1]["step"] == 20
    assert rows[-1]["loss"] < rows[0]["loss"] - 1.0, [r["loss"] for r in rows]
