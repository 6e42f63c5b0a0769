#!/usr/bin/env python3
"""The run view's profile analysis against a baseline checkout's, in one run: a capture clicked before its
prefetch ended (the user waits for the analysis) and the background prefetch itself, on every real capture
(test/fixtures/profiles/real) and on the two >= 200 MB captures profiles_real_bench.py writes (a TPU and a GPU
capture repeated).

    . scripts/env.sh && node scripts/build.mjs && \
        python3 test/bench/profiles_open_bench.py --base /path/to/baseline/checkout [--reps 5] [--big-reps 3]

The baseline is another checkout of this repository with node_modules (e.g. `git archive <commit> | tar -x` and a
symlink to node_modules); its profile worker and the driver are bundled from it with esbuild, ours from this
checkout (dist/profile-worker.js, as the extension loads it). Each rep runs, in turn, each as its own process:
baseline click, ours click, baseline prefetch, ours prefetch (test/bench/profile-open.ts): the parser made and
readied as the run view does when it opens (the baseline's warm-up; ours: its worker started with the analysis
loaded), then the capture analyzed. Time: the analysis alone (the click's wait); memory: the process's peak RSS
(wait4), which is the parser with its worker thread. Medians; the last columns are ours / baseline.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from profiles_real_bench import BIG_SOURCES, REAL, ROOT, big_capture, measure


def bundle(tree, entry, out):
    esbuild = os.path.join(ROOT, "node_modules", ".bin", "esbuild")
    subprocess.run([esbuild, os.path.join(tree, entry), "--bundle", "--platform=node", "--format=cjs",
                    "--target=node20", "--log-level=warning", f"--outfile={out}"], check=True)
    return out


def run(driver, worker, capture, prefetch):
    argv = ["node", driver, worker, capture] + (["--prefetch"] if prefetch else [])
    r = measure(argv)
    if r["code"] != 0:
        sys.exit(f"{' '.join(argv)} failed: {r['out'][-800:]}")
    line = json.loads(r["out"].strip().splitlines()[-1])
    return {**line, "mb": r["mb"], "wall": r["ms"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True, help="the baseline checkout (with node_modules)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--big-reps", type=int, default=3)
    ap.add_argument("--big-mb", type=int, default=200)
    ap.add_argument("--only", help="substring of the capture names to run")
    ap.add_argument("--json", help="write every sample here")
    ap.add_argument("--base-only", action="store_true", help="measure the baseline alone (before ours exists)")
    args = ap.parse_args()
    worker = os.path.join(ROOT, "dist", "profile-worker.js")
    if not args.base_only and not os.path.exists(os.path.join(ROOT, "dist", "profile.wasm")):
        sys.exit("dist/profile.wasm is missing: run `node scripts/build.mjs`")
    with tempfile.TemporaryDirectory(prefix="tpw-openbench-") as tmp:
        worker_src = "extension/src/core/profiles/worker.ts"
        base_worker = bundle(args.base, worker_src, os.path.join(tmp, "base", "profile-worker.js"))
        # The driver is this checkout's, bundled against the baseline's parser.
        base_driver_src = os.path.join(args.base, "test", "bench", "profile-open.ts")
        with open(os.path.join(ROOT, "test", "bench", "profile-open.ts")) as src, open(base_driver_src, "w") as dst:
            dst.write(src.read())
        sides = {
            "base": (bundle(args.base, "test/bench/profile-open.ts", os.path.join(tmp, "base", "open.js")),
                     base_worker),
            "ours": (bundle(ROOT, "test/bench/profile-open.ts", os.path.join(tmp, "ours", "open.js")), worker),
        }
        captures = [(os.path.join(REAL, f), args.reps) for f in sorted(os.listdir(REAL)) if f.endswith(".xplane.pb")]
        if args.big_reps > 0:
            captures += [(big_capture(tmp, args.big_mb, s)[0], args.big_reps) for s in BIG_SOURCES]
        if args.only:
            captures = [c for c in captures if args.only in os.path.basename(c[0])]
        print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
        if args.base_only:
            print("| capture | MB | click: base ms / MB | prefetch: base ms / MB |\n|---|---|---|---|")
        else:
            print("| capture | MB | click: base ms / MB | **ours** ms / MB | prefetch: base ms / MB | **ours** ms / MB "
                  "| ours ÷ base, click: time | memory | prefetch: time | memory |")
            print("|---|---|---|---|---|---|---|---|---|---|")
        samples = {}
        for capture, reps in captures:
            kinds = ("base-click", "ours-click", "base-prefetch", "ours-prefetch")
            rows: dict[str, list[dict]] = {k: [] for k in kinds}
            for _ in range(reps):
                for mode in ("click", "prefetch"):
                    for side in ("base",) if args.base_only else ("base", "ours"):
                        driver, w = sides[side]
                        rows[f"{side}-{mode}"].append(run(driver, w, capture, mode == "prefetch"))
            rows = {k: v for k, v in rows.items() if v}
            for k, v in rows.items():
                if any((r["events"], r["ops"], r["steps"]) != (v[0]["events"], v[0]["ops"], v[0]["steps"]) for r in v):
                    sys.exit(f"{capture}: {k} gave different summaries between reps")
            samples[os.path.basename(capture)] = rows

            def med(k, f, rows=rows):
                return statistics.median(r[f] for r in rows[k])

            order = ["base-click", "ours-click", "base-prefetch", "ours-prefetch"]
            cells = [f"{med(k, 'ms'):,.1f} / {med(k, 'mb'):,.0f}" for k in order if k in rows]
            ratios = [] if args.base_only else [
                med(f"ours-{m}", f) / med(f"base-{m}", f) for m in ("click", "prefetch") for f in ("ms", "mb")]
            name = os.path.basename(capture).replace(".xplane.pb", "")
            cells += [f"{x:.2f}" for x in ratios]
            print(f"| {name} | {os.path.getsize(capture) / 1e6:.2f} | " + " | ".join(cells) + " |", flush=True)
        print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(samples, f, indent=1)


if __name__ == "__main__":
    main()
