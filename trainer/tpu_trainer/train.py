"""Train a Llama-style model with torch_xla (Cloud TPU, or XLA on CPU) or plain PyTorch.

Run from the repository root, with the package installed (`pip install -e trainer`,
or `bash scripts/python-env.sh`) or importable (`PYTHONPATH=trainer`):

    # plain PyTorch on CPU: 20 steps of the debug-size model
    python -m tpu_trainer.train model=tiny-llama max_steps=20 device=cpu output_dir=/tmp/tiny

    # torch_xla on CPU (the XLA code path without a TPU)
    PJRT_DEVICE=CPU python -m tpu_trainer.train model=tiny-llama max_steps=20 output_dir=/tmp/tiny-xla

    # the sample recipe (what TPU Workbench runs on every worker)
    PYTHONPATH=trainer bash recipes/tiny-llama.sh

    # on a TPU VM: Llama 3 8B shape, profile steps 6-8
    PJRT_DEVICE=TPU python -m tpu_trainer.train model=llama-3-8b global_batch_size=8 \
        block_size=2048 data.name=synthetic max_steps=20 profile_step=6

    # print the composed config without training; list keys and groups
    python -m tpu_trainer.train --cfg job model=mixtral-8x7b
    python -m tpu_trainer.train --help

    # JSON Schema of the config, for the language server
    python -m tpu_trainer.schema trainer/config.schema.json

    # the trainer's tests
    python -m pytest test/trainer -q

Each run writes to output_dir: metrics.jsonl (fields in metrics.py), summary.json,
hydra's .hydra/ and, on XLA, xla_metrics.txt (torch_xla's metrics report).
stdout gets a header, one `step N loss X lr Y ...` line per logged step (flushed,
for log streaming) and a final `summary ...` line.

Device: device=auto uses torch_xla when it imports and PJRT_DEVICE is set, else
plain PyTorch on CPU. Each process drives one device; multi-chip sharding (SPMD)
is not implemented yet, so on a multi-host slice every worker runs the same
single-device program (and logs its TPU_WORKER_ID).
"""

import difflib
import json
import math
import sys
import time
from pathlib import Path
from typing import Any, Optional

import torch

from . import data as data_lib
from . import runtime as rt_lib
from .config import ConfigError, TrainConfig, config_keys, register_configs, validate
from .metrics import MetricsWriter, flops_per_token, matmul_params, peak_flops
from .model import build_model, count_params
from .optim import build_optimizer, build_scheduler, init_state


def log(msg: str) -> None:
    # flush on every line: stdout is a file or pipe under TPU Workbench, and the
    # run view tails it live.
    print(msg, flush=True)


def _fmt_bytes(n: int) -> str:
    return f"{n / 2**20:.1f}MiB"


def train(cfg: TrainConfig) -> dict[str, Any]:
    """Run training; return the summary (also written to <output_dir>/summary.json)."""
    validate(cfg)
    if cfg.num_threads > 0:
        # One thread per process when several workers share a host: N processes
        # each spawning a thread per core thrash the caches and the scheduler.
        torch.set_num_threads(cfg.num_threads)
    worker = rt_lib.worker_id()
    rt = rt_lib.select(cfg.device)
    out_dir = Path(cfg.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    # Build and initialise on the host, then move: the init is then bit-identical
    # on CPU and XLA for a given seed.
    torch.manual_seed(cfg.seed)
    model = build_model(cfg.model)
    n_params = count_params(model)
    model.to(rt.device)
    model.train()
    optimizer = build_optimizer(model, cfg.optimizer)
    init_state(optimizer)
    rt.sync()  # materialise params and optimizer state on the device before step 1
    scheduler = build_scheduler(optimizer, cfg.scheduler, cfg.max_steps)
    batches = data_lib.batches(cfg.data, cfg.model.vocab_size, cfg.global_batch_size, cfg.block_size, cfg.seed)

    tokens_per_step = cfg.global_batch_size * cfg.block_size
    fpt = flops_per_token(cfg.model, cfg.block_size)
    peak = cfg.peak_flops_per_device or peak_flops(rt.kind)
    profiler = rt_lib.Profiler(
        rt, Path(cfg.profile_dir or out_dir / "profile"), cfg.profile_step, cfg.profile_steps
    )
    writer = MetricsWriter(out_dir / "metrics.jsonl")

    log(
        f"tpu_trainer: worker {worker} device {rt.label} threads {torch.get_num_threads()} "
        f"model {cfg.model.name} params {n_params / 1e6:.2f}M (matmul {matmul_params(cfg.model) / 1e6:.2f}M) "
        f"batch {cfg.global_batch_size}x{cfg.block_size} steps {cfg.max_steps} output_dir {out_dir}"
    )

    status, step, last_loss = "ok", 0, math.nan
    t_start = t_last = time.perf_counter()
    last_logged, steady_t0, steady_step0 = 0, None, 0
    try:
        for step in range(1, cfg.max_steps + 1):
            profiler.before_step(step)
            inputs, targets = next(batches)
            inputs, targets = inputs.to(rt.device), targets.to(rt.device)
            lr = optimizer.param_groups[0]["lr"]  # a Python float: reading it costs no sync

            loss = model(inputs, targets)
            loss.backward()
            grad_norm = None
            if cfg.optimizer.grad_clip > 0:
                grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.optimizer.grad_clip)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            rt.sync()
            profiler.after_step(step)

            if not (step == 1 or step % cfg.logging_steps == 0 or step == cfg.max_steps):
                continue
            # Only logging steps touch values on the host. On XLA, .item() blocks until
            # the device has run every queued step; doing it each step would serialise
            # host tracing with device execution and cost throughput.
            last_loss = loss.item()
            gnorm = grad_norm.item() if grad_norm is not None else None
            now = time.perf_counter()
            step_time = (now - t_last) / (step - last_logged)
            t_last, last_logged = now, step
            if steady_t0 is None:
                # Steady-state throughput for the summary starts after step 1,
                # which carries XLA compilation and warm-up.
                steady_t0, steady_step0 = now, step
            tps = tokens_per_step / step_time
            mfu = tps * fpt / peak if peak else None
            mem, mem_kind = rt.memory()
            writer.write(
                {
                    "step": step,
                    "loss": last_loss,
                    "lr": lr,
                    "step_time_s": step_time,
                    "tokens_per_s": tps,
                    "mfu": mfu,
                    "mem_bytes": mem,
                    "mem_kind": mem_kind,
                    "grad_norm": gnorm,
                    "tokens": step * tokens_per_step,
                    "worker": worker,
                    "device": rt.label,
                    "compiles": rt.compile_count(),
                    "time": time.time(),
                }
            )
            log(
                f"step {step} loss {last_loss:.4f} lr {lr:.3e} grad_norm {gnorm if gnorm is None else f'{gnorm:.3f}'} "
                f"step_time_s {step_time:.4f} tokens_per_s {tps:.0f} mfu {'-' if mfu is None else f'{mfu:.3f}'} "
                f"mem {_fmt_bytes(mem)}"
            )
            if not math.isfinite(last_loss):
                status = "diverged"
                break
    except KeyboardInterrupt:
        # SIGINT is how TPU Workbench stops a run: finish the files, then exit 130.
        status = "interrupted"
    finally:
        profiler.finish()
        writer.close()

    wall = time.perf_counter() - t_start
    steady_tps = None
    if steady_t0 is not None and last_logged > steady_step0:
        steady_tps = (last_logged - steady_step0) * tokens_per_step / (t_last - steady_t0)
    summary = {
        "status": status,
        "steps": step,
        "final_loss": last_loss,
        "wall_s": wall,
        "tokens_per_s": steady_tps,
        "compiles": rt.compile_count(),
        "device": rt.label,
        "worker": worker,
        "params": n_params,
        "metrics": str(out_dir / "metrics.jsonl"),
        "profile": str(profiler.written) if profiler.written else None,
        "xla_metrics": None,
    }
    report = rt.write_report(out_dir / "xla_metrics.txt")
    if report:
        summary["xla_metrics"] = str(report)
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    log(
        "summary "
        + " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in summary.items() if v is not None)
    )
    if status == "interrupted":
        raise SystemExit(130)
    if status == "diverged":
        raise SystemExit(f"loss is not finite at step {step}; stopping")
    return summary


def check_overrides(argv: list[str]) -> Optional[str]:
    """Reject unknown keys before hydra runs, with a did-you-mean.

    Hydra alone also refuses them, but its message does not suggest the key you
    meant; recipes are typed by hand, so the suggestion is worth a few lines.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser

    candidates = [a for a in argv if "=" in a or a.startswith("~")]
    if not candidates:
        return None
    try:
        overrides = OverridesParser.create().parse_overrides(candidates)
    except Exception:  # malformed override: hydra reports it better than we would
        return None
    known = set(config_keys())
    for o in overrides:
        key = o.key_or_group
        if key == "hydra" or key.startswith(("hydra.", "hydra/")) or key.split("/")[0] in known:
            continue
        if key in known:
            continue
        hint = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
        msg = f"error: unknown config key '{key}' in override '{o.input_line}'"
        if hint:
            msg += f"; did you mean '{hint[0]}'?"
        return msg + " (python -m tpu_trainer.train --help lists the keys)"
    return None


def _hydra_entry() -> None:
    import hydra
    from omegaconf import DictConfig

    from .config import from_omegaconf

    register_configs()

    # An absolute path: hydra resolves a relative one differently for `python -m`
    # (file-relative) and for the `tpu-train` console script (package-relative).
    @hydra.main(version_base="1.3", config_path=str(Path(__file__).parent / "configs"), config_name="config")
    def _main(cfg: DictConfig) -> None:
        try:
            train(from_omegaconf(cfg))
        except ConfigError as e:
            print(f"config error: {e}", file=sys.stderr, flush=True)
            raise SystemExit(2)

    _main()


def main() -> None:
    """Console entry point (`tpu-train`, `python -m tpu_trainer.train`)."""
    problem = check_overrides(sys.argv[1:])
    if problem:
        print(problem, file=sys.stderr, flush=True)
        raise SystemExit(2)
    _hydra_entry()


if __name__ == "__main__":
    main()
