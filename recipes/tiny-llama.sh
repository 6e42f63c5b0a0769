#!/usr/bin/env bash
# tiny-llama: the debug-size Llama (~0.12M parameters) on the bundled text.
#
# The sample recipe of TPU Workbench: "Run on TPU" runs it on every worker of a
# TPU VM, or of the local emulator, whose workers share this machine's CPU.
# Run it by hand from the repository root, with the trainer's venv first on PATH
# (scripts/python-env.sh creates it, scripts/env.sh puts it on PATH):
#   bash scripts/python-env.sh >/dev/null && . scripts/env.sh && bash recipes/tiny-llama.sh
# TPU Workbench appends output_dir=... and profile_dir=... to the command.
#
# device=auto takes the native path, the code a TPU runs: TorchTPU on a TPU VM (one
# process per TPU device), plain PyTorch on CPU. On CPU (the emulator's workers)
# nproc_per_node=2 starts two processes per worker, which shard the model with FSDP2
# over gloo as a TPU host's devices would; every worker of every slice joins one
# torch.distributed world (TPU_WORKER_HOSTNAMES, MEGASCALE_*). On a TPU VM, drop
# nproc_per_node (one process per device) and raise the sizes.

# Read by libtpu only (ignored on CPU): overlap collectives with compute on TPU.
export LIBTPU_INIT_ARGS="--xla_tpu_enable_async_collective_fusion=true --xla_tpu_overlap_compute_collective_tc=true"
export OMP_NUM_THREADS=1
export PYTHONUNBUFFERED=1
# The synced workspace's trainer wins over any installed copy (runs start in the workspace root).
export PYTHONPATH="trainer${PYTHONPATH:+:$PYTHONPATH}"

python3 -m tpu_trainer.train \
    model=tiny-llama \
    device=auto \
    nproc_per_node=2 \
    max_steps=20 \
    global_batch_size=8 \
    block_size=64 \
    logging_steps=5 \
    optimizer.lr=1e-2 \
    scheduler.warmup_steps=10 \
    num_threads=1 \
    "$@"
