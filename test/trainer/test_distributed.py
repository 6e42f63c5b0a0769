"""Multi-host data parallelism over gloo, as on the emulator's workers: two processes told
TPU_WORKER_ID / TPU_WORKER_HOSTNAMES (as TPU VM workers are) train one model together and
log the same loss at every step — the loss of one process training on the whole batch."""

import socket
import subprocess
import sys

import pytest

from _trainer_helpers import REPO, clean_env, read_metrics

COMMON = ["model=tiny-llama", "max_steps=5", "logging_steps=1", "global_batch_size=4", "block_size=32",
          "seed=11", "optimizer.lr=1e-2", "num_threads=1", "checkpoint.enabled=false"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(out, worker, hosts, port, device, extra=()):
    env = clean_env(TPU_WORKER_ID=str(worker), TPU_WORKER_HOSTNAMES=hosts)
    if device == "xla":
        env["PJRT_DEVICE"] = "CPU"
    args = [*COMMON, f"device={device}", f"output_dir={out}", f"coordinator_port={port}",
            "distributed_timeout_s=120", *extra]
    return subprocess.Popen([sys.executable, "-m", "tpu_trainer.train", *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.mark.parametrize("device", ["cpu", pytest.param("xla", marks=pytest.mark.xla)])
def test_two_workers_agree_on_every_step(tmp_path, device):
    port = _free_port()
    hosts = "127.0.0.1,127.0.0.1"
    procs = [_launch(tmp_path / f"w{w}", w, hosts, port, device) for w in (0, 1)]
    outs = [p.communicate(timeout=400)[0] for p in procs]
    for p, out in zip(procs, outs, strict=True):
        assert p.returncode == 0, out[-3000:]
        assert "rank 0/2" in out or "rank 1/2" in out or "data-parallel rank" in out
        assert "(gloo)" in out
    w0, w1 = (read_metrics(tmp_path / f"w{w}") for w in (0, 1))
    assert [r["loss"] for r in w0] == [r["loss"] for r in w1]  # bit-identical: one all-reduced value
    assert [r["worker"] for r in w1] == [1] * 5

    single = subprocess.run([sys.executable, "-m", "tpu_trainer.train", *COMMON, f"device={device}",
                             f"output_dir={tmp_path / 'single'}", "distributed=off"],
                            cwd=REPO, env=clean_env(**({"PJRT_DEVICE": "CPU"} if device == "xla" else {})),
                            capture_output=True, text=True, timeout=300)
    assert single.returncode == 0, single.stderr[-3000:]
    alone = [r["loss"] for r in read_metrics(tmp_path / "single")]
    assert [r["loss"] for r in w0] == pytest.approx(alone, rel=1e-4)


def test_missing_peer_times_out_with_a_message(tmp_path):
    port = _free_port()
    p = _launch(tmp_path / "w1", 1, "127.0.0.1,127.0.0.1", port, "cpu", ["distributed_timeout_s=5"])
    try:
        out = p.communicate(timeout=600)[0]  # an upper bound: the peer gives up after 5 s once torch has loaded
    finally:
        p.kill()
    assert p.returncode != 0
    assert "worker 0" in out and f"127.0.0.1:{port}" in out, out[-2000:]


def test_batch_must_split_over_hosts(tmp_path):
    env = clean_env(TPU_WORKER_ID="0", TPU_WORKER_HOSTNAMES="127.0.0.1,127.0.0.2,127.0.0.3")
    proc = subprocess.run([sys.executable, "-m", "tpu_trainer.train", *COMMON, "device=cpu",
                           f"output_dir={tmp_path}"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2
    assert "global_batch_size=4 does not split evenly over the 3 data-parallel ranks" in proc.stderr
