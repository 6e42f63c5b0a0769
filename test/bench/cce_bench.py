"""Cut cross-entropy vs the naive loss: peak memory and time of forward + backward.

    python test/bench/cce_bench.py                       # 8192 tokens, hidden 2048, vocab 128256 and 256000
    python test/bench/cce_bench.py --tokens 1024 --vocabs 32000 --json /tmp/cce.json   # quick
    python test/bench/cce_bench.py --device cuda --repeats 5    # on a GPU: allocator peak, synchronised time

The peer is `logits = h @ W.T; F.cross_entropy(logits, y)` (fp32), measured in the
same invocation. Every measurement runs in a fresh child process so one loss's
allocations cannot hide inside another's high-water mark.

Memory is the process's peak resident set size (getrusage ru_maxrss, i.e. what
the OS had to provide) minus its RSS just before the loss runs, with the inputs
h [tokens, hidden], W [vocab, hidden] and targets already allocated and touched.
It therefore includes the gradients dh and dW that both losses must produce
(dW alone is vocab*hidden*4 bytes) and is reported twice: `peak_mib` (all of it)
and `work_mib` (peak minus the dh + dW output bytes: the loss's own working memory).
Time is wall time of forward + backward, best of --repeats after one warm-up
(the warm-up is skipped when --repeats is 1 and the shape is large).
Each child runs under an address-space limit (--mem-limit-gib, default 16) so a
naive loss that cannot fit fails with an allocation error, reported as "no fit",
instead of waking the OOM killer on a shared machine.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[2] / "trainer"))


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _loss_fn(impl: str):
    """"cce", "cce:N" (chunks of N logits), or "naive"."""
    import functools

    from tpu_trainer.losses import cut_cross_entropy, naive_linear_cross_entropy

    if impl == "naive":
        return naive_linear_cross_entropy
    _, _, elems = impl.partition(":")
    return functools.partial(cut_cross_entropy, chunk_elems=int(elems)) if elems else cut_cross_entropy


def _inputs(tokens: int, hidden: int, vocab: int, dev):
    """h [tokens, hidden], W [vocab, hidden] (both requiring grad) and targets, seeded, on `dev`."""
    import torch

    g = torch.Generator(device=dev).manual_seed(0)
    h = torch.randn(tokens, hidden, generator=g, device=dev).requires_grad_(True)
    w = (torch.randn(vocab, hidden, generator=g, device=dev) * 0.02).requires_grad_(True)
    y = torch.randint(0, vocab, (tokens,), generator=g, device=dev)
    return h, w, y


def child(impl: str, tokens: int, hidden: int, vocab: int, repeats: int, threads: int, limit_gib: float,
          device: str = "cpu") -> dict:
    if device == "cuda":
        return child_cuda(impl, tokens, hidden, vocab, repeats)
    if limit_gib > 0:
        lim = int(limit_gib * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    import torch

    if threads:
        torch.set_num_threads(threads)
    fn = _loss_fn(impl)
    h, w, y = _inputs(tokens, hidden, vocab, torch.device("cpu"))
    base = _rss()
    times = []
    runs = repeats + (1 if repeats > 1 else 0)
    for i in range(runs):
        h.grad = w.grad = None
        t0 = time.perf_counter()
        loss = fn(h, w, y)
        loss.backward()
        dt = time.perf_counter() - t0
        if runs == 1 or i > 0:
            times.append(dt)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    grads = (h.numel() + w.numel()) * 4
    return {"impl": impl, "tokens": tokens, "hidden": hidden, "vocab": vocab, "loss": loss.item(),
            "time_s": min(times), "peak_mib": (peak - base) / 2**20, "work_mib": (peak - base - grads) / 2**20,
            "threads": torch.get_num_threads()}


def child_cuda(impl: str, tokens: int, hidden: int, vocab: int, repeats: int) -> dict:
    """The same measurement on a CUDA device: memory from the caching allocator's high-water mark
    (torch.cuda.max_memory_allocated, reset once the inputs exist), time between synchronisations."""
    import torch

    fn = _loss_fn(impl)
    dev = torch.device("cuda")
    h, w, y = _inputs(tokens, hidden, vocab, dev)
    torch.cuda.synchronize()
    times, peaks = [], []
    base = torch.cuda.memory_allocated()
    for i in range(repeats + 1):  # the first is a warm-up (kernel selection, allocator growth)
        h.grad = w.grad = None
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        loss = fn(h, w, y)
        loss.backward()
        torch.cuda.synchronize()
        if i > 0:
            times.append(time.perf_counter() - t0)
            peaks.append(torch.cuda.max_memory_allocated() - base)
    grads = (h.numel() + w.numel()) * 4
    peak = max(peaks)
    return {"impl": impl, "tokens": tokens, "hidden": hidden, "vocab": vocab, "loss": loss.item(),
            "time_s": min(times), "time_median_s": sorted(times)[len(times) // 2], "peak_mib": peak / 2**20,
            "work_mib": (peak - grads) / 2**20, "device": torch.cuda.get_device_name(),
            "tf32": torch.backends.cuda.matmul.allow_tf32}


def measure(impl, tokens, hidden, vocab, repeats, threads, limit_gib, device="cpu") -> dict:
    cmd = [sys.executable, str(HERE), "--child", impl, "--tokens", str(tokens), "--hidden", str(hidden),
           "--vocabs", str(vocab), "--repeats", str(repeats), "--threads", str(threads),
           "--mem-limit-gib", str(limit_gib), "--device", device]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        if p.returncode in (-9, 137):
            status = "oom"
        elif "alloc" in p.stderr.lower() or "memory" in p.stderr.lower():
            status = f"no fit in {limit_gib} GiB"
        else:
            status = f"exit {p.returncode}"
        return {"impl": impl, "tokens": tokens, "hidden": hidden, "vocab": vocab, "error": status,
                "stderr": p.stderr[-500:]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--vocabs", default="128256,256000")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--mem-limit-gib", type=float, default=16.0)
    ap.add_argument("--chunk-elems", type=int, default=0, help="logits per chunk for ours (0: its default)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--json")
    ap.add_argument("--child")
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child, a.tokens, a.hidden, int(a.vocabs), a.repeats, a.threads, a.mem_limit_gib,
                               a.device)))
        return
    rows = []
    print(f"{'vocab':>7} {'tokens':>6} {'naive s':>8} {'cce s':>7} {'time x':>6} {'naive MiB':>10} {'cce MiB':>8} "
          f"{'mem /':>6} {'naive work':>10} {'cce work':>8} {'work /':>7}", flush=True)
    for vocab in (int(v) for v in a.vocabs.split(",")):
        cce_impl = f"cce:{a.chunk_elems}" if a.chunk_elems else "cce"
        cce = measure(cce_impl, a.tokens, a.hidden, vocab, a.repeats, a.threads, a.mem_limit_gib, a.device)
        naive = measure("naive", a.tokens, a.hidden, vocab, a.repeats, a.threads, a.mem_limit_gib, a.device)
        row = {"vocab": vocab, "tokens": a.tokens, "hidden": a.hidden, "cce": cce, "naive": naive}
        if "error" not in cce and "error" not in naive:
            row.update(time_ratio=cce["time_s"] / naive["time_s"], mem_ratio=naive["peak_mib"] / cce["peak_mib"],
                       work_ratio=naive["work_mib"] / max(cce["work_mib"], 1e-9),
                       loss_diff=abs(cce["loss"] - naive["loss"]))
            print(f"{vocab:>7} {a.tokens:>6} {naive['time_s']:>8.2f} {cce['time_s']:>7.2f} {row['time_ratio']:>6.2f} "
                  f"{naive['peak_mib']:>10.0f} {cce['peak_mib']:>8.0f} {row['mem_ratio']:>6.1f} "
                  f"{naive['work_mib']:>10.0f} {cce['work_mib']:>8.0f} {row['work_ratio']:>7.1f}", flush=True)
        else:
            print(f"{vocab:>7} {a.tokens:>6} naive: {naive.get('error', 'ok')} cce: {cce.get('error', 'ok')} "
                  f"{json.dumps({k: v for k, v in row.items() if k != 'vocab'})[:400]}", flush=True)
        rows.append(row)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
