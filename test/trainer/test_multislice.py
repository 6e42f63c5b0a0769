"""Multislice without a TPU runtime: each worker process is told what a multislice TPU runtime
tells a host (MEGASCALE_NUM_SLICES, MEGASCALE_SLICE_ID, MEGASCALE_COORDINATOR_ADDRESS, MEGASCALE_PORT;
names as Ray's and xpk's multislice launchers export them) beside its slice's own TPU_WORKER_ID /
TPU_WORKER_HOSTNAMES, and the trainer joins every slice's workers in one gloo group, the dcn_mesh
spanning the slices. Two slices of two workers must train exactly as one slice of four workers does
with the same global batch; torchprime's 405B two-slice recipe line must train that way at debug size."""

import shlex
import socket
import subprocess
import sys

import pytest

from _trainer_helpers import REPO, clean_env, compose, read_metrics
from test_seed_recipes import RECIPES
from tpu_trainer import distributed
from tpu_trainer.config import ConfigError, MeshConfig

COMMON = ["model=tiny-llama", "max_steps=5", "logging_steps=1", "global_batch_size=8", "block_size=32",
          "seed=7", "optimizer.lr=1e-2", "num_threads=1", "checkpoint.enabled=false", "device=cpu",
          "distributed_timeout_s=120"]
MEGASCALE_PORT = "8080"  # the megascale runtime's own port; the trainer's gloo rendezvous uses coordinator_port


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_group(out, slices: list[list[str]], args: list[str]) -> list[list[dict]]:
    """Start one trainer per worker of every slice (each slice a list of loopback hosts, as the
    emulator gives its workers), wait for all; return each worker's metrics, slice-major."""
    port = _free_port()
    procs = []
    for s, hosts in enumerate(slices):
        for w in range(len(hosts)):
            env = clean_env(TPU_WORKER_ID=str(w), TPU_WORKER_HOSTNAMES=",".join(hosts))
            if len(slices) > 1:
                env.update(MEGASCALE_NUM_SLICES=str(len(slices)), MEGASCALE_SLICE_ID=str(s),
                           MEGASCALE_COORDINATOR_ADDRESS=f"{slices[0][0]}:{MEGASCALE_PORT}",
                           MEGASCALE_PORT=MEGASCALE_PORT)
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "tpu_trainer.train", *args, f"output_dir={out / f's{s}w{w}'}",
                 f"coordinator_port={port}"],
                cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    try:
        outs = [p.communicate(timeout=400)[0] for p in procs]
    finally:
        for p in procs:
            p.kill()
    for p, text in zip(procs, outs, strict=True):
        assert p.returncode == 0, text[-3000:]
    world = sum(len(h) for h in slices)
    for text in outs:
        assert f"/{world}" in text and "(gloo)" in text, text[-2000:]
    if len(slices) > 1:
        assert f"slice 1/{len(slices)}" in outs[-1]
    return [read_metrics(out / f"s{s}w{w}") for s, hosts in enumerate(slices) for w in range(len(hosts))]


def test_two_slices_of_two_train_as_one_slice_of_four(tmp_path):
    two = _run_group(tmp_path / "two", [["127.0.0.2", "127.0.0.3"], ["127.0.0.4", "127.0.0.5"]],
                     [*COMMON, "dcn_mesh.data=2"])
    one = _run_group(tmp_path / "one", [["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"]], COMMON)
    losses = [[r["loss"] for r in m] for m in two]
    assert len(losses[0]) == 5
    # Metrics name each worker by its place in the whole run, slice-major, not by its repeated TPU_WORKER_ID.
    assert [m[0]["worker"] for m in two] == [0, 1, 2, 3]
    assert all(seq == losses[0] for seq in losses)  # one all-reduced value on every worker of every slice
    assert losses[0] == pytest.approx([r["loss"] for r in one[0]], rel=1e-6, abs=0)
    assert losses[0][-1] < losses[0][0]  # it trains


def _debug_size(line: str) -> list[str]:
    """The recipe's overrides at debug size: its batch, sequence and step counts shrunk, its slice layout
    (fsdp 64 x tensor 4 chips) shrunk to 2 CPU ranks per slice with the tensor axis kept (fsdp 1 x tensor 2),
    the model's dimensions overridden to tiny-llama's, synthetic tokens instead of wikitext (no network)."""
    shrink = {"global_batch_size": "4", "block_size": "32", "max_steps": "3", "logging_steps": "1",
              "ici_mesh.fsdp": "1", "ici_mesh.tensor": "2"}
    out = []
    for token in shlex.split(line):
        key, _, value = token.partition("=")
        out.append(f"{key}={shrink.get(key, value)}")
    return [*out, "model.hidden_size=64", "model.intermediate_size=172", "model.num_hidden_layers=2",
            "model.num_attention_heads=4", "model.num_key_value_heads=2", "model.vocab_size=256",
            "dataset=synthetic", "checkpoint.enabled=false", "num_threads=1", "device=cpu", "seed=3",
            "distributed_timeout_s=120", "nproc_per_node=2"]


def test_the_405b_two_slice_recipe_trains_across_two_slices_at_debug_size(tmp_path):
    line = next(r[0] for r in RECIPES if "llama-3.1-405b" in r[0] and "dcn_mesh.fsdp=2" in r[0])
    args = _debug_size(line)
    cfg = compose(args)
    assert cfg.model.name == "llama-3.1-405b" and cfg.dcn_mesh.fsdp == 2 and cfg.model.num_hidden_layers == 2
    assert cfg.ici_mesh.fsdp == 1 and cfg.ici_mesh.tensor == 2 and cfg.nproc_per_node == 2

    two = _run_group(tmp_path, [["127.0.0.2"], ["127.0.0.3"]], args)
    assert [r["step"] for r in two[0]] == [1, 2, 3]
    assert [r["loss"] for r in two[0]] == [r["loss"] for r in two[1]]

    # The same line on one slice is refused, naming the mismatch, instead of training a different layout.
    proc = subprocess.run([sys.executable, "-m", "tpu_trainer.train", *args, f"output_dir={tmp_path / 'one'}"],
                          cwd=REPO, env=clean_env(TPU_WORKER_ID="0", TPU_WORKER_HOSTNAMES="127.0.0.2,127.0.0.3"),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "dcn_mesh (fsdp=2) asks for 2 slices but MEGASCALE_NUM_SLICES is not set" in proc.stderr


@pytest.mark.parametrize(("env", "message"), [
    ({"MEGASCALE_NUM_SLICES": "2", "MEGASCALE_SLICE_ID": "2"}, "MEGASCALE_SLICE_ID=2 is not an index into the 2"),
    ({"MEGASCALE_NUM_SLICES": "two"}, "MEGASCALE_NUM_SLICES='two' is not a whole number"),
])
def test_bad_multislice_variables_are_named(monkeypatch, env, message):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ConfigError, match=message):
        distributed.slices()


def test_slices_read_from_the_runtime_variables(monkeypatch):
    monkeypatch.setenv("MEGASCALE_NUM_SLICES", "4")
    monkeypatch.setenv("MEGASCALE_SLICE_ID", "3")
    monkeypatch.setenv("MEGASCALE_COORDINATOR_ADDRESS", "10.130.0.7:8080")
    assert distributed.slices() == distributed.Slices(4, 3, "10.130.0.7")
    monkeypatch.setenv("MEGASCALE_COORDINATOR_ADDRESS", "[fd00::7]:8080")
    assert distributed.slices().coordinator == "fd00::7"


def test_dcn_mesh_must_span_the_slices():
    two = distributed.Slices(2, 0, "10.0.0.2")
    distributed.check_dcn(MeshConfig(fsdp=2), two, gloo=True)
    distributed.check_dcn(MeshConfig(data=2), two, gloo=False)
    with pytest.raises(ConfigError, match=r"dcn_mesh \(all axes 1\) spans 1 slice\(s\) but MEGASCALE_NUM_SLICES=2"):
        distributed.check_dcn(MeshConfig(), two, gloo=True)
    with pytest.raises(ConfigError, match=r"dcn_mesh \(data=2 fsdp=2\) spans 4 slice\(s\)"):
        distributed.check_dcn(MeshConfig(data=2, fsdp=2), two, gloo=False)
    # One process alone ignores the dcn_mesh, as before (a recipe tried on a laptop).
    distributed.check_dcn(MeshConfig(fsdp=2), distributed.Slices(), gloo=False)
