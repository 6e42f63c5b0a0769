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
# It runs torch_xla on CPU (PJRT_DEVICE=CPU), so the demo exercises the same XLA
# code path as a TPU; on a real TPU VM set PJRT_DEVICE=TPU and raise the sizes.

export PJRT_DEVICE=CPU
# XLA:CPU: run each op on one thread; several workers already share the cores.
export XLA_FLAGS="--xla_cpu_multi_thread_eigen=false --xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
# Read by libtpu only (ignored on CPU): overlap collectives with compute on TPU.
export LIBTPU_INIT_ARGS="--xla_tpu_enable_async_collective_fusion=true --xla_tpu_overlap_compute_collective_tc=true"
export OMP_NUM_THREADS=1
export PYTHONUNBUFFERED=1
# The synced workspace's trainer wins over any installed copy (runs start in the workspace root).
export PYTHONPATH="trainer${PYTHONPATH:+:$PYTHONPATH}"

python3 -m tpu_trainer.train \
    model=tiny-llama \
    max_steps=20 \
    global_batch_size=8 \
    block_size=64 \
    logging_steps=5 \
    optimizer.lr=1e-2 \
    scheduler.warmup_steps=10 \
    num_threads=1 \
    "$@"
