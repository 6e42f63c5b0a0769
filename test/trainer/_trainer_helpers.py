"""Helpers shared by the trainer tests and test/trainer/regen_loss_curve.py."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from tpu_trainer.config import TrainConfig
from tpu_trainer.train import train

REPO = Path(__file__).resolve().parents[2]
CURVE_FILE = Path(__file__).parent / "data" / "tiny_loss_curve.json"

# The stored-curve run: debug-size model, every step logged, one thread (thread
# count changes float reduction order, hence the last digits of the loss).
CURVE_SETTINGS = {
    "max_steps": 20, "global_batch_size": 4, "block_size": 32, "seed": 1234, "logging_steps": 1, "num_threads": 1,
    "device": "cpu",
}
CURVE_LR = 1e-2
CURVE_WARMUP = 10


def tiny_config(output_dir: Path, **top) -> TrainConfig:
    """The tiny-llama defaults with overrides for an in-process run on plain CPU."""
    cfg = TrainConfig(output_dir=str(output_dir), device="cpu", num_threads=1)
    cfg.optimizer.lr = top.pop("lr", 1e-2)
    cfg.scheduler.warmup_steps = top.pop("warmup_steps", 10)
    for key, value in top.items():
        setattr(cfg, key, value)
    return cfg


def read_metrics(output_dir: Path) -> list[dict]:
    lines = (Path(output_dir) / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def curve_run(output_dir: Path) -> list[float]:
    cfg = tiny_config(output_dir, lr=CURVE_LR, warmup_steps=CURVE_WARMUP, **CURVE_SETTINGS)
    train(cfg)
    return [r["loss"] for r in read_metrics(output_dir)]


def free_port() -> int:
    """A TCP port nothing listens on now (a rendezvous port for one test run)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def clean_env(**extra: str) -> dict:
    """Environment for trainer subprocesses: the checkout's package, no inherited XLA/TPU/multislice settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PJRT_", "XLA_", "TPU_", "LIBTPU", "MEGASCALE_", "TORCH_TPU_"))
           and k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                         "NNODES", "NODE_RANK", "TPW_LAUNCHED_RANK")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "trainer"), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    # Recipes call `python3`: make that this interpreter, as an activated venv would.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.update(extra)
    return env


def run_trainer(args: list[str], env: dict, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tpu_trainer.train", *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout,
    )


def compose(overrides: list[str]) -> TrainConfig:
    """The config `python -m tpu_trainer.train <overrides>` would train with (hydra's compose API)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from tpu_trainer.config import from_omegaconf, register_configs
    from tpu_trainer.schema import CONFIG_DIR

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return from_omegaconf(hydra_compose(config_name="default", overrides=overrides))
