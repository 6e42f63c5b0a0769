#!/usr/bin/env python3
"""`tpw profile` as users run it (bin/tpw: the native executable, dist/tpw-profile, built by cargo from
native/profile) against the same analysis as WebAssembly (`node bin/tpw.js profile`, as a .vsix runs it) and
against xprof-rs's server (cold), on the real captures and on captures of
growing size written at run time by repeating a real one (the TPU v6e-4 capture and the JAX TE fused-attention GPU
capture, as profiles_real_bench.py does).

    . scripts/env.sh && node scripts/build.mjs && python3 test/bench/profiles_native_bench.py [--reps 5] [--big-reps 3]

Each rep runs every command once, in turn, as its own process; wall time and peak RSS from wait4:
- bin/tpw: `bin/tpw profile FILE --json --top 0` (the shell launcher and the native executable's start included),
  with TPW_NODE naming no file, so that a capture handed to node would fail the bench rather than be timed as ours.
- node: `node bin/tpw.js profile FILE --json --top 0` (node's start included): dist/profile.wasm.
- xprof-rs: its server started on a log dir holding the capture, one hlo_stats request, stopped.
Both builds' outputs must be the same bytes (xprof-rs aside).
"""
import argparse
import json
import os
import sys
import tempfile

from profiles_real_bench import BIG_SOURCES, REAL, ROOT, big_capture, measure, xprof_rs_server
from profiles_real_bench import med as median

TPW = os.path.join(ROOT, "bin", "tpw")
NODE_CLI = os.path.join(ROOT, "bin", "tpw.js")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--big-reps", type=int, default=3)
    ap.add_argument("--sizes", default="8,32,60,100,200", help="MiB of the repeated captures")
    ap.add_argument("--xprof-rs", default="xprof-rs")
    ap.add_argument("--json", help="write every sample here")
    args = ap.parse_args()
    if not os.access(os.path.join(ROOT, "dist", "tpw-profile"), os.X_OK):
        sys.exit("dist/tpw-profile is missing: run `node scripts/build.mjs` (it needs cargo)")
    no_node = dict(os.environ, TPW_NODE=os.path.join(ROOT, "no-such-node"))
    with tempfile.TemporaryDirectory() as tmp:
        names = sorted(f for f in os.listdir(REAL) if f.endswith(".xplane.pb"))
        captures = [(os.path.join(REAL, f), f.replace(".xplane.pb", "")) for f in names]
        for mb in (int(s) for s in args.sizes.split(",")):
            for source in BIG_SOURCES:
                path, n, _ = big_capture(tmp, mb, source)
                captures.append((path, f"{source} x{n}"))
        starts = {
            "node -e 0": [measure(["node", "-e", "0"]) for _ in range(args.reps)],
            "bin/tpw profile MISSING (native start and error)": [
                measure([TPW, "profile", os.path.join(tmp, "missing.xplane.pb")]) for _ in range(args.reps)],
        }
        print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
        print("| capture | MB | **bin/tpw** ms / MB | node ms / MB | xprof-rs server ms / MB "
              "| bin/tpw ÷ xprof-rs: time | memory |")
        print("|---|---|---|---|---|---|---|")
        samples = {}
        for path, name in captures:
            big = os.path.getsize(path) > 50 << 20
            rows: dict[str, list[dict]] = {"tpw": [], "node": [], "xprof-rs": []}
            for _ in range(args.big_reps if big else args.reps):
                argv = ["profile", path, "--json", "--top", "0"]
                rows["tpw"].append(measure([TPW, *argv], env=no_node))
                rows["node"].append(measure(["node", NODE_CLI, *argv]))
                rows["xprof-rs"].append(xprof_rs_server(path, tempfile.mkdtemp(dir=tmp), args.xprof_rs))
            want = rows["node"][0]
            if want["code"] != 0:
                sys.exit(f"node bin/tpw.js profile failed on {name}: {want['out'][-300:]}")
            for k in ("tpw", "node"):
                for r in rows[k]:
                    if r["code"] != 0 or r["out"] != want["out"]:
                        sys.exit(f"{k} on {name}: exit {r['code']}, output differs from node's: {r['out'][-300:]}")
            samples[name] = rows
            theirs = rows["xprof-rs"]
            note = "" if all(r["code"] == 0 for r in theirs) else f" (fails: {theirs[0]['out'][:30]})"
            cells = [f"{median(rows[k], 'ms'):,.1f} / {median(rows[k], 'mb'):,.0f}" for k in ("tpw", "node")]
            ratio = median(rows["tpw"], "ms") / median(theirs, "ms")
            mem = median(rows["tpw"], "mb") / median(theirs, "mb")
            print(f"| {name} | {os.path.getsize(path) / 1e6:.2f} | " + " | ".join(cells) +
                  f" | {median(theirs, 'ms'):,.1f} / {median(theirs, 'mb'):,.0f}{note} | {ratio:.2f} | {mem:.2f} |",
                  flush=True)
        for label, runs in starts.items():
            print(f"| {label} | | {median(runs, 'ms'):.1f} / {median(runs, 'mb'):.0f} | | | | |")
        print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({k: {c: [{"ms": r["ms"], "mb": r["mb"]} for r in v] for c, v in rows.items()}
                           for k, rows in samples.items()}, f, indent=1)


if __name__ == "__main__":
    main()
