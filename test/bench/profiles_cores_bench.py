#!/usr/bin/env python3
"""`tpw profile` against xprof-rs's server (cold) with both held to the same N cores, for N in --cores.

profiles_real_bench.py compares every tool on this machine's cores; this one asks how the two that parse in
parallel scale with cores, on the real captures and on two >= 200 MB captures written at run time by repeating a
real one (the TPU v6e-4 capture and the JAX TE fused-attention GPU capture, as profiles_real_bench.py does).

    . scripts/env.sh && node scripts/build.mjs && python3 test/bench/profiles_cores_bench.py --cores 2,4,16

Each command runs pinned with `taskset -c 0-(N-1)` (node's availableParallelism and xprof-rs's thread pool both
read the affinity mask), in turn, rep by rep; wall time and peak RSS come from wait4. Ours: `node bin/tpw.js
profile FILE --json --top 0` (node's start included): the node CLI, which runs the extension's analysis, splitting
big captures over worker threads; bin/tpw runs the native one (profiles_native_bench.py), node where that is not built.
xprof-rs: the server started on a log dir holding the capture, one hlo_stats request, stopped (its README's
"server, cold"). `node -e 0` is measured too: node's own start.
"""
import argparse
import json
import os
import sys
import tempfile

from profiles_real_bench import BIG_SOURCES, REAL, ROOT, big_capture, measure, xprof_rs_server
from profiles_real_bench import med as median


def pinned(cores, argv):
    return ["taskset", "-c", f"0-{cores - 1}", *argv]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cores", default="2", help="comma-separated core counts (default 2)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--big-reps", type=int, default=3)
    ap.add_argument("--big-mb", type=int, default=200, help="size of the repeated captures in MiB (0: none)")
    ap.add_argument("--node", default="node")
    ap.add_argument("--xprof-rs", default="xprof-rs")
    ap.add_argument("--json", help="write every sample here")
    args = ap.parse_args()
    cores = [int(c) for c in args.cores.split(",")]
    tpw = os.path.join(ROOT, "bin", "tpw.js")
    with tempfile.TemporaryDirectory() as tmp:
        names = sorted(f for f in os.listdir(REAL) if f.endswith(".xplane.pb"))
        captures = [(os.path.join(REAL, f), f.replace(".xplane.pb", "")) for f in names]
        if args.big_mb:
            for source in BIG_SOURCES:
                path, n, _ = big_capture(tmp, args.big_mb, source)
                captures.append((path, f"{source} x{n}"))
        samples = {}
        print("| cores | capture | MB | ours ms / MB | xprof-rs server ms / MB | xprof-rs ÷ ours |")
        print("|---|---|---|---|---|---|")
        for n in cores:
            start = [measure(pinned(n, [args.node, "-e", "0"])) for _ in range(args.reps)]
            samples[(n, "node -e 0")] = {"node": start}
            for path, name in captures:
                big = os.path.getsize(path) > 50 << 20
                rows: dict[str, list[dict]] = {"ours": [], "xprof-rs": []}
                for _ in range(args.big_reps if big else args.reps):
                    rows["ours"].append(measure(pinned(n, [args.node, tpw, "profile", path, "--json", "--top", "0"])))
                    server = xprof_rs_server(path, tempfile.mkdtemp(dir=tmp), args.xprof_rs, pinned(n, []))
                    rows["xprof-rs"].append(server)
                bad = [r["out"] for r in rows["ours"] if r["code"] != 0]
                if bad:
                    sys.exit(f"tpw profile failed on {name}: {bad[0]}")
                samples[(n, name)] = rows
                size = os.path.getsize(path) / 1e6
                ours, theirs = rows["ours"], rows["xprof-rs"]
                note = "" if all(r["code"] == 0 for r in theirs) else f" (xprof-rs: {theirs[0]['out'][:40]})"
                print(f"| {n} | {name} | {size:.2f} | {median(ours, 'ms'):,.0f} / {median(ours, 'mb'):,.0f} | "
                      f"{median(theirs, 'ms'):,.0f} / {median(theirs, 'mb'):,.0f}{note} | "
                      f"{median(theirs, 'ms') / median(ours, 'ms'):.2f} |", flush=True)
            print(f"| {n} | node -e 0 | | {median(start, 'ms'):.0f} / {median(start, 'mb'):.0f} | | |", flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump([{"cores": k[0], "capture": k[1], **v} for k, v in samples.items()], f, indent=1)


if __name__ == "__main__":
    main()
