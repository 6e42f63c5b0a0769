"""Distributed checkpoints (torch.distributed.checkpoint) that survive preemption.

Layout under `checkpoint.dir` (a local path or any fsspec URL, e.g. gs://bucket/run):

    step_00000100/            one DCP checkpoint: .metadata + *.distcp shards
    step_00000100/.complete   written last; only directories with it are loaded

A checkpoint is visible only when complete. Locally it is written to
`step_N.tmp/` and renamed into place (rename is atomic on one filesystem); object
stores have no atomic rename of a prefix, so there the `.complete` marker, written
after every shard, is the commit point. A process killed mid-save (kill -9, a
preempted VM) leaves a directory without the marker, which `latest()` skips and
the next save removes.

What is saved (see `capture`): model and optimizer state keyed by parameter
name (torch's get_state_dict, so a checkpoint is independent of param order and
of the mesh it was written from), scheduler, data-loader position, RNG state and
step: everything an exactly resumed run needs.

By backend:
  plain torch   DCP's FileSystemWriter / FsspecWriter, without a process group.
                Async: the state is copied to host memory on the training thread
                (the only time training is blocked; the host buffers are reused, so
                after the first save it is one memcpy) and written by a worker thread.
  sharded       the backend's ShardedCheckpointing: planners that write each device's
                shards and reshard on load to whatever mesh the model has now. Native
                (FSDP2 / DTensor over several ranks): DCP's default planners over a gloo
                group of the checkpoint's own, every rank writing its shards of one
                checkpoint and rank 0 committing it, so the checkpoint.dir must be one
                that every host sees (one host, gs://..., a shared filesystem); it loads
                onto another world size or mesh too. XLA SPMD: torch_xla's
                SPMDSavePlanner / SPMDLoadPlanner over a gloo process group. Async saves
                copy the shards to host memory first.
  XLA (1 device) tensors are moved to the host and saved as plain torch.
"""

import json
import re
import shutil
import time
import warnings
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import fsspec
import torch
import torch.distributed.checkpoint as dcp
from torch import nn
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.optim import Optimizer
from torch.optim.lr_scheduler import LRScheduler

from .backends import ShardedCheckpointing
from .config import CheckpointConfig
from .data import Batches

# Without a process group DCP saves as a single process, which is what we want on
# one host; its warning about that (and torch's own TypedStorage deprecation
# inside DCP's writer) would otherwise print at every save.
warnings.filterwarnings("ignore", message="torch.distributed is disabled, unavailable or uninitialized")
warnings.filterwarnings("ignore", message="TypedStorage is deprecated")

MARKER = ".complete"
_STEP_DIR = re.compile(r"^step_(\d{8})$")


def _is_local(url: str) -> bool:
    return "://" not in url or url.startswith("file://")


def _local_path(url: str) -> str:
    return url[len("file://"):] if url.startswith("file://") else url


def _to_host(obj: Any, clone: bool) -> Any:
    """Copy every tensor of a nested state to host memory (a snapshot the training loop may not mutate)."""
    if isinstance(obj, torch.Tensor):
        if obj.device.type != "cpu":
            return obj.detach().cpu()
        return obj.detach().clone() if clone else obj.detach()
    if isinstance(obj, dict):
        return {k: _to_host(v, clone) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_to_host(v, clone) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_to_host(v, clone) for v in obj)
    return obj


def capture(model: nn.Module, optimizer: Optimizer, scheduler: LRScheduler, batches: Batches,
            step: int) -> dict[str, Any]:
    """The full training state as a DCP state dict (tensors are live references, not copies)."""
    msd, osd = get_state_dict(model, optimizer)
    return {
        "model": msd,
        "optim": osd,
        "scheduler": scheduler.state_dict(),
        "data": batches.state_dict(),
        "rng": {"torch": torch.get_rng_state()},
        "step": torch.tensor(step, dtype=torch.int64),
    }


def restore(state: dict[str, Any], model: nn.Module, optimizer: Optimizer, scheduler: LRScheduler,
            batches: Batches) -> int:
    """Apply a loaded state dict (from `capture`'s layout) to the live objects; return the step."""
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
    scheduler.load_state_dict(state["scheduler"])
    batches.load_state_dict(state["data"])
    torch.set_rng_state(state["rng"]["torch"])
    return int(state["step"])


class Checkpointer:
    def __init__(self, cfg: CheckpointConfig, root: str, sharded: ShardedCheckpointing | None = None):
        # sharded: the backend's I/O for parameters sharded over devices (SPMD); None: whole tensors.
        self.cfg, self.root, self.sharded = cfg, root.rstrip("/"), sharded
        self.fs, self.base = fsspec.core.url_to_fs(self.root)
        self.fs.makedirs(self.base, exist_ok=True)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ckpt")
        self._pending: tuple[int, Future] | None = None
        self._staging: dict[str, torch.Tensor] = {}  # host copies for async saves, reused across saves
        self.last_blocked_s = 0.0  # training time the last save() blocked, for logs and the benchmark

    # -- discovery --------------------------------------------------------
    def _dir(self, step: int) -> str:
        return f"{self.base}/step_{step:08d}"

    def url(self, step: int) -> str:
        return f"{self.root}/step_{step:08d}"

    def complete_steps(self) -> list[int]:
        steps = []
        for entry in self.fs.ls(self.base, detail=False):
            m = _STEP_DIR.match(entry.rstrip("/").rsplit("/", 1)[-1])
            if m and self.fs.exists(f"{entry.rstrip('/')}/{MARKER}"):
                steps.append(int(m.group(1)))
        return sorted(steps)

    def latest(self) -> str | None:
        steps = self.complete_steps()
        return self.url(steps[-1]) if steps else None

    # -- save ---------------------------------------------------------------
    def save(self, step: int, state: dict[str, Any], blocking: bool = False) -> None:
        """Write `state` as step `step`. Returns once the training loop may change the live tensors."""
        t0 = time.perf_counter()
        self.wait()  # one save in flight at a time; also commits the previous one
        if self.sharded is None or self.sharded.coordinator:  # one rank tidies a directory all ranks share
            self._remove_incomplete()
        if self.sharded is not None:
            save_planner, _ = self.sharded.planners()
            self.sharded.barrier()  # no rank writes into step_N.tmp before the tidying above is done
            if blocking or not self.cfg.async_save:
                self._write(step, state, save_planner)
                self._prune()
            else:
                # Copy every device's shards to host memory now (the step loop waits only for this
                # transfer), then let the writer thread run DCP with the sharded planner over the host
                # copies while training goes on.
                snapshot = self.sharded.to_host(state)
                self._pending = (step, self._pool.submit(self._write, step, snapshot, save_planner))
        else:
            snapshot = _to_host(state, clone=False) if blocking or not self.cfg.async_save else self._stage(state)
            if blocking or not self.cfg.async_save:
                self._write(step, snapshot, None)
                self._prune()
            else:
                self._pending = (step, self._pool.submit(self._write, step, snapshot, None))
        self.last_blocked_s = time.perf_counter() - t0

    def _stage(self, state: Any, path: str = "") -> Any:
        """Copy `state` into host buffers kept from the previous save (same shapes: no allocation).

        The first save pays for allocating and faulting in host memory as large as the
        state; later ones are a plain copy into warm pages, which is all the training
        loop waits for. Safe to reuse: save() waits for the previous write first."""
        if isinstance(state, torch.Tensor):
            buf = self._staging.get(path)
            if buf is None or buf.shape != state.shape or buf.dtype != state.dtype:
                buf = self._staging[path] = torch.empty(state.shape, dtype=state.dtype)
            buf.copy_(state.detach())
            return buf
        if isinstance(state, dict):
            return {k: self._stage(v, f"{path}/{k}") for k, v in state.items()}
        if isinstance(state, (list, tuple)):
            return type(state)(self._stage(v, f"{path}/{i}") for i, v in enumerate(state))
        return state

    def _write(self, step: int, state: dict[str, Any], planner: Any) -> int:
        final = self._dir(step)
        group = self.sharded.process_group() if self.sharded is not None else None
        commits = self.sharded is None or self.sharded.coordinator
        if _is_local(self.root):
            tmp = _local_path(final) + ".tmp"
            dcp.save(state, storage_writer=dcp.FileSystemWriter(tmp), planner=planner, process_group=group,
                     no_dist=planner is None)
            # DCP returns on every rank once rank 0 has written the metadata, i.e. after every rank's shards.
            if commits:
                self._mark(tmp, step)
                shutil.rmtree(_local_path(final), ignore_errors=True)
                Path(tmp).rename(_local_path(final))
        else:
            from torch.distributed.checkpoint._fsspec_filesystem import FsspecWriter

            dcp.save(state, storage_writer=FsspecWriter(f"{self.root}/step_{step:08d}"), planner=planner,
                     process_group=group, no_dist=planner is None)
            if commits:
                self._mark(final, step)
        return step

    def _mark(self, directory: str, step: int) -> None:
        fs = fsspec.filesystem("file") if _is_local(self.root) else self.fs
        with fs.open(f"{directory}/{MARKER}", "w") as f:
            f.write(json.dumps({"step": step, "time": time.time()}) + "\n")

    def poll(self) -> None:
        """Commit a finished async save (prune old checkpoints); cheap, call once per step."""
        if self._pending and self._pending[1].done():
            self.wait()

    def wait(self) -> None:
        """Block until the in-flight save is on storage; re-raise its error if it failed."""
        if self._pending is None:
            return
        _, fut = self._pending
        self._pending = None
        fut.result()
        self._prune()

    def _prune(self) -> None:
        if self.sharded is not None and not self.sharded.coordinator:
            return
        for step in self.complete_steps()[: -self.cfg.keep]:
            self.fs.rm(self._dir(step), recursive=True)

    def _remove_incomplete(self) -> None:
        # A step's leftovers (a killed save's step_N.tmp, or a marker-less step_N on an object store).
        for entry in self.fs.ls(self.base, detail=False):
            name = entry.rstrip("/").rsplit("/", 1)[-1]
            if (name.endswith(".tmp") and name.startswith("step_")) or (
                _STEP_DIR.match(name) and not self.fs.exists(f"{entry.rstrip('/')}/{MARKER}")
            ):
                self.fs.rm(entry, recursive=True)

    # -- load -----------------------------------------------------------------
    def load(self, url: str, state: dict[str, Any]) -> dict[str, Any]:
        """Load checkpoint `url` into `state` (capture()'s layout of the live objects) and return it.

        Plain torch loads into host copies (then set_state_dict copies onto the
        model's device); SPMD loads straight into the sharded device tensors, each
        device reading only the pieces of its shard (reshard on load)."""
        if self.sharded is not None:
            _, load_planner = self.sharded.planners()
            reader = dcp.FileSystemReader(_local_path(url)) if _is_local(url) else _fsspec_reader(url)
            dcp.load(state, storage_reader=reader, planner=load_planner, process_group=self.sharded.process_group())
            return state
        host = _to_host(state, clone=True)
        reader = dcp.FileSystemReader(_local_path(url)) if _is_local(url) else _fsspec_reader(url)
        # no_dist: without SPMD every process holds a full replica and writes/reads its own copy
        # (gloo data parallelism runs its all-reduces on the main thread while a save may be
        # in flight on the writer thread; a collective save would interleave with them).
        dcp.load(host, storage_reader=reader, no_dist=True)
        return host

    def close(self) -> None:
        self.wait()
        self._pool.shutdown()


def _fsspec_reader(url: str) -> dcp.StorageReader:
    from torch.distributed.checkpoint._fsspec_filesystem import FsspecReader

    return FsspecReader(url)
