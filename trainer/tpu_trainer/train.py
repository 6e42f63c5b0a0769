"""Train a Llama-style model with torch_xla (Cloud TPU, or XLA on CPU) or plain PyTorch.

Run from the repository root, with the package installed (`pip install -e trainer`,
or `bash scripts/python-env.sh`) or importable (`PYTHONPATH=trainer`):

    # plain PyTorch on CPU: 20 steps of the debug-size model
    python -m tpu_trainer.train model=tiny-llama max_steps=20 device=cpu output_dir=/tmp/tiny

    # torch_xla on CPU (the XLA code path without a TPU)
    PJRT_DEVICE=CPU python -m tpu_trainer.train model=tiny-llama max_steps=20 output_dir=/tmp/tiny-xla

    # the sample recipe (what TPU Workbench runs on every worker)
    PYTHONPATH=trainer bash recipes/tiny-llama.sh

    # XLA:CPU with an SPMD mesh of 4 devices: FSDP x tensor parallel, or experts split
    PJRT_DEVICE=CPU CPU_NUM_DEVICES=4 python -m tpu_trainer.train ici_mesh.fsdp=2 ici_mesh.tensor=2
    PJRT_DEVICE=CPU CPU_NUM_DEVICES=4 python -m tpu_trainer.train model=tiny-mixtral ici_mesh.fsdp=2 ici_mesh.expert=2

    # one TPU VM: Llama 3 8B, FSDP over all its chips (ici_mesh.fsdp defaults to -1: all), profile 20 s from step 6
    PJRT_DEVICE=TPU python -m tpu_trainer.train model=llama-3-8b global_batch_size=64 block_size=8192 \
        model/remat=llama-scan model.attention_kernel=splash_attention profile_step=6 profile_duration=20000 \
        dataset_config_name=wikitext-103-raw-v1

    # a pod or two (run on every host; TPU Workbench's Run on TPU does): torchprime's recipes unchanged
    PJRT_DEVICE=TPU python -m tpu_trainer.train model=llama-3.1-405b global_batch_size=512 block_size=8192 \
        dcn_mesh.fsdp=2 ici_mesh.fsdp=64 ici_mesh.tensor=4 profile_step=15 profile_duration=240000 \
        dataset_config_name=wikitext-103-raw-v1 max_steps=50 logging_steps=10

    # several CPU hosts / the emulator's workers: each gets TPU_WORKER_ID and TPU_WORKER_HOSTNAMES
    # and they train one model data-parallel over gloo (distributed=auto)
    TPU_WORKER_ID=0 TPU_WORKER_HOSTNAMES=10.0.0.2,10.0.0.3 python -m tpu_trainer.train device=cpu

    # print the composed config without training; list keys and groups
    python -m tpu_trainer.train --cfg job model=mixtral-8x7b
    python -m tpu_trainer.train --help

    # JSON Schema of the config, for the language server
    python -m tpu_trainer.schema trainer/config.schema.json

    # the trainer's tests
    python -m pytest test/trainer -q

    # optimizers, losses, schedules: config groups or keys
    python -m tpu_trainer.train optimizer=muon loss=cut_cross_entropy scheduler.name=wsd

    # checkpoint every 100 steps to a bucket; after a preemption, the same command
    # with resume=auto continues from the newest complete checkpoint
    python -m tpu_trainer.train checkpoint.interval=100 checkpoint.dir=gs://bucket/run1 resume=auto

Each run writes to output_dir: metrics.jsonl (fields in metrics.py), summary.json,
checkpoints/ (unless checkpoint.dir points elsewhere), hydra's .hydra/ and, on
XLA, xla_metrics.txt (torch_xla's metrics report). stdout gets a header, one
`step N loss X lr Y ...` line per logged step (flushed, for log streaming), a
`checkpoint step N -> URL` line per save and a final `summary ...` line.

Exit codes:
    0    finished (status=ok); a checkpoint of the last step is saved
    1    loss diverged (not finite), or an error
    2    config error (unknown key, bad value)
    75   PREEMPTED: SIGTERM (what a spot/preemptible VM receives) or torch_xla's
         preemption notice arrived; the trainer saved a checkpoint at the next step
         boundary and stopped. Rerun with resume=auto to continue. (sysexits'
         EX_TEMPFAIL: a temporary failure, retry.) TPU Workbench reports it as "preempted".
    130  stopped by SIGINT (TPU Workbench's Stop); no checkpoint is written

Resume is exact: model, optimizer, scheduler, data-loader position, RNG state and
step are all in the checkpoint, so a run interrupted at any step and resumed gives
the same losses as the uninterrupted run (bit for bit on CPU; tests in
test/trainer/test_checkpoint.py). metrics.jsonl is kept up to the resumed step.

Device: device=auto uses torch_xla when it imports and PJRT_DEVICE is set, else
plain PyTorch on CPU. With more than one XLA device the run is SPMD: a mesh of
ici_mesh x dcn_mesh (axes data, fsdp, tensor, expert), parameters sharded by the
model/sharding rules, each device fed its shard of the batch; on a pod every host
runs this same program and torch_xla joins them. Without a TPU runtime, several
hosts (TPU_WORKER_HOSTNAMES) train data-parallel over gloo (distributed.py).
"""

import dataclasses
import difflib
import json
import math
import sys
import time
from pathlib import Path
from typing import Any, Optional

import torch

from . import data as data_lib
from . import distributed as dist_lib
from . import runtime as rt_lib
from .checkpoint import Checkpointer, capture, restore
from .config import ConfigError, TrainConfig, config_keys, register_configs, resolve_aliases, validate
from .loggers import StepLogger
from .losses import build_loss
from .metrics import flops_per_token, matmul_params, peak_flops
from .model import build_model, count_params
from .optim import build_optimizer, clip_gradients, init_state
from .preemption import PREEMPTED_EXIT_CODE, PreemptionWatcher
from .schedules import build_scheduler


def log(msg: str) -> None:
    # flush on every line: stdout is a file or pipe under TPU Workbench, and the
    # run view tails it live.
    print(msg, flush=True)


def _fmt_bytes(n: int) -> str:
    return f"{n / 2**20:.1f}MiB"


def _resume_url(resume: str, ckpt: Optional[Checkpointer]) -> Optional[str]:
    if resume == "none":
        return None
    if resume == "auto":
        return ckpt.latest() if ckpt else None
    return resume


def train(cfg: TrainConfig) -> dict[str, Any]:
    """Run training; return the summary (also written to <output_dir>/summary.json)."""
    notes = resolve_aliases(cfg)
    validate(cfg)
    if cfg.num_threads > 0:
        # One thread per process when several workers share a host: N processes
        # each spawning a thread per core thrash the caches and the scheduler.
        torch.set_num_threads(cfg.num_threads)
    worker = rt_lib.worker_id()
    rt = rt_lib.select(cfg.device)
    mesh_desc = rt.build_mesh(cfg.ici_mesh, cfg.dcn_mesh)
    rt.check_batch(cfg.global_batch_size, cfg.model.sharding)
    out_dir = Path(cfg.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for note in notes:
        log(note)
    dp = dist_lib.setup(cfg.distributed, worker, rt_lib.device_is_tpu(rt.device),
                        cfg.coordinator_port, cfg.distributed_timeout_s, cfg.global_batch_size)
    # This process's rows of each global batch: its share under gloo data parallelism,
    # its host's share of an SPMD pod (runtime.to_device assembles the global batch).
    rows = dp.rows(cfg.global_batch_size) if dp.active else slice(
        rt.host_index * cfg.global_batch_size // rt.num_hosts, (rt.host_index + 1) * cfg.global_batch_size // rt.num_hosts)

    # Build and initialise on the host, then move: the init is then bit-identical
    # on CPU and XLA for a given seed (and on every host).
    torch.manual_seed(cfg.seed)
    model = build_model(cfg.model)
    n_params = count_params(model)
    model.to(rt.device)
    rt.shard_model(model, cfg.model.sharding)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = build_optimizer(model, cfg.optimizer)
    init_state(optimizer)
    scheduler = build_scheduler(optimizer, cfg.scheduler, cfg.max_steps)
    batches = data_lib.batches(cfg.data, cfg.model.vocab_size, cfg.global_batch_size, cfg.block_size, cfg.seed,
                               cfg.dataset_name, cfg.dataset_config_name, log)
    loss_fn = build_loss(cfg.loss)

    ckpt = None
    if cfg.checkpoint.enabled or cfg.resume != "none":
        ckpt = Checkpointer(cfg.checkpoint, cfg.checkpoint.dir or str(out_dir / "checkpoints"), spmd=rt.spmd)
    start_step, resumed_from = 0, _resume_url(cfg.resume, ckpt)
    if resumed_from:
        state = ckpt.load(resumed_from, capture(model, optimizer, scheduler, batches, 0))
        start_step = restore(state, model, optimizer, scheduler, batches)
    dp.agree(start_step, "the step to resume from (resume=auto found different checkpoints)")
    rt.sync()  # materialise params and optimizer state on the device before the first step

    tokens_per_step = cfg.global_batch_size * cfg.block_size
    fpt = flops_per_token(cfg.model, cfg.block_size)
    peak = cfg.peak_flops_per_device or peak_flops(rt.kind)
    devices = rt.num_devices * dp.world  # MFU is against the peak of every device the step ran on
    profiler = rt_lib.Profiler(
        rt, Path(cfg.profile_dir or out_dir / "profile"), cfg.profile_step, cfg.profile_steps, cfg.profile_duration
    )

    log(
        f"tpu_trainer: worker {worker} device {rt.label} threads {torch.get_num_threads()} "
        f"model {cfg.model.name} params {n_params / 1e6:.2f}M (matmul {matmul_params(cfg.model) / 1e6:.2f}M) "
        f"batch {cfg.global_batch_size}x{cfg.block_size} steps {cfg.max_steps} optimizer {cfg.optimizer.name} "
        f"loss {cfg.loss.name} output_dir {out_dir}"
    )
    log(f"mesh {mesh_desc} sharding {cfg.model.sharding.name} remat {cfg.model.remat.name} "
        f"attention {cfg.model.attention_kernel} data {batches.description}"
        + (f" data-parallel rank {dp.rank}/{dp.world} (gloo)" if dp.active else ""))
    if resumed_from:
        log(f"resumed from {resumed_from} at step {start_step}")

    # Shared between the loop and the logging closures (which run on torch_xla's
    # closure thread on XLA, after the step has executed).
    track: dict[str, Any] = {"last_loss": math.nan, "diverged": False, "t_last": time.perf_counter(),
                             "last_logged": start_step, "steady_t0": None, "steady_step0": 0, "rows": 0}

    def prepare(rec: dict[str, Any]) -> dict[str, Any]:
        now = time.perf_counter()
        step_time = (now - track["t_last"]) / max(1, rec["step"] - track["last_logged"])
        track["t_last"], track["last_logged"] = now, rec["step"]
        if track["steady_t0"] is None:
            # Steady-state throughput for the summary starts after the first logged
            # step, which carries XLA compilation and warm-up.
            track["steady_t0"], track["steady_step0"] = now, rec["step"]
        tps = tokens_per_step / step_time
        mem, mem_kind = rt.memory()
        rec.update(step_time_s=step_time, tokens_per_s=tps, mfu=tps * fpt / (peak * devices) if peak else None,
                   mem_bytes=mem, mem_kind=mem_kind)
        rec.update(tokens=rec["step"] * tokens_per_step, worker=worker, device=rt.label,
                   compiles=rt.compile_count(), time=time.time())
        return rec

    def after(rec: dict[str, Any]) -> None:
        track["last_loss"] = rec["loss"]
        gnorm, mfu = rec["grad_norm"], rec["mfu"]
        log(
            f"step {rec['step']} loss {rec['loss']:.4f} lr {rec['lr']:.3e} "
            f"grad_norm {gnorm if gnorm is None else f'{gnorm:.3f}'} step_time_s {rec['step_time_s']:.4f} "
            f"tokens_per_s {rec['tokens_per_s']:.0f} mfu {'-' if mfu is None else f'{mfu:.3f}'} "
            f"mem {_fmt_bytes(rec['mem_bytes'])}"
        )
        if not math.isfinite(rec["loss"]):
            track["diverged"] = True

    logger = StepLogger(out_dir, cfg.logging, rt.is_xla, dataclasses.asdict(cfg), keep_until_step=start_step,
                        prepare=prepare, after=after)

    def save(step: int, blocking: bool) -> None:
        logger.flush()  # records up to `step` are on disk before the checkpoint that resumes after them
        ckpt.save(step, capture(model, optimizer, scheduler, batches, step), blocking=blocking)
        log(f"checkpoint step {step} -> {ckpt.url(step)} (blocked {ckpt.last_blocked_s:.3f}s)")

    status, step, t_start = "ok", start_step, time.perf_counter()
    watcher = PreemptionWatcher(use_xla_sync_point=rt.is_xla)
    try:
        with watcher:
            for step in range(start_step + 1, cfg.max_steps + 1):
                profiler.before_step(step)
                inputs, targets = next(batches)
                inputs, targets = rt.to_device([inputs[rows], targets[rows]], cfg.model.sharding)
                lr = optimizer.param_groups[0]["lr"]  # a Python float: reading it costs no sync

                loss = loss_fn(model.hidden_states(inputs), model.lm_head.weight, targets)
                loss.backward()
                loss = dp.average((p.grad for p in params), loss)  # no-op on one host
                grad_norm = clip_gradients(params, cfg.optimizer)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                if step == 1 or step % cfg.logging_steps == 0 or step == cfg.max_steps:
                    # Device tensors go to the logger as they are: on XLA it registers a step
                    # closure that the sync below hands to torch_xla's closure thread, which
                    # reads the values once the device has run the step; the host never waits.
                    logger.log({"step": step, "loss": loss.detach(), "lr": lr,
                                "grad_norm": None if grad_norm is None else grad_norm.detach()})
                rt.sync()
                profiler.after_step(step)

                if dp.any(track["diverged"]):
                    status = "diverged"
                    break
                if ckpt:
                    ckpt.poll()
                if dp.any(watcher.preempted(step)):
                    status = "preempted"
                    log(f"preemption noticed ({watcher.signal or 'on another worker'}) after step {step}: saving and exiting")
                    if ckpt and cfg.checkpoint.enabled:
                        save(step, blocking=True)
                    break
                if ckpt and cfg.checkpoint.enabled and cfg.checkpoint.interval and step % cfg.checkpoint.interval == 0 \
                        and step != cfg.max_steps:
                    save(step, blocking=False)
            if status == "ok" and ckpt and cfg.checkpoint.enabled and step > start_step:
                save(step, blocking=True)  # the end of the run: the process exits next
    except KeyboardInterrupt:
        # SIGINT is how TPU Workbench stops a run: finish the files, then exit 130.
        status = "interrupted"
    finally:
        profiler.finish()
        logger.close()
        if ckpt:
            ckpt.close()
        dp.close()

    wall = time.perf_counter() - t_start
    steady_tps = None
    if track["steady_t0"] is not None and track["last_logged"] > track["steady_step0"]:
        steady_tps = (track["last_logged"] - track["steady_step0"]) * tokens_per_step / (
            track["t_last"] - track["steady_t0"])
    last_loss = track["last_loss"]
    if status == "ok" and track["diverged"]:
        status = "diverged"  # on XLA the closure may report it after the loop ended
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
        "resumed_from": resumed_from,
        "checkpoint": ckpt.latest() if ckpt else None,
        "logging_disabled": logger.disabled or None,
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
    if status == "preempted":
        raise SystemExit(PREEMPTED_EXIT_CODE)
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
    @hydra.main(version_base="1.3", config_path=str(Path(__file__).parent / "configs"), config_name="default")
    def _main(cfg: DictConfig) -> None:
        obj = from_omegaconf(cfg)
        try:
            train(obj)
        except ConfigError as e:
            print(f"config error: {e}", file=sys.stderr, flush=True)
            raise SystemExit(2)
        except Exception:
            # The metrics report is most useful when a run fails (recompiles, CPU fallbacks,
            # what ran before the error). train() writes it on every way out it handles itself.
            report = rt_lib.write_failure_report(Path(obj.output_dir))
            if report:
                print(f"xla metrics report: {report}", file=sys.stderr, flush=True)
            raise

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
