"""Train a Llama-style model with torch_xla (Cloud TPU, or XLA on CPU) or plain PyTorch.

Run from the repository root, with the package installed (`pip install -e trainer`,
or `bash scripts/python-env.sh`) or importable (`PYTHONPATH=trainer`):

    # plain PyTorch on CPU: 20 steps of the debug-size model
    python -m tpu_trainer.train model=tiny-llama max_steps=20 device=cpu output_dir=/tmp/tiny

    # torch_xla on CPU (the XLA code path without a TPU)
    PJRT_DEVICE=CPU python -m tpu_trainer.train model=tiny-llama max_steps=20 output_dir=/tmp/tiny-xla

    # the sample recipe (what TPU Workbench runs on every worker)
    . scripts/env.sh && bash recipes/tiny-llama.sh

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

    # two slices of two CPU hosts (the variables a multislice TPU runtime sets): one gloo group of
    # four, slice-major, the dcn_mesh spanning the two slices
    MEGASCALE_NUM_SLICES=2 MEGASCALE_SLICE_ID=1 MEGASCALE_COORDINATOR_ADDRESS=10.0.0.2:8080 \
        TPU_WORKER_ID=0 TPU_WORKER_HOSTNAMES=10.0.1.2,10.0.1.3 python -m tpu_trainer.train device=cpu dcn_mesh.fsdp=2

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

Each run writes to output_dir: metrics.jsonl (fields in protocol/metrics-record.schema.json), summary.json,
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
hosts (TPU_WORKER_HOSTNAMES, and the slices of MEGASCALE_NUM_SLICES) train data-parallel over
gloo (distributed.py).
"""

import sys

# `python -m tpu_trainer.train ...`: the override line is checked before torch is imported (seconds, more on a busy
# host; hydra and the config need none of it), so a mistyped override is refused at once.
_OVERRIDES_CHECKED = False
if __name__ == "__main__":
    from tpu_trainer.overrides import refuse_bad_overrides

    refuse_bad_overrides(sys.argv[1:])
    _OVERRIDES_CHECKED = True

import dataclasses
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from . import backends, launch
from . import data as data_lib
from . import distributed as dist_lib
from .backends import Backend
from .backends.native import NativeBackend, check_batch_split, refuse_without
from .checkpoint import Checkpointer, capture, restore
from .config import ConfigError, TrainConfig, register_configs, resolve_aliases, validate
from .hardware import local_tpus
from .loggers import StepLogger
from .losses import LossFn, build_loss
from .meter import StepMeter
from .metrics import flops_per_token, matmul_params, peak_flops
from .model import Llama, build_model, count_params
from .optim import build_optimizer, clip_gradients, init_state
from .overrides import refuse_bad_overrides
from .parallelize import parallelize
from .preemption import PREEMPTED_EXIT_CODE, PreemptionWatcher
from .profiler import Profiler
from .schedules import build_scheduler
from .schema import CONFIG_DIR
from .sharding import resolve_mesh


def log(msg: str) -> None:
    # flush on every line: stdout is a file or pipe under TPU Workbench, and the
    # run view tails it live. One process per host speaks (backends.host_leader).
    if backends.host_leader():
        print(msg, flush=True)


@dataclass
class Run:
    """Everything one training run holds, built before the first step."""

    cfg: TrainConfig
    out_dir: Path
    worker: int
    backend: Backend
    mesh: str  # the mesh's description, for the header
    dp: dist_lib.DataParallel
    rows: slice  # this process's rows of each global batch
    model: Llama
    n_params: int
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    batches: data_lib.Batches
    loss_fn: LossFn
    ckpt: Checkpointer | None
    start_step: int = 0
    resumed_from: str | None = None
    step: int = 0  # the last step started (the summary's `steps`)

    @property
    def saving(self) -> bool:
        return self.ckpt is not None and self.cfg.checkpoint.enabled


def train(cfg: TrainConfig) -> dict[str, Any]:
    """Run training; return the summary (also written to <output_dir>/summary.json)."""
    run = setup(cfg)
    resume(run)
    run.backend.sync()  # materialise params and optimizer state on the device before the first step
    meter, profiler = start_metering(run)
    logger = StepLogger(run.out_dir, cfg.logging, run.backend, dataclasses.asdict(cfg),
                        keep_until_step=run.start_step, prepare=meter.prepare, after=meter.after,
                        enabled=backends.host_leader())
    t_start = time.perf_counter()
    status = "ok"
    try:
        with PreemptionWatcher(run.backend.preemption_notice()) as watcher:
            status = run_steps(run, logger, meter, profiler, watcher)
    except KeyboardInterrupt:
        # SIGINT is how TPU Workbench stops a run: finish the files, then exit 130.
        status = "interrupted"
    finally:
        profiler.finish()
        logger.close()
        if run.ckpt:
            run.ckpt.close()
        run.dp.close()
    if status == "ok" and meter.diverged:
        status = "diverged"  # on XLA the closure may report it after the loop ended
    summary = summarise(run, status, time.perf_counter() - t_start, meter, profiler, logger)
    exit_for(status, run.step)
    return summary


def setup(cfg: TrainConfig) -> Run:
    """Validate the config, choose the backend and mesh, join the hosts, and build the model,
    optimizer, data and checkpointer."""
    notes = resolve_aliases(cfg)
    validate(cfg)
    if cfg.num_threads > 0:
        # One thread per process when several workers share a host: N processes
        # each spawning a thread per core thrash the caches and the scheduler.
        torch.set_num_threads(cfg.num_threads)
    worker = dist_lib.worker_id()
    backend = backends.select(cfg.device, timeout_s=cfg.distributed_timeout_s)
    mesh = backend.build_mesh(cfg.ici_mesh, cfg.dcn_mesh)
    backend.check_batch(cfg.global_batch_size, cfg.model.sharding)
    out_dir = Path(cfg.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for note in notes:
        log(note)
    batch = cfg.global_batch_size
    dp: dist_lib.DataParallel
    if isinstance(backend, NativeBackend):
        # Without a TPU runtime's slice index the slices are those MEGASCALE_NUM_SLICES names, as under gloo.
        dist_lib.check_dcn(cfg.dcn_mesh, dist_lib.slices(), gloo=True)
        dp = dist_lib.NativeRanks(backend)
        rows = dp.rows(batch)  # this rank's place along data x fsdp
    else:
        dp = dist_lib.setup(cfg.distributed, worker, backend.is_tpu, cfg.coordinator_port, cfg.distributed_timeout_s,
                            batch, cfg.dcn_mesh)
        # This process's rows of each global batch: its share under gloo data parallelism,
        # its host's share of an SPMD pod (Backend.to_device assembles the global batch).
        hosts, host = backend.num_hosts, backend.host_index
        rows = dp.rows(batch) if dp.active else slice(host * batch // hosts, (host + 1) * batch // hosts)

    # Build and initialise on the host, then move: the init is then bit-identical
    # on CPU and XLA for a given seed (and on every host and rank, whatever the mesh).
    torch.manual_seed(cfg.seed)
    model = build_model(cfg.model)
    n_params = count_params(model)
    model.to(backend.device)
    loss_fn = build_loss(cfg.loss)
    parallelize(model, backend, cfg.model, loss_fn, compile=cfg.compile)
    model.train()
    optimizer = build_optimizer(model, cfg.optimizer)
    init_state(optimizer)
    scheduler = build_scheduler(optimizer, cfg.scheduler, cfg.max_steps)
    batches = data_lib.batches(cfg.data, cfg.model.vocab_size, cfg.global_batch_size, cfg.block_size, cfg.seed,
                               cfg.dataset_name, cfg.dataset_config_name, log)
    ckpt = None
    if cfg.checkpoint.enabled or cfg.resume != "none":
        ckpt = Checkpointer(cfg.checkpoint, cfg.checkpoint.dir or str(out_dir / "checkpoints"),
                            sharded=backend.sharded_checkpointing())
    # Across slices the run counts workers slice-major (slice s, worker w is s * hosts + w), as the run's
    # [sNwM] lines and the run view do; TPU_WORKER_ID alone repeats in every slice.
    ms = dist_lib.slices()
    run_worker = ms.index * max(len(dist_lib.worker_hostnames()), 1) + worker if ms.count > 1 else worker
    return Run(cfg, out_dir, run_worker, backend, mesh, dp, rows, model, n_params, optimizer, scheduler, batches,
               loss_fn, ckpt)


def resume(run: Run) -> None:
    """Load the checkpoint `resume` names (auto: the newest complete one), if any; every host must agree."""
    url = run.ckpt.latest() if run.ckpt and run.cfg.resume == "auto" else None
    if run.cfg.resume not in ("none", "auto"):
        url = run.cfg.resume
    if url and run.ckpt:  # resume != "none" always makes a checkpointer
        state = run.ckpt.load(url, capture(run.model, run.optimizer, run.scheduler, run.batches, 0))
        run.start_step = restore(state, run.model, run.optimizer, run.scheduler, run.batches)
        run.resumed_from = url
    run.step = run.start_step
    run.dp.agree(run.start_step, "the step to resume from (resume=auto found different checkpoints)")


def start_metering(run: Run) -> tuple[StepMeter, Profiler]:
    """The step meter and profiler, and the run's header lines."""
    cfg, backend = run.cfg, run.backend
    peak = cfg.peak_flops_per_device or peak_flops(backend.kind)
    profiler = Profiler(backend, Path(cfg.profile_dir or run.out_dir / "profile"), cfg.profile_step,
                        cfg.profile_steps, cfg.profile_duration)
    log(
        f"tpu_trainer: worker {run.worker} device {backend.label} threads {torch.get_num_threads()} "
        f"model {cfg.model.name} params {run.n_params / 1e6:.2f}M (matmul {matmul_params(cfg.model) / 1e6:.2f}M) "
        f"batch {cfg.global_batch_size}x{cfg.block_size} steps {cfg.max_steps} optimizer {cfg.optimizer.name} "
        f"loss {cfg.loss.name} output_dir {run.out_dir}"
    )
    log(f"mesh {run.mesh} sharding {cfg.model.sharding.name} remat {cfg.model.remat.name} "
        f"attention {cfg.model.attention_kernel} data {run.batches.description}"
        + (f" {run.dp.describe()}" if run.dp.active else ""))
    if run.resumed_from:
        log(f"resumed from {run.resumed_from} at step {run.start_step}")
    meter = StepMeter(backend, run.worker, cfg.global_batch_size * cfg.block_size,
                      flops_per_token(cfg.model, cfg.block_size), peak,
                      run.dp.world * (backend.num_devices if backend.spmd else 1),
                      run.start_step, log)
    return meter, profiler


def run_steps(run: Run, logger: StepLogger, meter: StepMeter, profiler: Profiler,
              watcher: PreemptionWatcher) -> str:
    """The training loop; returns how it ended: ok, diverged or preempted."""
    cfg, dp = run.cfg, run.dp
    for step in range(run.start_step + 1, cfg.max_steps + 1):
        run.step = step
        profiler.before_step(step)
        # The step's loss and grad norm stay referenced through the sync: on XLA the graph a sync
        # runs has every live tensor as an output, so a step that let them go (one not logged)
        # would trace a different graph and compile it a second time.
        with profiler.step_scope(step):
            outputs = train_step(run, logger, step)
            run.backend.sync()
        del outputs
        profiler.after_step(step)

        if dp.any(meter.diverged):
            return "diverged"
        if run.ckpt:
            run.ckpt.poll()
        if dp.any(watcher.preempted(step)):
            log(f"preemption noticed ({watcher.signal or 'on another worker'}) after step {step}: saving and exiting")
            if run.saving:
                save(run, logger, step, blocking=True)
            return "preempted"
        if run.saving and cfg.checkpoint.interval and step % cfg.checkpoint.interval == 0 and step != cfg.max_steps:
            save(run, logger, step, blocking=False)
    if run.saving and run.step > run.start_step:
        save(run, logger, run.step, blocking=True)  # the end of the run: the process exits next
    return "ok"


def train_step(run: Run, logger: StepLogger, step: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """One optimizer step (traced, on XLA: the device runs it at the sync that follows);
    returns the step's loss and grad norm, which the caller keeps until that sync."""
    cfg, model = run.cfg, run.model
    inputs, targets = next(run.batches)
    inputs, targets = run.backend.to_device([inputs[run.rows], targets[run.rows]], cfg.model.sharding)
    lr = run.optimizer.param_groups[0]["lr"]  # a Python float: reading it costs no sync
    params = [p for p in model.parameters() if p.requires_grad]

    loss = model(inputs, targets)  # the model's loss_fn (parallelize.apply_loss)
    loss.backward()
    loss = run.dp.average((p.grad for p in params), loss)  # no-op on one host
    grad_norm = clip_gradients(params, cfg.optimizer)
    run.optimizer.step()
    run.scheduler.step()
    run.optimizer.zero_grad(set_to_none=True)
    if step == 1 or step % cfg.logging_steps == 0 or step == cfg.max_steps:
        # Device tensors go to the logger as they are: on XLA it registers a step closure
        # that the next sync hands to torch_xla's closure thread, which reads the values
        # once the device has run the step; the host never waits.
        logger.log({"step": step, "loss": run.dp.report(loss.detach()), "lr": lr,
                    "grad_norm": None if grad_norm is None else grad_norm.detach()})
    return loss, grad_norm


def save(run: Run, logger: StepLogger, step: int, blocking: bool) -> None:
    assert run.ckpt is not None
    logger.flush()  # records up to `step` are on disk before the checkpoint that resumes after them
    run.ckpt.save(step, capture(run.model, run.optimizer, run.scheduler, run.batches, step), blocking=blocking)
    log(f"checkpoint step {step} -> {run.ckpt.url(step)} (blocked {run.ckpt.last_blocked_s:.3f}s)")


def summarise(run: Run, status: str, wall: float, meter: StepMeter, profiler: Profiler,
              logger: StepLogger) -> dict[str, Any]:
    """summary.json, the backend's metrics report and the last stdout line."""
    summary: dict[str, Any] = {
        "status": status,
        "steps": run.step,
        "final_loss": meter.last_loss,
        "wall_s": wall,
        "tokens_per_s": meter.steady_tokens_per_s(),
        "compiles": run.backend.compile_count(),
        "device": run.backend.label,
        "worker": run.worker,
        "params": run.n_params,
        "metrics": str(run.out_dir / "metrics.jsonl"),
        "profile": str(profiler.written) if profiler.written else None,
        "xla_metrics": None,
        "resumed_from": run.resumed_from,
        "checkpoint": run.ckpt.latest() if run.ckpt else None,
        "logging_disabled": logger.disabled or None,
    }
    report = run.backend.write_report(run.out_dir / "xla_metrics.txt")
    if report:
        summary["xla_metrics"] = str(report)
    if backends.host_leader():
        (run.out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    log(
        "summary "
        + " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in summary.items() if v is not None)
    )
    return summary


def exit_for(status: str, step: int) -> None:
    """The process exit of a run that did not finish: 130 (SIGINT), 75 (preempted), 1 (diverged)."""
    if status == "interrupted":
        raise SystemExit(130)
    if status == "preempted":
        raise SystemExit(PREEMPTED_EXIT_CODE)
    if status == "diverged":
        raise SystemExit(f"loss is not finite at step {step}; stopping")


def launch_ranks(cfg: TrainConfig) -> int | None:
    """On the native path with several local devices: start one rank per device with the launch
    contract (launch.py) and return the host's exit code. None: this process is the (only) rank;
    with one device per host it joins the other hosts itself, with the contract in its environment."""
    device = backends.resolve(cfg.device)
    if device == "xla" or launch.is_launched_rank():
        return None
    if device == "tpu":
        refuse_without(device)  # one line, before any rank starts
    nproc = cfg.nproc_per_node or launch.local_devices(device)
    env = dict(os.environ)
    if cfg.distributed == "off":  # every host trains alone
        env = {k: v for k, v in env.items() if k not in ("TPU_WORKER_HOSTNAMES", "TPU_WORKER_ID")
               and not k.startswith("MEGASCALE_")}
    dist_lib.check_dcn(cfg.dcn_mesh, dist_lib.slices(env), gloo=True)
    plan = launch.launch_env(env, device, nproc, cfg.coordinator_port, local_tpus())
    if plan.world == 1:
        return None
    # What would stop every rank once they have met, said before any rank waits for the others.
    ici, dcn = resolve_mesh(cfg.ici_mesh, cfg.dcn_mesh, plan.world)
    check_batch_split(cfg.global_batch_size, ici[0] * dcn[0] * ici[1] * dcn[1])
    if nproc == 1:
        os.environ.update({**plan.common, **plan.ranks[0]})
        return None
    # The ranks compose the same config; output_dir's default has a timestamp, so pass the resolved one.
    return launch.run_ranks(plan, [*sys.argv[1:], f"output_dir={cfg.output_dir}"], env)


def _hydra_entry() -> None:
    import hydra
    from omegaconf import DictConfig

    from .config import from_omegaconf

    register_configs()

    # An absolute path: hydra resolves a relative one differently for `python -m`
    # (file-relative) and for the `tpu-train` console script (package-relative).
    @hydra.main(version_base="1.3", config_path=str(CONFIG_DIR), config_name="default")
    def _main(cfg: DictConfig) -> None:
        from omegaconf.errors import OmegaConfBaseException

        try:
            obj = from_omegaconf(cfg)
        except OmegaConfBaseException as e:
            # A broken `${...}` or a value that fails conversion: one line naming the key, no traceback.
            where = getattr(e, "full_key", None)
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            print(f"config error: {where + ': ' if where else ''}{first}", file=sys.stderr, flush=True)
            raise SystemExit(2) from None
        try:
            code = launch_ranks(obj)
            if code is not None:
                raise SystemExit(code)
            train(obj)
        except ConfigError as e:
            print(f"config error: {e}", file=sys.stderr, flush=True)
            raise SystemExit(2) from None  # the message above says it all
        except Exception:
            # The metrics report is most useful when a run fails (recompiles, CPU fallbacks,
            # what ran before the error). train() writes it on every way out it handles itself.
            report = backends.write_failure_report(Path(obj.output_dir))
            if report:
                print(f"xla metrics report: {report}", file=sys.stderr, flush=True)
            raise

    _main()


def main() -> None:
    """Console entry point (`tpu-train`, `python -m tpu_trainer.train`)."""
    if not _OVERRIDES_CHECKED:
        refuse_bad_overrides(sys.argv[1:])
    try:
        _hydra_entry()
    except KeyboardInterrupt:
        # A Stop before the first step (building the model, the first compile): one line, not a traceback.
        # train() handles one during the steps itself.
        print("stopped by SIGINT before training started", file=sys.stderr, flush=True)
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
